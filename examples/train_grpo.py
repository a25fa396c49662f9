"""Train a tiny policy with GRPO on worldsim's research agent, every group through Groundhog.

This is the loop Groundhog exists for, end to end and small enough to read: each iteration
opens a tape (one recorded world), forks a group of sibling branches with `GroupRunner`, runs
worldsim's agent on each branch through the proxy, and updates a softmax policy over the four
strategies with the group-relative advantages `a_i = r_i - mean(r)`. The world's shock is common
to the group, so it cancels in the advantages instead of drowning the strategy's effect.

Start the servers first (three shells, or `groundhog up` plus `groundhog worldsim`):

    groundhog up                                   # resolver :8070, proxy :8080
    groundhog worldsim --port 8090 --seed 0
    python examples/train_grpo.py --world-url http://127.0.0.1:8090 --iterations 20

It prints one JSON document: per iteration the strategies, rewards, advantages, the policy and
how many reads the tape shared; open http://127.0.0.1:8070/ui to look at any iteration's tape.
"""

from __future__ import annotations

import argparse
import json
import logging
import math
import sys
import threading
import uuid
from collections import Counter
from typing import Any
from urllib.parse import urlsplit

try:
    from groundhog.branch import Branch
    from groundhog.client import Groundhog
    from groundhog.group import GroupResult, GroupRunner
    from worldsim import agent
except ModuleNotFoundError as missing:  # the system python3, not the project's venv
    sys.exit(f"{missing}: run it as .venv/bin/python examples/train_grpo.py (make venv)")

logger = logging.getLogger("train_grpo")

STRATEGIES = list(agent.Strategy)


class Policy:
    """A softmax over the strategies, trained by the GRPO policy gradient."""

    def __init__(self, size: int) -> None:
        self.logits = [0.0] * size

    def probabilities(self) -> list[float]:
        top = max(self.logits)
        weights = [math.exp(logit - top) for logit in self.logits]
        total = math.fsum(weights)
        return [weight / total for weight in weights]

    def update(self, chosen: list[int], advantages: list[float], learning_rate: float) -> None:
        """Ascend mean_i a_i * grad log pi(chosen_i); grad log pi(k) = onehot(k) - pi."""
        policy = self.probabilities()
        gradient = [0.0] * len(self.logits)
        for action, advantage in zip(chosen, advantages, strict=True):
            for index, probability in enumerate(policy):
                gradient[index] += advantage * ((index == action) - probability) / len(chosen)
        self.logits = [
            logit + learning_rate * step for logit, step in zip(self.logits, gradient, strict=True)
        ]


def agent_seed(seed: int, iteration: int, index: int) -> int:
    """The agent's own randomness (strategy choice, writing noise): per branch, on purpose."""
    return (seed * 1_000_003 + iteration * 1_009 + index) % (2**31)


def run_iteration(
    gh: Groundhog,
    world_url: str,
    policy: Policy,
    *,
    run: str,
    iteration: int,
    group_size: int,
    seed: int,
    mode: str,
) -> tuple[list[int], GroupResult, dict[str, Any]]:
    """Open this iteration's tape, run one group on it; the actions, the group and a summary."""
    tape = gh.open(
        f"{run}-it{iteration}",
        world_seed=seed + iteration,
        mode=mode,
        dependency_model="hints",
        cooperative_hosts=[urlsplit(world_url).hostname or "127.0.0.1"],
        # The bearer token a rollout obtains from POST /sessions names its sandbox: each branch
        # logs in live (a write answered by its own sandbox), and the token stays out of the
        # key, so siblings that made the same calls still share their reads.
        sandbox_headers=["Authorization"],
    )
    # Branch names are unique per run: worldsim keys its sandboxes by branch name alone.
    parent = tape.fork("root", [f"{run}-it{iteration}"], shim_counters=None)[0].path
    table = dict(zip(STRATEGIES, policy.probabilities(), strict=True))
    chosen: dict[str, int] = {}
    decisions: Counter[str] = Counter()
    lock = threading.Lock()

    def rollout(branch: Branch) -> float:
        own_seed = agent_seed(seed, iteration, int(branch.path.rsplit("/b", 1)[1]))
        strategy = agent.choose_strategy(table, own_seed)
        with branch.client() as http:
            result = agent.http_rollout(http, world_url, strategy, own_seed)
        with lock:
            chosen[branch.path] = STRATEGIES.index(strategy)
            decisions.update(step.decision for step in result.steps if step.decision)
        return result.reward

    group = GroupRunner(tape, parent=parent, size=group_size).run(rollout)
    actions = [chosen[branch.path] for branch in group.branches]
    totals = tape.report().totals
    summary = {
        "iteration": iteration,
        "tape": tape.name,
        "branches": [branch.path for branch in group.branches],
        "strategies": [str(STRATEGIES[action]) for action in actions],
        "rewards": group.rewards,
        "advantages": group.advantages,
        "decisions": dict(sorted(decisions.items())),
        "reads": totals.reads,
        "reads_shared": totals.reads_shared,
        "live_calls": totals.live_calls,
    }
    return actions, group, summary


def train(
    gh: Groundhog,
    world_url: str,
    *,
    run: str,
    iterations: int,
    group_size: int,
    learning_rate: float,
    seed: int,
    mode: str = "groundhog",
) -> dict[str, Any]:
    policy = Policy(len(STRATEGIES))
    history: list[dict[str, Any]] = []
    for iteration in range(iterations):
        actions, group, summary = run_iteration(
            gh,
            world_url,
            policy,
            run=run,
            iteration=iteration,
            group_size=group_size,
            seed=seed,
            mode=mode,
        )
        policy.update(actions, group.advantages, learning_rate)
        summary["policy"] = dict(zip(map(str, STRATEGIES), policy.probabilities(), strict=True))
        history.append(summary)
        logger.info(
            "iteration %d: mean reward %.3f, %d of %d reads shared, policy %s",
            iteration,
            group.mean_reward,
            summary["reads_shared"],
            summary["reads"],
            " ".join(f"{p:.2f}" for p in policy.probabilities()),
        )
    final = dict(zip(map(str, STRATEGIES), policy.probabilities(), strict=True))
    return {"run": run, "mode": mode, "iterations": history, "final_policy": final}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--resolver-url", default=None, help="default GROUNDHOG_RESOLVER_URL")
    parser.add_argument("--proxy-url", default=None, help="default GROUNDHOG_PROXY_URL")
    parser.add_argument("--world-url", default="http://127.0.0.1:8090")
    parser.add_argument("--iterations", type=int, default=20)
    parser.add_argument("--group-size", type=int, default=4)
    parser.add_argument("--learning-rate", type=float, default=2.0)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--mode", default="groundhog", choices=["naive", "replay", "groundhog"])
    parser.add_argument("--run", default=None, help="tape name prefix (default: random)")
    args = parser.parse_args(argv)
    if args.iterations < 1 or args.group_size < 2:
        parser.error("use --iterations >= 1 and --group-size >= 2 (advantages need a group)")
    logging.basicConfig(level=logging.INFO, format="%(message)s", stream=sys.stderr)
    logging.getLogger("httpx").setLevel(logging.WARNING)  # one INFO line per request otherwise
    run = args.run or f"grpo-{uuid.uuid4().hex[:8]}"
    with Groundhog(args.resolver_url, proxy_url=args.proxy_url) as gh:
        summary = train(
            gh,
            args.world_url,
            run=run,
            iterations=args.iterations,
            group_size=args.group_size,
            learning_rate=args.learning_rate,
            seed=args.seed,
            mode=args.mode,
        )
    sys.stdout.write(json.dumps(summary, indent=2) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
