"""What the proxy says at start about the resolver it was pointed at.

A proxy started against a dead resolver (a typo in --resolver-url, the resolver not started
yet) answers every request `503` and forwards nothing, which is safe but silent until the
first worker asks. One warning at start names the URL and the fix, before anyone has to wonder.
"""

from __future__ import annotations

import logging
import urllib.error
import urllib.request

log = logging.getLogger(__name__)

HEALTH_TIMEOUT_SECONDS = 3.0


def resolver_problem(resolver_url: str, *, timeout: float = HEALTH_TIMEOUT_SECONDS) -> str | None:
    """Why the resolver's /healthz does not answer 200 now, or None when it does.

    Blocking (urllib, no proxy from the environment): run it off the event loop.
    """
    url = f"{resolver_url.rstrip('/')}/healthz"
    opener = urllib.request.build_opener(urllib.request.ProxyHandler({}))
    try:
        with opener.open(url, timeout=timeout) as answer:
            status = answer.status
    except urllib.error.HTTPError as error:
        status = error.code
    except (OSError, ValueError) as error:  # refused, timed out, unresolvable, a malformed URL
        return str(getattr(error, "reason", error))
    return None if status == 200 else f"/healthz answered {status}"


def warn_if_resolver_dead(resolver_url: str) -> bool:
    """Log one warning when the resolver does not answer; True when it does."""
    problem = resolver_problem(resolver_url)
    if problem is None:
        return True
    log.warning(
        "the resolver at %s does not answer (%s): until it does, every request gets 503 and "
        "nothing is forwarded; start it (groundhog resolver, or groundhog up for both) or "
        "point --resolver-url at it",
        resolver_url,
        problem,
    )
    return False
