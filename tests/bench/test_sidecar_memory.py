"""bench/sidecar_memory.py: a small run reads both proxies' RSS and serves every hit it counts;
a process that is gone has no RSS rather than a zero one."""

from __future__ import annotations

import subprocess
import sys

import pytest

from bench import sidecar_memory


def test_a_gone_process_has_no_rss() -> None:
    finished = subprocess.Popen([sys.executable, "-c", "pass"])
    finished.wait()
    with pytest.raises(RuntimeError, match="has exited"):
        sidecar_memory.rss_mib(finished.pid)


def test_a_small_run_measures_both_proxies_and_serves_every_hit() -> None:
    result = sidecar_memory.run(hits=30, addresses=5, clients=2)
    assert result["hits"] == 30  # three batches of two siblings asking five addresses each
    rest = result["at_rest_mib"]
    assert rest["sidecar"] > 10 and rest["mitmdump"] > 10  # a Python process, not a zero
    assert result["at_rest_ratio"] == pytest.approx(rest["sidecar"] / rest["mitmdump"])
    assert result["after_hits_mib"] > 10
    assert "x mitmdump's RSS" in sidecar_memory.table(result)
