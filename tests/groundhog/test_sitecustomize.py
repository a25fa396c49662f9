"""The opt-in sitecustomize: installs the shim first, chains a shadowed one, never fails quietly."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

from groundhog.cli_worker import shim_env
from groundhog.shim import shim
from tests.support.servers import REPO_ROOT

PROBE = "import json, random, time; print(json.dumps([random.random(), time.time()]))"


def run_python(env: dict[str, str], code: str = PROBE) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-c", code],
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
        cwd=REPO_ROOT,
    )


def base_env() -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("GROUNDHOG_")}
    env.pop("PYTHONPATH", None)
    return env


def test_shim_is_installed_before_user_code(tmp_path: Path) -> None:
    env = {**base_env(), "GROUNDHOG_WORLD_SEED": "12", "GROUNDHOG_BRANCH": "root/b4"}
    env.update(shim_env(env))
    done = run_python(env)
    assert done.returncode == 0, done.stderr
    with shim(world_seed=12, branch="root/b9"):
        import random
        import time

        expected = [random.random(), time.time()]
    assert json.loads(done.stdout) == expected


def test_without_the_flag_nothing_is_patched() -> None:
    env = {**base_env(), "GROUNDHOG_WORLD_SEED": "12"}
    env.update(shim_env(env))
    env["GROUNDHOG_SHIM"] = "0"
    done = run_python(env)
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout)[1] > 1_767_225_600, "the real clock"


def test_a_shadowed_sitecustomize_still_runs(tmp_path: Path) -> None:
    theirs = tmp_path / "theirs"
    theirs.mkdir()
    marker = tmp_path / "ran.txt"
    (theirs / "sitecustomize.py").write_text(f"open({str(marker)!r}, 'w').write('yes')\n")
    env = {**base_env(), "PYTHONPATH": str(theirs), "GROUNDHOG_WORLD_SEED": "1"}
    env.update(shim_env(env))
    assert env["PYTHONPATH"].endswith(str(theirs))
    done = run_python(env)
    assert done.returncode == 0, done.stderr
    assert marker.read_text() == "yes"
    assert json.loads(done.stdout)[1] < 1_767_225_600, "and the shim is on"


def test_a_shim_that_cannot_install_says_so() -> None:
    env = base_env()  # GROUNDHOG_SHIM=1 but no world seed
    env.update(shim_env(env))
    done = run_python(env)
    assert done.returncode == 0
    assert "GROUNDHOG_SHIM=1 but the shim was not installed" in done.stderr
    assert "GROUNDHOG_WORLD_SEED" in done.stderr
