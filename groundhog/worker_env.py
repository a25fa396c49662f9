"""The environment a worker process needs: proxy with tape:branch:capability credentials, trusted
CA, seed.

A worker that is missing any one of these either bypasses the proxy (its calls go live,
unrecorded), fails TLS against the proxy's certificates, or draws shim noise from the wrong
world. Building them in one place keeps `branch.env()`, `groundhog env` and `groundhog run`
identical.
"""

from __future__ import annotations

import hashlib
import ipaddress
import json
import os
import tempfile
from dataclasses import dataclass
from pathlib import Path
from typing import Any
from urllib.parse import quote, urlsplit

DEFAULT_PROXY_URL = "http://127.0.0.1:8080"
PROXY_URL_ENV = "GROUNDHOG_PROXY_URL"
CA_FILE_ENV = "GROUNDHOG_CA_FILE"
NO_PROXY_ENV = "GROUNDHOG_NO_PROXY"
# Where a trainer names its policy: the OpenAI SDK's own variable.
POLICY_URL_ENVS = ("OPENAI_BASE_URL",)
# Model endpoints that are part of the world (a judge, a search summariser): kept on the tape.
RECORD_URLS_ENV = "GROUNDHOG_RECORD_URLS"
CAPABILITY_ENV = "GROUNDHOG_CAPABILITY"


def proxy_url_from_env(url: str | None = None) -> str:
    return (url or os.environ.get(PROXY_URL_ENV) or DEFAULT_PROXY_URL).rstrip("/")


def proxy_url_with_credentials(
    proxy_url: str, tape: str, branch: str, capability: str | None = None
) -> str:
    """`http://TAPE:BRANCH:CAPABILITY@host:port` (or `TAPE:BRANCH` without a capability), each
    URL-encoded (a branch path contains '/').

    Every HTTP client splits a URL's userinfo at its first ':' and sends Basic credentials
    `user:password`, so the proxy receives `TAPE:BRANCH:CAPABILITY` (proxy/capabilities.py); a
    capability is hex, safe unencoded.
    """
    parts = urlsplit(proxy_url)
    if parts.scheme not in ("http", "https") or not parts.hostname:
        raise ValueError(f"proxy URL {proxy_url!r} must look like http://host:port")
    host = f"[{parts.hostname}]" if ":" in parts.hostname else parts.hostname
    port = f":{parts.port}" if parts.port else ""
    user = quote(tape, safe="")
    password = quote(branch, safe="")
    if capability:
        password += ":" + quote(capability, safe="")
    return f"{parts.scheme}://{user}:{password}@{host}{port}"


def own_addresses(*urls: str) -> list[str]:
    """NO_PROXY entries for Groundhog's own services.

    `host:port`, which Python's urllib, requests, httpx and aiohttp honour; a bare host name only
    when it is not an IP literal or localhost, because curl ignores ports in NO_PROXY and a bare
    loopback entry would send a world on 127.0.0.1 live, unrecorded.
    """
    entries: list[str] = []
    for url in urls:
        parts = urlsplit(url)
        if not parts.hostname:
            continue
        host = f"[{parts.hostname}]" if ":" in parts.hostname else parts.hostname
        port = parts.port or (443 if parts.scheme == "https" else 80)
        entries.append(f"{host}:{port}")
        if not _is_ip_or_localhost(parts.hostname):
            entries.append(parts.hostname)
    return entries


def _origin(url: str) -> tuple[str, int] | None:
    parts = urlsplit(url.strip())
    if not parts.hostname:
        return None
    return parts.hostname.lower(), parts.port or (443 if parts.scheme == "https" else 80)


def policy_addresses(urls: list[str] | None = None, record: list[str] | None = None) -> list[str]:
    """NO_PROXY entries for the policy: `urls` and OPENAI_BASE_URL, minus the model endpoints
    the user keeps on the tape (`record`, else GROUNDHOG_RECORD_URLS, comma-separated URLs).

    The policy is not the world: its turns recorded would be written to the tape as writes (a
    POST each), refetched for nobody and refused once the tape is sealed.
    """
    named = [*(urls or []), *(os.environ.get(name, "") for name in POLICY_URL_ENVS)]
    kept = record if record is not None else os.environ.get(RECORD_URLS_ENV, "").split(",")
    recorded = {origin for origin in map(_origin, kept) if origin is not None}
    policy = [url for url in named if url.strip() and _origin(url) not in recorded]
    return own_addresses(*policy)


def _is_ip_or_localhost(host: str) -> bool:
    if host == "localhost":
        return True
    try:
        ipaddress.ip_address(host)
    except ValueError:
        return False
    return True


