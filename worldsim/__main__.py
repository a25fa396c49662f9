"""`python -m worldsim --host H --port P --seed N`: start the seeded mock world.

A separate process is the point: the benchmark drives the agent through the real proxy over TCP
to this server, as it would to a real service. `--world mcp` starts the MCP world instead
(worldsim/mcp_world.py: tools over MCP streamable HTTP at /mcp; always uncooperative).
"""

from __future__ import annotations

import argparse
import logging
from collections.abc import Sequence

import pydantic

from worldsim import server


def parse_args(argv: Sequence[str] | None = None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(prog="python -m worldsim", description=__doc__)
    parser.add_argument("--host", default="127.0.0.1")
    parser.add_argument("--port", type=int, default=server.DEFAULT_PORT)
    parser.add_argument("--seed", type=int, default=None, help="world seed (default 0)")
    parser.add_argument("--sandbox-cap", type=int, default=None, help="most branch sandboxes")
    parser.add_argument(
        "--no-hints",
        dest="hints",
        action="store_false",
        default=None,
        help="omit X-Groundhog-Reads/-Writes dependency hints",
    )
    parser.add_argument(
        "--world",
        choices=("research", "shop", "mcp"),
        default=None,
        help="which world (research); mcp: the MCP tool server, always uncooperative",
    )
    parser.add_argument(
        "--uncooperative",
        dest="cooperative",
        action="store_false",
        default=None,
        help="ignore every X-Groundhog-* header, draw noise per call, announce no hints",
    )
    parser.add_argument(
        "--sleep-latency",
        action="store_true",
        default=None,
        help="really wait the reported latency (off by default)",
    )
    parser.add_argument("--max-body-bytes", type=int, default=None)
    parser.add_argument(
        "--attention-call-weight",
        type=float,
        default=None,
        help="per-call weight of the attention shock (default 0.6, the declared world's)",
    )
    parser.add_argument(
        "--write-noise-sd",
        type=float,
        default=None,
        help="s.d. of a fresh `reception` draw in each publication's answer (default 0: none)",
    )
    parser.add_argument(
        "--clock-scale",
        type=float,
        default=None,
        help="multiply every reported latency by this (default 1, the declared world's)",
    )
    parser.add_argument("--log-level", default="warning")
    return parser.parse_args(argv)


def main(argv: Sequence[str] | None = None) -> None:
    args = parse_args(argv)
    logging.basicConfig(level=args.log_level.upper())
    if args.world == "mcp":
        # Imported here: the MCP SDK costs the HTTP worlds' start nothing.
        from worldsim import mcp_world

        mcp_world.run(
            args.host, args.port, args.seed, sandbox_cap=args.sandbox_cap, log_level=args.log_level
        )
        return
    try:
        server.run(
            args.host,
            args.port,
            args.seed,
            sandbox_cap=args.sandbox_cap,
            hints=args.hints,
            cooperative=args.cooperative,
            world=args.world,
            sleep_latency=args.sleep_latency,
            max_body_bytes=args.max_body_bytes,
            attention_call_weight=args.attention_call_weight,
            write_noise_sd=args.write_noise_sd,
            clock_scale=args.clock_scale,
            log_level=args.log_level,
        )
    except pydantic.ValidationError as error:
        problems = "; ".join(
            f"--{'-'.join(map(str, item['loc'])).replace('_', '-')}: {item['msg']}"
            for item in error.errors()
        )
        raise SystemExit(f"worldsim: invalid setting ({problems})") from error


if __name__ == "__main__":
    main()
