"""Admin commands load no services' stack: `groundhog tape ls` stays a light process.

A training script shells out to `tape ls` and `tape fork` between steps. One eager import of
mitmproxy, FastAPI, SQLAlchemy or pydantic (typer 0.29 builds a pydantic adapter per parameter:
groundhog/cli_coercion.py) costs more than the command itself; bench/cli_speed.py measures it.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import uuid

import pytest

from tests.support.servers import REPO_ROOT, ServerProcess

HEAVY = ("mitmproxy", "fastapi", "sqlalchemy", "pydantic", "uvicorn", "groundhog.shim.patches")
PROBE = """
import json, sys
from groundhog.cli import main
sys.argv = ["groundhog", *sys.argv[1:]]
try:
    main()
except SystemExit as done:
    code = done.code
print(json.dumps({"modules": sorted(sys.modules), "code": code}))
"""


def loaded_by(*args: str, resolver_url: str) -> dict[str, object]:
    env = {**os.environ, "GROUNDHOG_RESOLVER_URL": resolver_url}
    done = subprocess.run(
        [sys.executable, "-c", PROBE, *args, "--json"],
        capture_output=True, text=True, timeout=120, cwd=REPO_ROOT, env=env, check=False,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    result: dict[str, object] = json.loads(done.stdout.splitlines()[-1])
    return result


@pytest.mark.parametrize("command", [["tape", "ls"], ["tape", "fork", "{tape}"]])
def test_admin_commands_import_no_services_stack(
    command: list[str], resolver: ServerProcess
) -> None:
    tape = f"imports-{uuid.uuid4().hex[:8]}"
    subprocess.run(
        [sys.executable, "-m", "groundhog.cli", "tape", "open", tape],
        env={**os.environ, "GROUNDHOG_RESOLVER_URL": resolver.url}, check=True,
        capture_output=True, cwd=REPO_ROOT, timeout=120,
    )  # fmt: skip
    result = loaded_by(*[part.format(tape=tape) for part in command], resolver_url=resolver.url)
    assert result["code"] in (0, None), result
    modules = result["modules"]
    assert isinstance(modules, list) and "groundhog.cli" in modules
    heavy = [
        name
        for name in HEAVY
        if any(m.split(".")[: name.count(".") + 1] == name.split(".") for m in modules)
    ]
    assert heavy == [], f"`groundhog {' '.join(command)}` imported {heavy}"


def test_a_bad_integer_still_gets_typers_own_message(resolver: ServerProcess) -> None:
    done = subprocess.run(
        [sys.executable, "-m", "groundhog.cli", "tape", "fork", "t", "--children", "abc"],
        env={**os.environ, "GROUNDHOG_RESOLVER_URL": resolver.url, "COLUMNS": "200"},
        capture_output=True, text=True, cwd=REPO_ROOT, timeout=120, check=False,
    )  # fmt: skip
    assert done.returncode == 2
    assert "Invalid value for '--children'" in done.stderr and "valid integer" in done.stderr