@dataclass(frozen=True)
class CaFiles:
    """The proxy's CA alone (for NODE_EXTRA_CA_CERTS) and a bundle of it plus public roots."""

    ca_file: Path
    bundle_file: Path


def _cache_dir(resolver_url: str) -> Path:
    base = Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache")
    label = hashlib.sha256(resolver_url.encode()).hexdigest()[:12]
    return base / "groundhog" / f"ca-{label}"


def _write_if_changed(path: Path, data: bytes) -> None:
    if path.exists() and path.read_bytes() == data:
        return
    path.parent.mkdir(parents=True, exist_ok=True)
    # Written beside and renamed, so a worker starting now never reads half a certificate.
    with tempfile.NamedTemporaryFile(dir=path.parent, delete=False) as handle:
        handle.write(data)
    Path(handle.name).replace(path)


def public_roots() -> bytes:
    """The public roots requests uses, so hosts in NO_PROXY still verify against a bundle."""
    try:
        import certifi
    except ImportError:  # pragma: no cover - requests depends on certifi
        return b""
    return Path(certifi.where()).read_bytes()


def store_ca(ca_pem: bytes, resolver_url: str, ca_file: Path | None = None) -> CaFiles:
    """Write the proxy CA (and the combined bundle) where workers can read them."""
    if b"BEGIN CERTIFICATE" not in ca_pem:
        raise ValueError("the resolver's /v1/ca.pem did not contain a PEM certificate")
    target = ca_file or _cache_dir(resolver_url) / "ca.pem"
    _write_if_changed(target, ca_pem)
    bundle = target.with_name(target.stem + "-bundle.pem")
    _write_if_changed(bundle, public_roots().rstrip(b"\n") + b"\n" + ca_pem)
    return CaFiles(target.resolve(), bundle.resolve())


def worker_env(
    *,
    tape: str,
    branch: str,
    world_seed: int,
    resolver_url: str,
    proxy_url: str,
    ca: CaFiles,
    no_proxy: list[str] | None = None,
    model_urls: list[str] | None = None,
    shim_counters: dict[str, Any] | None = None,
    capability: str | None = None,
) -> dict[str, str]:
    """The exports for one worker process of `tape` at `branch` (presenting `capability`).

    `model_urls` (and OPENAI_BASE_URL) are the policy's endpoints: they bypass the proxy.
    """
    proxy = proxy_url_with_credentials(proxy_url, tape, branch, capability)
    bypass = list(no_proxy or [])
    bypass += [host for host in os.environ.get(NO_PROXY_ENV, "").split(",") if host.strip()]
    bypass += policy_addresses(model_urls)
    # Groundhog's own services are never the world: admin calls must not land on the tape.
    bypass += own_addresses(resolver_url, proxy_url)
    # Always set, even empty: an inherited NO_PROXY would silently send those hosts live.
    no_proxy_value = ",".join(dict.fromkeys(host.strip() for host in bypass))
    env = {
        "HTTP_PROXY": proxy,
        "HTTPS_PROXY": proxy,
        "http_proxy": proxy,  # curl reads only the lower-case http_proxy
        "https_proxy": proxy,
        "NO_PROXY": no_proxy_value,
        "no_proxy": no_proxy_value,
        "SSL_CERT_FILE": str(ca.bundle_file),
        "REQUESTS_CA_BUNDLE": str(ca.bundle_file),
        "CURL_CA_BUNDLE": str(ca.bundle_file),
        "NODE_EXTRA_CA_CERTS": str(ca.ca_file),
        "GROUNDHOG_CA_FILE": str(ca.ca_file),
        "GROUNDHOG_TAPE": tape,
        "GROUNDHOG_BRANCH": branch,
        "GROUNDHOG_WORLD_SEED": str(world_seed),
        "GROUNDHOG_RESOLVER_URL": resolver_url,
        "GROUNDHOG_PROXY_URL": proxy_url,
    }
    if capability:
        # For a sidecar pinned to this branch (`groundhog proxy --tape T --branch B`).
        env[CAPABILITY_ENV] = capability
    if shim_counters:
        env["GROUNDHOG_SHIM_COUNTERS"] = json.dumps(shim_counters, sort_keys=True)
    return env


def shell_exports(env: dict[str, str]) -> str:
    """`export NAME='value'` lines a POSIX shell can `eval`."""
    lines = []
    for name, value in env.items():
        quoted = "'" + value.replace("'", "'\"'\"'") + "'"
        lines.append(f"export {name}={quoted}")
    return "\n".join(lines)
