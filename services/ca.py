"""One interception CA per deployment, created once, safely, whoever starts first.

The proxy signs leaf certificates with the CA in `ca_dir`; workers trust the certificate the
resolver serves at `/v1/ca.pem`. If the proxy and the resolver each created a CA at the same
instant they could end up with two different ones and TLS would fail for every worker. Here the
CA is generated in a temporary directory under an exclusive lock file and moved into place, the
key file last; the proxy may call `ensure_ca(ca_dir)` before it starts mitmproxy.
"""

from __future__ import annotations

import fcntl
import logging
import os
import tempfile
from pathlib import Path

logger = logging.getLogger(__name__)

CA_BASENAME = "mitmproxy"
CA_CERT_NAME = f"{CA_BASENAME}-ca-cert.pem"
CA_KEY_NAME = f"{CA_BASENAME}-ca.pem"
CA_KEY_BITS = 2048
# Files holding the CA's private key: readable by the service user only.
CA_PRIVATE_FILES = (CA_KEY_NAME, f"{CA_BASENAME}-ca.p12")


def _keep_key_private(ca_dir: Path) -> None:
    for name in CA_PRIVATE_FILES:
        path = ca_dir / name
        if path.exists() and path.stat().st_mode & 0o077:
            try:
                os.chmod(path, 0o600)
            except OSError as error:  # a read-only mount (a Kubernetes Secret): its owner's call
                logger.warning("could not make the CA key %s private: %s", path, error)


def ensure_ca(ca_dir: Path) -> Path:
    """The CA certificate path in `ca_dir`, generating the CA there if it has none."""
    ca_dir.mkdir(parents=True, exist_ok=True)
    certificate = ca_dir / CA_CERT_NAME
    if certificate.exists() and (ca_dir / CA_KEY_NAME).exists():
        _keep_key_private(ca_dir)
        return certificate
    with (ca_dir / ".ca.lock").open("w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        if (ca_dir / CA_KEY_NAME).exists():
            _keep_key_private(ca_dir)
            return certificate
        from mitmproxy.certs import CertStore

        with tempfile.TemporaryDirectory(dir=ca_dir, prefix=".ca-") as staging:
            CertStore.from_store(staging, CA_BASENAME, CA_KEY_BITS)
            names = sorted(os.listdir(staging), key=lambda name: name == CA_KEY_NAME)
            for name in names:  # the key file last: its presence means "CA complete"
                if name in CA_PRIVATE_FILES:
                    os.chmod(Path(staging) / name, 0o600)
                os.replace(Path(staging) / name, ca_dir / name)
        logger.info("created a CA in %s", ca_dir)
    return certificate
