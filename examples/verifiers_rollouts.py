"""A verifiers-style environment whose rollouts each run on their own Groundhog branch.

`with_groundhog` needs no verifiers import: it wraps whatever `rollout` method the environment
has. This toy environment has the same shape as a verifiers `Environment` (an async
`rollout(client, model, prompt, answer, ...)` returning `(completion, state)`, and a `generate`
that gathers several rollouts per prompt); its one tool searches worldsim through the proxy.
The rollouts of one prompt become sibling branches of one fork, so they all see the same search
results, and the tool client names each rollout's branch on every request.

    groundhog up &  groundhog worldsim --port 8090 &
    python examples/verifiers_rollouts.py --world-url http://127.0.0.1:8090
"""

from __future__ import annotations

import argparse
import asyncio
import json
import logging
import sys
import uuid
from typing import Any

try:
    import httpx

    from groundhog.verifiers_adapter import with_groundhog
except ModuleNotFoundError as missing:  # the system python3, not the project's venv
    sys.exit(f"{missing}: run it as .venv/bin/python examples/verifiers_rollouts.py (make venv)")

logger = logging.getLogger("verifiers_rollouts")


class SearchEnv:
    """One tool (search); the reward is the share of the top three hits that are studies of the
    prompt's own topic (a search also returns neighbouring topics' studies that mention it)."""

    def __init__(self, world_url: str) -> None:
        self.world_url = world_url.rstrip("/")
        self.tools: httpx.AsyncClient | None = None

    async def rollout(
        self,
        client: Any,
        model: str,
        prompt: str,
        answer: str = "",
        sampling_args: dict[str, Any] | None = None,
    ) -> tuple[list[dict[str, str]], dict[str, Any]]:
        assert self.tools is not None, "open env.tools first"
        response = await self.tools.get(f"{self.world_url}/search", params={"q": prompt})
        response.raise_for_status()
        found = response.json()["hits"]
        hits = [hit["id"] for hit in found]
        completion = [{"role": "assistant", "content": f"top hit: {hits[0] if hits else '-'}"}]
        on_topic = [hit["title"].lower().startswith(answer.lower()) for hit in found[:3]]
        state = {
            "hits": hits,
            "decision": response.headers.get("x-groundhog-decision"),
            "reward": round(sum(on_topic) / 3, 4),
        }
        return completion, state

    async def generate(self, prompts: list[str], rollouts_per_example: int) -> list[Any]:
        calls = [
            self.rollout(None, "policy", prompt, answer=f"{prompt} study")
            for prompt in prompts
            for _ in range(rollouts_per_example)
        ]
        return await asyncio.gather(*calls)


async def run(env: SearchEnv, prompts: list[str], per_prompt: int) -> list[dict[str, Any]]:
    async with env.groundhog.async_httpx_client() as tools:
        env.tools = tools
        results = await env.generate(prompts, per_prompt)
    return [
        {"branch": state["groundhog"]["branch"], "decision": state["decision"],
         "hits": state["hits"], "reward": state["reward"]}
        for _, state in results
    ]  # fmt: skip


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--resolver-url", default=None, help="default GROUNDHOG_RESOLVER_URL")
    parser.add_argument("--proxy-url", default=None, help="default GROUNDHOG_PROXY_URL")
    parser.add_argument("--world-url", default="http://127.0.0.1:8090")
    parser.add_argument("--tape", default=None, help="default: a new random name")
    parser.add_argument("--prompts", nargs="+", default=["solar", "wind"])
    parser.add_argument("--rollouts-per-example", type=int, default=4)
    args = parser.parse_args(argv)
    logging.basicConfig(level=logging.INFO, format="%(message)s", stream=sys.stderr)
    env = with_groundhog(
        SearchEnv(args.world_url),
        tape=args.tape or f"verifiers-{uuid.uuid4().hex[:8]}",
        resolver_url=args.resolver_url,
        proxy_url=args.proxy_url,
        world_seed=1,
    )
    rows = asyncio.run(run(env, args.prompts, args.rollouts_per_example))
    sys.stdout.write(json.dumps({"tape": env.groundhog.tape.name, "rollouts": rows}, indent=2))
    sys.stdout.write("\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
