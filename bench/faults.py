"""`python -m bench.faults [--groups N]`: do shared faults cancel in the group advantage?

A tool-using agent is rewarded for recovering from failing tools. Here each rollout makes
`STEPS` calls to a tool (worldsim's `/context`, through the real proxy and resolver); a call
that meets an injected `503` is retried (the retry is the next occurrence: a new address with
its own draw) until the policy's retry budget runs out. The reward is the fraction of steps
completed minus a small cost per retry. Each group forks `GROUP` branches off one tape: half
run a patient policy (2 retries), half an impatient one (1 retry). The row reports, per
condition, the variance of rewards between branches running the *same* policy in a group (pure
fault noise in the advantage: it should be zero), and the mean and variance across groups of
the advantage contrast between the two policies.

- shared faults: a `groundhog` tape, so every branch meets the same fault at the same address;
- independent faults: a `naive` tape, whose addresses are private to each branch, so each
  branch draws its own faults — as a real flaky tool would fail.

Same fault rate, same policies, same seeds; only who shares a fault differs. Standalone, it
starts worldsim, the resolver and the proxy as child processes and prints the row as JSON;
`python -m bench` runs `collect` on its own services as the faults phase (row 9) and keeps
the raw groups, from which `summarize` makes the row.
"""

from __future__ import annotations

import argparse
import json
import statistics
from collections.abc import Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from bench import http_clients
from bench.harness import started_services
from groundhog.client import Groundhog
from groundhog.protocol import headers as protocol_headers
from groundhog.worker_env import proxy_url_with_credentials

STEPS = 6
GROUP = 4
FAULT_RATE = 0.4
BUDGETS = (2, 2, 1, 1)  # per branch of a group: patient, patient, impatient, impatient
GROUP_WORKERS = 2
RETRY_COST = 0.05  # each retry costs the rollout a little: recovering fast is worth more


@dataclass(frozen=True)
class GroupResult:
    rewards: list[float]
    injected: int

    @property
    def contrast(self) -> float:
        """Mean advantage of the patient half minus that of the impatient half."""
        mean = statistics.fmean(self.rewards)
        advantages = [r - mean for r in self.rewards]
        half = len(advantages) // 2
        return statistics.fmean(advantages[:half]) - statistics.fmean(advantages[half:])


def rollout(
    proxy_url: str,
    world_url: str,
    tape: str,
    branch: str,
    budget: int,
    capability: str | None = None,
) -> tuple[float, int]:
    """Reward and faults met by one rollout (presenting the branch's `capability`, if any)."""
    proxy = proxy_url_with_credentials(proxy_url, tape, branch, capability)
    done = injected = 0
    with http_clients.client(proxy=proxy, timeout=60) as client:
        for step in range(STEPS):
            for _attempt in range(budget + 1):
                answer = client.get(f"{world_url}/context", params={"step": step})
                if answer.headers.get(protocol_headers.FAULT):
                    injected += 1
                    continue
                done += answer.status_code == 200
                break
            else:
                break  # the budget ran out: the rollout gives up
    return done / STEPS - RETRY_COST * injected, injected


def run_group(
    urls: tuple[str, str],
    admin: Groundhog,
    tape: str,
    mode: str,
    seed: int,
    fault_rate: float = FAULT_RATE,
) -> GroupResult:
    admin.open_tape(
        tape,
        world_seed=seed,
        mode=mode,
        faults=[{"kind": "503", "rate": fault_rate, "path": "/context"}],
    )
    forked = admin.fork(tape, "root", GROUP)
    # The group's rollouts run at once, as a trainer runs them; who asks first does not matter.
    with ThreadPoolExecutor(max_workers=GROUP) as pool:
        results = list(
            pool.map(
                lambda pair: rollout(
                    urls[0], urls[1], tape, pair[0], pair[1], forked.capabilities.get(pair[0])
                ),
                zip(forked.branches, BUDGETS, strict=True),
            )
        )
    return GroupResult([reward for reward, _ in results], sum(n for _, n in results))


