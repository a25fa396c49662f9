"""A 300 MiB download through the real proxy, with the proxy's resident memory sampled.

Bodies must stream with a cap (issue 13): a response over the body limit flows to the worker as
it arrives and is never held whole, whether its size is announced (Content-Length: passthrough
at once) or not (chunked: teed into a capped copy that is dropped at the limit). The promise is
that the proxy's RSS grows by less than 64 MiB while 300 MiB pass through it.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import httpx

from bench.reliability.memory import MemorySampler
from bench.reliability.processes import scenario_children
from bench.reliability.stack import start_stack
from groundhog.protocol import headers as protocol_headers

MIB = 1024 * 1024
DOWNLOAD_MIB = 300
RSS_GROWTH_LIMIT_MIB = 64


def _download(stack: Any, tape: str, branch: str, chunked: bool) -> dict[str, Any]:
    proxy = stack.proxies[0]
    url = f"{stack.upstream.url}/download/{int(chunked)}?size={DOWNLOAD_MIB * MIB}"
    if chunked:
        url += "&chunked=1"
    baseline = proxy.rss_kib() or 0
    received = 0
    with (
        MemorySampler([proxy], interval=0.1) as sampler,
        httpx.Client(proxy=proxy.url, trust_env=False, timeout=120) as client,
        client.stream(
            "GET", url, headers={protocol_headers.TAPE: tape, protocol_headers.BRANCH: branch}
        ) as answer,
    ):
        decision = answer.headers.get(protocol_headers.DECISION)
        for piece in answer.iter_raw(MIB):
            received += len(piece)
    peak = max([kib for _, kib in sampler.series[proxy.name].samples] + [baseline])
    growth = (peak - baseline) / 1024
    return {
        "framing": "chunked" if chunked else "content-length",
        "received_mib": round(received / MIB, 1),
        "decision": decision,
        "rss_before_mib": round(baseline / 1024, 1),
        "rss_peak_mib": round(peak / 1024, 1),
        "rss_growth_mib": round(growth, 1),
        "held": received == DOWNLOAD_MIB * MIB and growth < RSS_GROWTH_LIMIT_MIB,
    }


def run_big_download(root: Path | None = None) -> dict[str, Any]:
    with scenario_children("gh-download-", root) as (base, group):
        stack = start_stack(group, base)
        tape, (first, second) = stack.open_tape("download", 2)
        cases = [_download(stack, tape, first, False), _download(stack, tape, second, True)]
        return {
            "limit_mib": RSS_GROWTH_LIMIT_MIB,
            "cases": cases,
            "held": all(case["held"] for case in cases),
        }
