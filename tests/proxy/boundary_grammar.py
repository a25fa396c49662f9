"""What the boundary fuzzers share: a grammar of hostile bytes, and the stack they attack.

The HTTP/1 fuzzer (tests/proxy/test_boundary_fuzz.py) and the HTTP/2 one
(tests/proxy/test_boundary_fuzz_h2.py) draw identity headers, proxy credentials and header
names from the same small grammar (names Groundhog reads, control bytes, NUL, non-UTF-8, overlong
runs), so a byte one finds worth trying the other tries too; and both attack a real resolver and
proxy with a sealed tape, then with the resolver frozen (SIGSTOP). `GROUNDHOG_BOUNDARY_EXAMPLES=N`
runs N examples against the sealed tape and N/2 against the frozen resolver (a long run: add
pytest's `--timeout=0`, or pytest-timeout's 300 s per test ends it); CI runs the default.
"""

from __future__ import annotations

import base64
import contextlib
import os
import signal
from collections.abc import Iterator
from pathlib import Path

from hypothesis import HealthCheck, settings
from hypothesis import strategies as st

from tests.proxy.stack import Stack, running_stack

EXAMPLES = int(os.environ.get("GROUNDHOG_BOUNDARY_EXAMPLES", "100"))
SEALED = "fuzz-sealed"
ANSWER_SECONDS = 10.0  # how long one case waits for an answer: far above the proxy's timeouts

NASTY = st.sampled_from(
    [
        b"\x00",
        b"\xff",
        b"\xc3\xa9",
        b"\r",
        b"\n",
        b"\r\n ",
        b"\r\n\t",
        b"\t",
        b"\x7f",
        b" ",
        b"%ff",
        b"%00",
        b"%2F",
        b"%",
        b"..",
        b"/",
        b":",
        b",",
        b";",
        b"\x1b[0m",
        b"\xed\xa0\x80",
    ]
)
SEGMENT = st.one_of(
    st.sampled_from([SEALED.encode(), b"root", b"root/b0", b"b0", b"fuzz", b"a" * 120]),
    NASTY,
    st.binary(max_size=12),
)
NASTY_TEXT = st.lists(SEGMENT, max_size=4).map(b"".join)
HEADER_NAMES = st.one_of(
    st.sampled_from(
        [
            b"X-Groundhog-Tape",
            b"X-Groundhog-Branch",
            b"x-groundhog-tape",
            b"Proxy-Authorization",
            b"Host",
            b"Content-Length",
            b"Transfer-Encoding",
            b"Connection",
            b"Upgrade",
            b"Expect",
            b"X-Groundhog-Decision",
            b"Accept",
            b"Cookie",
        ]
    ),
    st.binary(min_size=1, max_size=10),
)


def credentials(draw: st.DrawFn) -> bytes:
    tape = draw(st.sampled_from([SEALED.encode(), b""]) | NASTY_TEXT)
    branch = draw(st.sampled_from([b"root", b"root%2Fb0", b""]) | NASTY_TEXT)
    token = base64.b64encode(tape + b":" + branch)
    return draw(
        st.sampled_from([b"Basic " + token, b"basic " + token, b"Bearer " + token, token])
        | st.builds(lambda junk: b"Basic " + junk, NASTY_TEXT)
    )


def mutated(draw: st.DrawFn) -> bool:
    """One element in eight is mutated: about a third of the cases are well-formed throughout
    and meet the resolver (a sealed-tape miss, a frozen resolver's 503)."""
    return draw(st.integers(0, 7)) == 0


@contextlib.contextmanager
def sealed_stack(data_dir: Path) -> Iterator[Stack]:
    """A resolver and proxy with short timeouts, and the tape SEALED open and sealed."""
    with running_stack(
        data_dir,
        *("--set", "groundhog_resolve_timeout=0.5"),
        *("--set", "groundhog_resolve_retry=0"),
        *("--set", "groundhog_record_timeout=1"),
        *("--set", "groundhog_header_timeout=3"),
    ) as stack:
        stack.open_tape(name=SEALED, world_seed=1)
        stack.seal(SEALED)
        yield stack


FUZZ_SETTINGS = settings(
    max_examples=EXAMPLES,
    deadline=None,
    derandomize=EXAMPLES <= 100,  # CI: the same cases every run; a long run explores
    suppress_health_check=[
        HealthCheck.function_scoped_fixture,
        HealthCheck.too_slow,
        HealthCheck.data_too_large,
        HealthCheck.large_base_example,
    ],
)


@contextlib.contextmanager
def frozen(stack: Stack) -> Iterator[Stack]:
    """SIGSTOP the resolver (sockets open, no answers); SIGCONT on the way out, whatever
    happens."""
    os.kill(stack.resolver.process.pid, signal.SIGSTOP)
    try:
        yield stack
    finally:
        os.kill(stack.resolver.process.pid, signal.SIGCONT)