def _variance(values: Sequence[float]) -> float:
    return statistics.pvariance(values) if len(values) > 1 else 0.0


def collect(
    proxy_url: str,
    world_url: str,
    admin: Groundhog,
    *,
    groups: int = 16,
    run_id: str = "faults",
    fault_rate: float = FAULT_RATE,
) -> dict[str, Any]:
    """The raw row: per condition, each group's rewards and the faults it met.

    Whether an ask fails is a hash of the world's seed and the request's address, which holds
    the world's port: with few groups, a run may meet no fault at all (at the row's rate and
    two groups, about one in 400), so a caller that needs faults raises `fault_rate`. What the
    row prints is `summarize(collect(...))`, so a committed run's row can be recomputed from
    what this returns (bench/rawfiles.py keeps it).
    """
    raw: dict[str, Any] = {"groups": groups, "group_size": GROUP, "fault_rate": fault_rate}
    for label, mode in (("shared", "groundhog"), ("independent", "naive")):
        # Groups are independent tapes: two at a time, as the benchmark's other phases run.
        with ThreadPoolExecutor(max_workers=GROUP_WORKERS) as pool:
            results = list(
                pool.map(
                    lambda seed, label=label, mode=mode: run_group(
                        (proxy_url, world_url),
                        admin,
                        f"{run_id}-faults-{label}-{seed}",
                        mode,
                        seed,
                        fault_rate,
                    ),
                    range(groups),
                )
            )
        raw[label] = {
            "mode": mode,
            "groups": [{"rewards": r.rewards, "injected": r.injected} for r in results],
        }
    return raw


def summarize(raw: Mapping[str, Any]) -> dict[str, Any]:
    """The row from `collect`'s raw groups: per condition, the same-policy reward variance and
    the contrast's spread."""
    half = int(raw["group_size"]) // 2
    row: dict[str, Any] = {
        "groups": raw["groups"],
        "group_size": raw["group_size"],
        "fault_rate": raw["fault_rate"],
    }
    for label in ("shared", "independent"):
        groups = raw[label]["groups"]
        results = [GroupResult(list(g["rewards"]), int(g["injected"])) for g in groups]
        contrasts = [result.contrast for result in results]
        row[label] = {
            "mode": raw[label]["mode"],
            "contrast_mean": statistics.fmean(contrasts),
            "contrast_variance": _variance(contrasts),
            "same_policy_reward_variance": statistics.fmean(
                statistics.fmean([_variance(r.rewards[:half]), _variance(r.rewards[half:])])
                for r in results
            ),
            "faults_injected": sum(result.injected for result in results),
        }
    shared, independent = (
        row["shared"]["contrast_variance"],
        row["independent"]["contrast_variance"],
    )
    row["variance_reduction"] = 1 - shared / independent if independent else None
    return row


def measure(
    proxy_url: str,
    world_url: str,
    admin: Groundhog,
    *,
    groups: int = 16,
    run_id: str = "faults",
    fault_rate: float = FAULT_RATE,
) -> dict[str, Any]:
    """The row (see `collect` and `summarize`)."""
    raw = collect(proxy_url, world_url, admin, groups=groups, run_id=run_id, fault_rate=fault_rate)
    return summarize(raw)


def main(argv: Sequence[str] | None = None) -> None:
    parser = argparse.ArgumentParser(prog="python -m bench.faults", description=__doc__)
    parser.add_argument("--groups", type=int, default=16)
    parser.add_argument("--out", type=Path, help="write the row as JSON here")
    args = parser.parse_args(argv)
    with (
        started_services(cells=()) as services,
        Groundhog(services.resolver_url, proxy_url=services.proxy_url) as admin,
    ):
        row = measure(services.proxy_url, services.world_url, admin, groups=args.groups)
    text = json.dumps(row, indent=2, sort_keys=True)
    if args.out:
        args.out.write_text(text + "\n")
    print(text)


if __name__ == "__main__":
    main()
