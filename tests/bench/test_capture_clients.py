"""bench/capture_clients.py: a client of the capture row counts only hits."""

from __future__ import annotations

import asyncio

import pytest

from bench import capture_clients
from bench.proxy_load import load_session
from bench.proxy_stack import BODY
from tests.bench.proxy_support import with_fixed_server


def test_an_answer_that_is_not_a_hit_is_an_error_not_a_fast_row() -> None:
    async def exercise(base: str) -> None:
        async with load_session() as session:
            await capture_clients.ask_shared(session, None, f"{base}/item")

    with pytest.raises(RuntimeError, match="not a hit"):
        asyncio.run(with_fixed_server(BODY, exercise))  # a 200 without a shared decision
