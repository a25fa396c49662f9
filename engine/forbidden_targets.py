"""Cloud metadata addresses are never a world to record (DESIGN §4, issue 31).

`169.254.169.254` and its kin hand out the node's own cloud credentials to whoever asks from
the node. A worker whose only egress is the proxy would otherwise fetch them through the
proxy, and the resolver would record them onto a tape that is shared, exported and published.
So an ask for a metadata address is refused before it is redacted, keyed or written, whatever
the tape's mode, unless the tape opts out (`allow_metadata_addresses`, for a world that really
is a metadata service, e.g. a mock). Pure: the resolve path and the raw-tunnel decision call it.
"""

from __future__ import annotations

import functools
import ipaddress

from engine.errors import ProblemError
from engine.tape_settings import TapeSettings

OPT_OUT_FIELD = "allow_metadata_addresses"
METADATA_NAMES = frozenset({"metadata.google.internal", "metadata.goog"})
METADATA_ADDRESSES = frozenset(
    ipaddress.ip_address(text)
    for text in (
        "169.254.169.254",  # AWS, GCP, Azure, OpenStack, DigitalOcean, Oracle
        "169.254.170.2",  # AWS ECS task credentials
        "fd00:ec2::254",  # AWS over IPv6
        "100.100.100.200",  # Alibaba Cloud
    )
)


class ForbiddenTarget(ProblemError):
    """Nothing is forwarded there: the target would leak what is not the world's."""

    status, slug, title = 403, "forbidden-target", "Target refused"


@functools.lru_cache(maxsize=4096)  # every ask asks it; parsing the address was most of it
def is_metadata_host(host: str) -> bool:
    name = host.strip().strip("[]").rstrip(".").lower()
    if name in METADATA_NAMES:
        return True
    try:
        address = ipaddress.ip_address(name)
    except ValueError:
        return False
    mapped = getattr(address, "ipv4_mapped", None)
    return address in METADATA_ADDRESSES or mapped in METADATA_ADDRESSES


def metadata_refusal(host: str, port: int, settings: TapeSettings) -> str | None:
    """Why an ask for `host` is refused, or None when it may go on."""
    if settings.allow_metadata_addresses or not is_metadata_host(host):
        return None
    return (
        f"{host}:{port} is a cloud metadata address: it serves this node's own credentials, "
        f"so the proxy never forwards to it; a tape whose world is a metadata service sets "
        f"{OPT_OUT_FIELD}: true"
    )


def refuse_metadata(host: str, port: int, settings: TapeSettings) -> None:
    """Raise `ForbiddenTarget` for a metadata address the tape has not opted into."""
    reason = metadata_refusal(host, port, settings)
    if reason is not None:
        raise ForbiddenTarget(reason, host=host, port=port)
