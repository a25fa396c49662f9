"""How the proxy reaches the world: which CAs it trusts upstream and which proxy it goes through.

Internal tool servers and staging APIs are signed by private CAs, and training clusters often
reach the internet only through an egress proxy. mitmproxy verifies upstreams against one CA
file (`ssl_verify_upstream_trusted_ca`, certifi by default) and reaches an egress proxy through
its `upstream:URL` mode; this module turns the user's flags (`--upstream-ca`, the standard
`SSL_CERT_FILE` / `REQUESTS_CA_BUNDLE` variables, `--upstream-proxy`) into those options, and
into the same settings for the addon's own upstream client, so both paths reach the same world.
"""

from __future__ import annotations

import hashlib
import logging
import os
import ssl
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from urllib.parse import quote, unquote, urlsplit

import certifi
from mitmproxy import http
from mitmproxy.addons import upstream_auth

from proxy.errors import ProxyError
from proxy.fail_closed import fail_closed_hooks

log = logging.getLogger(__name__)

# Read when set in the proxy's own environment; their certificates join certifi's.
CA_ENVIRONMENT = ("SSL_CERT_FILE", "REQUESTS_CA_BUNDLE")
UPSTREAM_MODE_PREFIX = "upstream:"
# The Groundhog addon's flow metadata key: present once it has decided a flow.
DECIDED_META = "groundhog"
PEM_CERTIFICATE = b"-----BEGIN CERTIFICATE-----"
INSECURE_WARNING = (
    "UPSTREAM TLS VERIFICATION IS OFF (--insecure-upstream): the proxy accepts any certificate "
    "from the world, so anyone on the path can forge answers that then get recorded and shared. "
    "Use --upstream-ca FILE for a private CA instead."
)


class EgressConfigError(ProxyError, ValueError):
    """A CA file or upstream proxy URL the proxy cannot use; the message names it and why."""


def _certificates(path: Path) -> bytes:
    """The PEM text of `path`, checked to load as CA certificates the way TLS will load it."""
    try:
        text = path.read_bytes()
    except OSError as error:
        raise EgressConfigError(f"cannot read CA file {str(path)!r}: {error.strerror}") from error
    if PEM_CERTIFICATE not in text:
        raise EgressConfigError(
            f"CA file {str(path)!r} holds no PEM certificate ({PEM_CERTIFICATE.decode()})"
        )
    try:
        ssl.create_default_context().load_verify_locations(cadata=text.decode("ascii"))
    except (ssl.SSLError, UnicodeDecodeError, ValueError) as error:
        raise EgressConfigError(f"CA file {str(path)!r} is not a usable PEM CA: {error}") from error
    return text


def trusted_extras(
    ca_files: Sequence[str | Path], environ: Mapping[str, str] | None = None
) -> list[tuple[str, bytes]]:
    """(source, PEM) for every CA to trust besides certifi's.

    Files named on the command line must be usable (an error otherwise). The environment's
    files are honoured when set and usable; one that is missing or empty is logged and skipped,
    since a worker's shell (pointing them at Groundhog's own CA) often starts the proxy too.
    """
    environ = os.environ if environ is None else environ
    extras = [(f"--upstream-ca {path}", _certificates(Path(path))) for path in ca_files]
    seen = {str(Path(path).resolve()) for path in ca_files}
    for variable in CA_ENVIRONMENT:
        value = environ.get(variable)
        if not value or str(Path(value).resolve()) in seen:
            continue
        seen.add(str(Path(value).resolve()))
        try:
            extras.append((f"{variable}={value}", _certificates(Path(value))))
        except EgressConfigError as error:
            log.warning("ignoring %s for upstream trust: %s", variable, error)
    return extras


def trust_bundle(
    directory: Path, ca_files: Sequence[str | Path], environ: Mapping[str, str] | None = None
) -> Path | None:
    """Write certifi's roots plus the extra CAs to one file under `directory`; None if no extras.

    The file is named by its content's hash, so proxies sharing a data directory never
    overwrite each other's bundle mid-read.
    """
    extras = trusted_extras(ca_files, environ)
    if not extras:
        return None
    parts = [Path(certifi.where()).read_bytes()]
    for source, pem in extras:
        parts.append(f"\n# {source}\n".encode() + pem.strip() + b"\n")
    content = b"".join(parts)
    directory.mkdir(parents=True, exist_ok=True)
    path = directory / f"upstream-ca-{hashlib.sha256(content).hexdigest()[:16]}.pem"
    if not path.exists():
        partial = path.with_suffix(f".{os.getpid()}.tmp")
        partial.write_bytes(content)
        partial.replace(path)
    log.info("upstream TLS trusts certifi plus %s", ", ".join(source for source, _ in extras))
    return path


@dataclass(frozen=True)
class UpstreamProxy:
    mode: str  # mitmproxy's `mode` entry, upstream:scheme://host:port
    auth: str | None  # mitmproxy's `upstream_auth`, user:password


def parse_upstream_proxy(url: str) -> UpstreamProxy:
    """`http(s)://[user:password@]host:port` as mitmproxy's mode and upstream_auth options."""
    parts = urlsplit(url.strip())
    if parts.scheme not in ("http", "https"):
        raise EgressConfigError(f"--upstream-proxy {url!r}: the scheme must be http:// or https://")
    try:
        port = parts.port
    except ValueError as error:
        raise EgressConfigError(f"--upstream-proxy {url!r}: {error}") from error
    if not parts.hostname:
        raise EgressConfigError(f"--upstream-proxy {url!r} names no host")
    if parts.path not in ("", "/") or parts.query or parts.fragment:
        raise EgressConfigError(f"--upstream-proxy {url!r}: give only scheme://host:port")
    host = f"[{parts.hostname}]" if ":" in parts.hostname else parts.hostname
    port = port or (443 if parts.scheme == "https" else 80)
    auth = None
    if parts.username is not None:
        auth = f"{unquote(parts.username)}:{unquote(parts.password or '')}"
    return UpstreamProxy(mode=f"{UPSTREAM_MODE_PREFIX}{parts.scheme}://{host}:{port}", auth=auth)


def upstream_proxy_url(modes: Sequence[str], auth: str | None = None) -> str | None:
    """The egress proxy of mitmproxy's `mode` option as a URL for an HTTP client, or None."""
    for mode in modes:
        if mode.startswith(UPSTREAM_MODE_PREFIX):
            target = mode.removeprefix(UPSTREAM_MODE_PREFIX)
            if "://" not in target:
                target = "http://" + target
            if auth:
                user, _, password = auth.partition(":")
                scheme, _, rest = target.partition("://")
                target = f"{scheme}://{quote(user, safe='')}:{quote(password, safe='')}@{rest}"
            return target
    return None


@fail_closed_hooks
class EgressAuth(upstream_auth.UpstreamAuth):
    """mitmproxy's upstream-proxy credentials, added only after Groundhog has read the worker's.

    mitmproxy's own addon writes the egress proxy's `Proxy-Authorization` onto plain-HTTP
    requests as soon as their headers arrive — over the worker's `TAPE:BRANCH` credentials,
    before the Groundhog addon reads them, which then strips the header again. Registered after
    the Groundhog addon, this one adds the credentials once the request has been decided.
    """

    def requestheaders(self, f: http.HTTPFlow) -> None:
        # Only a request decided this early (a streamed body) is past the Groundhog addon here.
        if self.auth and f.metadata.get(DECIDED_META) is not None:
            super().requestheaders(f)

    def request(self, f: http.HTTPFlow) -> None:
        if self.auth:
            super().requestheaders(f)
