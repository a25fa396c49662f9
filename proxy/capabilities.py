"""What a worker presents for its branch, and the pin of a sidecar started for one branch.

A worker names its tape and branch itself (proxy/identity.py), so nothing there stops a policy
from naming a sibling's branch or another tape. Two things do (DESIGN §3 "Capability",
docs/reliability.md "What a worker can reach"): the branch's capability, which the worker
presents in its proxy URL's credentials (`http://TAPE:BRANCH:CAPABILITY@proxy`, Basic
`TAPE:BRANCH:CAPABILITY`: the tape is the user name, the password `BRANCH:CAPABILITY`) or the
`X-Groundhog-Capability` header and which the resolver checks (resolver/capabilities.py); and
the pin of a sidecar started with `--tape/--branch` (options `groundhog_tape`,
`groundhog_branch`), which refuses here any request that names another tape or branch, so its
worker needs no capability of its own (the sidecar presents `groundhog_capability` for it).
"""

from __future__ import annotations

from urllib.parse import unquote

from mitmproxy import http

from proxy import problems

__all__ = [
    "pin_mismatch",
    "pin_refusal",
    "split_branch_password",
]


def split_branch_password(password: str) -> tuple[str | None, str | None]:
    """The Basic password `BRANCH` or `BRANCH:CAPABILITY` as (branch, capability).

    Decoded first: a client may send the URL's userinfo as written (`root%2Fb0%3A…`) or decoded
    (`root/b0:…`). A branch path has no ':' (DESIGN §3), so the first one ends it.
    """
    branch, _, capability = unquote(password).partition(":")
    return branch or None, capability or None


def pin_mismatch(
    tape: str, branch: str, *, pinned_tape: str | None, pinned_branch: str | None
) -> str | None:
    """What a request names beyond the sidecar's pin (None: nothing, or no pin)."""
    named = []
    if pinned_tape and tape != pinned_tape:
        named.append(f"tape {tape!r} (it serves tape {pinned_tape!r})")
    if pinned_branch and branch != pinned_branch:
        named.append(f"branch {branch!r} (it serves branch {pinned_branch!r})")
    return " and ".join(named) or None


def pin_refusal(
    tape: str, branch: str, *, pinned_tape: str | None, pinned_branch: str | None
) -> http.Response | None:
    """A 403 `refused` for a request that names another tape or branch than the sidecar's pin;
    None when it names the pinned ones (or the sidecar is pinned to nothing)."""
    named = pin_mismatch(tape, branch, pinned_tape=pinned_tape, pinned_branch=pinned_branch)
    if named is None:
        return None
    return problems.problem_response(
        403,
        "branch-pinned",
        "The proxy serves another branch",
        f"this proxy was started for one branch (--tape/--branch) and refuses requests for "
        f"{named}: nothing was asked or forwarded. Send this worker's requests without naming "
        "a tape or branch, or through a proxy of its own",
        tape=tape,
        branch=branch,
    )
