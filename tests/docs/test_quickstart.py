"""The quick start's commands, run as written against `groundhog up` and worldsim.

Documentation whose commands do not work is worse than none. This starts the same servers the
page tells a newcomer to start (on free ports instead of the defaults), runs the page's checked
shell block with curl, and compares what it prints with the output the page promises.
"""

from __future__ import annotations

import os
import re
import shutil
import socket
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest

from groundhog.lifetime import tied_command
from tests.support.servers import REPO_ROOT, free_port, running_server, wait_until

QUICKSTART = REPO_ROOT / "docs" / "quickstart.md"
BLOCK = re.compile(
    r"<!-- quickstart-check: begin -->\n```bash\n(.*?)```\n<!-- quickstart-check: end -->"
    r".*?```text\n(.*?)```",
    re.S,
)

pytestmark = pytest.mark.skipif(shutil.which("curl") is None, reason="needs curl on PATH")


def _groundhog() -> str:
    beside = Path(sys.executable).with_name("groundhog")
    return str(beside) if beside.exists() else "groundhog"


def _accepting(port: int) -> bool:
    try:
        with socket.create_connection(("127.0.0.1", port), timeout=0.5):
            return True
    except OSError:
        return False


def _healthy(url: str) -> bool:
    try:
        return httpx.get(f"{url}/healthz", timeout=1.0, trust_env=False).status_code == 200
    except httpx.HTTPError:
        return False


@pytest.fixture(scope="module")
def ports(tmp_path_factory: pytest.TempPathFactory) -> Iterator[dict[str, int]]:
    data = tmp_path_factory.mktemp("quickstart")
    resolver_port, proxy_port = free_port(), free_port()
    env = {k: v for k, v in os.environ.items() if not k.lower().endswith("_proxy")}
    up = subprocess.Popen(  # tied: the servers die with the test run, however it ends
        tied_command([_groundhog(), "up", "--resolver-port", str(resolver_port), "--proxy-port",
         str(proxy_port), "--data", str(data / ".groundhog")]),
        stdout=subprocess.DEVNULL, stderr=subprocess.STDOUT, cwd=data, env=env,
    )  # fmt: skip
    try:
        wait_until(
            lambda: (
                up.poll() is None
                and _healthy(f"http://127.0.0.1:{resolver_port}")
                and _accepting(proxy_port)
            ),
            timeout=60,
            what="groundhog up",
        )
        with running_server(["worldsim", "--seed", "0"]) as world:
            yield {"8070": resolver_port, "8080": proxy_port, "8090": world.port}
    finally:
        up.terminate()
        try:
            up.wait(timeout=20)
        except subprocess.TimeoutExpired:
            up.kill()
            up.wait(timeout=10)


def test_the_quickstart_commands_print_what_the_page_promises(ports, tmp_path: Path) -> None:
    found = BLOCK.search(QUICKSTART.read_text())
    assert found, "docs/quickstart.md lost its checked block or its expected output"
    script, promised = found.groups()
    for default, actual in ports.items():
        script = script.replace(f"127.0.0.1:{default}", f"127.0.0.1:{actual}")
    env = {k: v for k, v in os.environ.items() if not k.lower().endswith("_proxy")}
    done = subprocess.run(
        ["bash", "-euo", "pipefail", "-c", script],
        capture_output=True, text=True, timeout=120, cwd=tmp_path, env=env,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    printed = [line.rstrip() for line in done.stdout.splitlines() if line.strip()]
    printed = [line for line in printed if not line.startswith("{")]  # the JSON answers
    expected = [line.rstrip() for line in promised.splitlines() if line.strip()]
    assert len(printed) == len(expected), (printed, expected)
    for shown, wanted in zip(printed, expected, strict=True):
        if wanted.endswith(": <hash>"):  # a digest the page cannot know: the reader's own
            name, _, value = shown.partition(": ")
            assert name == wanted.split(":")[0] and re.fullmatch(r"[0-9a-f]{16,}", value), shown
        else:
            assert shown == wanted
    _the_viewer_shows_what_the_write_changed(f"http://127.0.0.1:{ports['8070']}")


def _the_viewer_shows_what_the_write_changed(resolver_url: str) -> None:
    """The page's claim, in the viewer: the refetched search differs from root/b0's, by lines."""
    with httpx.Client(base_url=resolver_url, trust_env=False) as http:
        events = http.get("/v1/tapes/demo/events", params={"branch": "root/b1"}).json()["events"]
        refetched = [event for event in events if event["decision"] == "refetched"]
        assert len(refetched) == 1, events
        page = http.get(
            "/ui/tapes/demo/compare",
            params={"key": refetched[0]["request_key"], "occurrence": refetched[0]["occurrence"]},
        ).text
    verdict = re.search(r"(\d+) line\(s\) differ", page)
    assert verdict and int(verdict.group(1)) > 0, "the viewer must show the lines that differ"
    changed = re.findall(r'<tr class="(?:changed|added)">(.*?)</tr>', page, flags=re.S)
    assert any("Solar and wind brief" in row for row in changed), changed


README = REPO_ROOT / "README.md"
USING_IT = re.compile(r"## Using it\n\n```bash\n(.*?)```", re.S)


def test_the_readme_group_shares_one_read_on_loopback(ports, tmp_path: Path) -> None:
    """README's "Using it", after its two server lines: four siblings, one live call."""
    found = USING_IT.search(README.read_text())
    assert found, "README.md lost its 'Using it' block"
    lines = found.group(1).splitlines()
    assert lines[0].startswith("make up") and "groundhog worldsim" in lines[1]
    script = "\n".join(lines[2:]).replace(".venv/bin/groundhog", _groundhog())
    for default, actual in ports.items():
        script = script.replace(f"127.0.0.1:{default}", f"127.0.0.1:{actual}")
    env = {k: v for k, v in os.environ.items() if not k.lower().endswith("_proxy")}
    env = {k: v for k, v in env.items() if not k.startswith("GROUNDHOG_")}
    env.update(
        GROUNDHOG_RESOLVER_URL=f"http://127.0.0.1:{ports['8070']}",
        GROUNDHOG_PROXY_URL=f"http://127.0.0.1:{ports['8080']}",
        XDG_CACHE_HOME=str(tmp_path / "cache"),
    )
    done = subprocess.run(
        ["bash", "-euo", "pipefail", "-c", script],
        capture_output=True, text=True, timeout=120, cwd=tmp_path, env=env,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    decisions = [line.split(":", 1)[1].strip() for line in done.stdout.splitlines() if ":" in line]
    assert decisions == ["recorded", "shared", "shared", "shared"], done.stdout
