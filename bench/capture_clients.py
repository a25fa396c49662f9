"""The two client processes of `bench.capture_perf`: one captured, one proxied, same code.

A captured hit and a proxied one can only be compared if the same client asks both: the same
aiohttp session settings, the same negotiation headers, the same check that every answer is a
200 the proxy marked `shared` (anything else is an error, not a fast row). Each runs as its own
process (`python -m bench.capture_clients [--proxy URL]`) — the captured one inside
`groundhog run --capture`, where no proxy is named — and is asked one round at a time over
stdin, answering with the round's latencies and seconds on stdout.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import subprocess
import sys
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import IO, Any

import aiohttp

from bench.harness import REPO_ROOT, ChildService, child_environment
from bench.load import timed
from bench.proxy_load import load_session, proxy_with_identity
from groundhog.lifetime import tied_command
from groundhog.protocol.headers import DECISION


async def ask_shared(session: aiohttp.ClientSession, proxy: str | None, url: str) -> None:
    async with session.get(url, proxy=proxy) as response:
        await response.read()
        decision = response.headers.get(DECISION)
        if response.status != 200 or decision != "shared":
            raise RuntimeError(f"{url} answered {response.status} ({decision}), not a hit")


async def serve_rounds(proxy: str | None, commands: IO[str], answers: IO[str]) -> None:
    """Answer each line of `commands` ({"urls": [[...] per client], "fresh": bool}) with the
    round's timings; `fresh`: a new connection per hit instead of kept-alive ones."""
    async with load_session() as kept, load_session(force_close=True) as fresh:
        answers.write(json.dumps({"ready": True}) + "\n")
        answers.flush()
        for line in commands:
            command = json.loads(line)
            urls, session = command["urls"], fresh if command["fresh"] else kept

            async def ask(asker: str | None, url: str, session: Any = session) -> None:
                await ask_shared(session, asker, url)

            latencies, seconds = await timed(ask, [proxy] * len(urls), urls)
            answers.write(json.dumps({"latencies": latencies, "seconds": seconds}) + "\n")
            answers.flush()


@dataclass
class Client:
    """A client process the driver sends rounds to."""

    name: str
    process: subprocess.Popen[str]

    def ask(self, urls: list[list[str]], *, fresh: bool = False) -> tuple[list[float], float]:
        assert self.process.stdin is not None and self.process.stdout is not None
        self.process.stdin.write(json.dumps({"urls": urls, "fresh": fresh}) + "\n")
        self.process.stdin.flush()
        answer = self._answer()
        return [float(x) for x in answer["latencies"]], float(answer["seconds"])

    def _answer(self) -> dict[str, Any]:
        assert self.process.stdout is not None
        line = self.process.stdout.readline()
        if not line:
            self.process.wait(timeout=30)
            raise RuntimeError(f"the {self.name} client exited ({self.process.returncode})")
        answer: dict[str, Any] = json.loads(line)
        return answer

    def ready(self) -> None:
        if not self._answer().get("ready"):
            raise RuntimeError(f"the {self.name} client did not start")

    def stop(self) -> None:
        if self.process.stdin is not None:
            with contextlib.suppress(OSError):
                self.process.stdin.close()
        try:
            self.process.wait(timeout=30)
        except subprocess.TimeoutExpired:
            self.process.kill()
            self.process.wait()


def _client_command(*extra: str) -> list[str]:
    return [sys.executable, "-m", "bench.capture_clients", *extra]


@contextlib.contextmanager
def clients(
    services: tuple[ChildService, ChildService],
    capture_dir: Path,
    tape: str,
    captured: str,
    proxied: str,
) -> Iterator[tuple[Client, Client]]:
    """The captured client (in a namespace, as `captured`) and the proxied one (as `proxied`);
    `services`: the resolver and the proxy."""
    resolver, proxy = services
    # `run` asks the resolver for the branch's environment (the CA, cached under XDG_CACHE_HOME).
    environment = child_environment(
        {
            "GROUNDHOG_RESOLVER_URL": resolver.url,
            "GROUNDHOG_PROXY_URL": proxy.url,
            "XDG_CACHE_HOME": str(capture_dir / "cache"),
        }
    )
    run = [sys.executable, "-m", "groundhog.cli", "run", "--capture"]
    run += ["--capture-dir", str(capture_dir), "--tape", tape, "--branch", captured]
    run += ["--loopback", "sidecar", "--"]  # the upstream listens on this machine's 127.0.0.1
    commands = {
        "captured": [*run, *_client_command()],
        "proxied": _client_command("--proxy", proxy_with_identity(proxy.port, tape, proxied)),
    }
    started: list[Client] = []
    try:
        for name, command in commands.items():
            process = subprocess.Popen(
                tied_command(command),
                stdin=subprocess.PIPE,
                stdout=subprocess.PIPE,
                text=True,
                cwd=REPO_ROOT,
                env=environment,
            )
            started.append(Client(name, process))
        for client in started:
            client.ready()
        yield started[0], started[1]
    finally:
        for client in started:
            client.stop()


def main(argv: Sequence[str] | None = None) -> None:
    parser = argparse.ArgumentParser(prog="python -m bench.capture_clients", description=__doc__)
    parser.add_argument("--proxy", help="ask through this proxy (default: directly, captured)")
    args = parser.parse_args(argv)
    asyncio.run(serve_rounds(args.proxy, sys.stdin, sys.stdout))


if __name__ == "__main__":
    main()
