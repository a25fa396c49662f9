// A Node client through an HTTP proxy with only built-in modules (no npm needed):
// plain HTTP uses absolute-form requests; HTTPS opens a CONNECT tunnel and speaks TLS inside.
// Usage: node client.js PROXY_URL TARGET_URL CA_FILE HEADERS_JSON -> prints {status, headers, body}
"use strict";
const fs = require("fs");
const http = require("http");
const tls = require("tls");

const [proxyUrl, targetUrl, caFile, headersJson] = process.argv.slice(2);
const proxy = new URL(proxyUrl);
const target = new URL(targetUrl);
const extraHeaders = JSON.parse(headersJson || "{}");
const proxyAuth = proxy.username
  ? { "Proxy-Authorization": "Basic " + Buffer.from(
      decodeURIComponent(proxy.username) + ":" + decodeURIComponent(proxy.password)).toString("base64") }
  : {};

function finish(res) {
  const chunks = [];
  res.on("data", (c) => chunks.push(c));
  res.on("end", () => {
    process.stdout.write(JSON.stringify({
      status: res.statusCode, headers: res.headers, body: Buffer.concat(chunks).toString("latin1"),
    }));
  });
}

function fail(err) { console.error(String(err)); process.exit(2); }

if (target.protocol === "http:") {
  const req = http.request({
    host: proxy.hostname, port: proxy.port, method: "GET", path: target.href,
    headers: { Host: target.host, ...proxyAuth, ...extraHeaders },
  }, finish);
  req.on("error", fail);
  req.end();
} else {
  const connect = http.request({
    host: proxy.hostname, port: proxy.port, method: "CONNECT", path: target.host,
    headers: { Host: target.host, ...proxyAuth },
  });
  connect.on("connect", (res, socket) => {
    if (res.statusCode !== 200) fail("CONNECT answered " + res.statusCode);
    const secure = tls.connect({
      socket, servername: target.hostname, ca: fs.readFileSync(caFile), ALPNProtocols: ["http/1.1"],
    });
    // http (not https): the TLS socket from the tunnel is handed over ready-made.
    const req = http.request({
      host: target.hostname, port: target.port, method: "GET", path: target.pathname + target.search,
      headers: extraHeaders, createConnection: () => secure,
    }, finish);
    req.on("error", fail);
    req.end();
  });
  connect.on("error", fail);
  connect.end();
}
