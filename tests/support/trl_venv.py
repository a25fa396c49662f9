"""Build `.venv-trl/`: the environment TRL's real `GRPOTrainer` runs in for the TRL test.

TRL imports torch, and torch cannot join the dev venv: on Python 3.12 the package index has only
the CUDA build (measured here: 137 s and 5.6 GB for torch 2.14.1 + trl 1.16 with uv). The
machines carry a CPU build of torch for Python 3.11 on disk (`/opt/wheels`), so the TRL test
runs in a venv of its own on that interpreter: 38 s and 1.2 GB with uv, the rest of it (trl,
transformers, accelerate, datasets: `.ci/trl-requirements.txt`) from the index. Groundhog's
worker package is put on that venv's path by the test (`PYTHONPATH`), its runtime requirements
installed from pyproject.toml — pyproject asks for 3.12, and the worker side is run on 3.11
only here (docs/recipes.md says so).

A stamp holding a digest of everything the build used makes a later run reuse the venv; a
lock file lets one builder run at a time. `TrlVenvUnavailable` means the build cannot happen on
this machine (no CPU wheel, no interpreter for it, no network); any other failure raises.
"""

from __future__ import annotations

import fcntl
import glob
import hashlib
import os
import re
import shutil
import subprocess
import sys
import tomllib
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

REPO_ROOT = Path(__file__).resolve().parents[2]
VENV = REPO_ROOT / ".venv-trl"
LOCK = REPO_ROOT / ".venv-trl.lock"
STAMP_NAME = ".built"
REQUIREMENTS = REPO_ROOT / ".ci" / "trl-requirements.txt"
WHEEL_ENV = "GROUNDHOG_TRL_TORCH_WHEEL"
WHEEL_GLOB = "/opt/wheels/torch-*+cpu-cp3*-manylinux*_x86_64.whl"
# Messages uv and pip print when the index cannot be reached at all (not a resolution error).
NO_NETWORK = re.compile(
    r"dns error|failed to lookup address|network is unreachable|connection refused|"
    r"temporary failure in name resolution|error sending request|NewConnectionError",
    re.IGNORECASE,
)


class TrlVenvUnavailable(RuntimeError):
    """The TRL venv cannot be built here; the message says why."""


def torch_wheel() -> Path:
    """The CPU torch wheel to install: `$GROUNDHOG_TRL_TORCH_WHEEL`, else the newest on disk."""
    named = os.environ.get(WHEEL_ENV)
    if named:
        if not Path(named).is_file():
            raise TrlVenvUnavailable(f"{WHEEL_ENV}={named} is not a file")
        return Path(named)
    found = sorted(Path(p) for p in glob.glob(WHEEL_GLOB))
    if not found:
        raise TrlVenvUnavailable(
            f"no CPU build of torch on disk ({WHEEL_GLOB}); name one in {WHEEL_ENV}"
        )
    return found[-1]


def wheel_python_version(wheel: Path) -> tuple[int, int]:
    """(3, 11) for a `cp311` wheel: the interpreter the venv must be made from."""
    match = re.search(r"-cp3(\d+)-", wheel.name)
    if not match:
        raise TrlVenvUnavailable(f"{wheel.name} names no CPython version")
    return 3, int(match.group(1))


def find_python(version: tuple[int, int]) -> str:
    """A Python of `version`; pyenv shims answer for versions not selected, so each is asked."""
    major, minor = version
    candidates = [f"python{major}.{minor}", f"python{major}"]
    pyenv = Path("/root/.pyenv/versions").glob(f"{major}.{minor}*/bin/python3")
    candidates += sorted(str(path) for path in pyenv)
    candidates += [f"/usr/bin/python{major}.{minor}", f"/usr/local/bin/python{major}.{minor}"]
    check = f"import sys; sys.exit(0 if sys.version_info[:2] == ({major}, {minor}) else 1)"
    for candidate in candidates:
        exe = shutil.which(candidate) or candidate
        try:
            done = subprocess.run([exe, "-c", check], capture_output=True, timeout=60)
        except (OSError, subprocess.TimeoutExpired):
            continue
        if done.returncode == 0:
            return exe
    raise TrlVenvUnavailable(f"no Python {major}.{minor} for the CPU torch wheel")


def groundhog_requirements() -> list[str]:
    """The worker package's own runtime requirements, read from pyproject.toml."""
    with (REPO_ROOT / "pyproject.toml").open("rb") as file:
        return list(tomllib.load(file)["project"]["dependencies"])


def _digest(wheel: Path, python: str) -> str:
    parts = [
        wheel.name,
        python,
        REQUIREMENTS.read_text(),
        *groundhog_requirements(),
        Path(__file__).read_text(),
    ]
    return hashlib.sha256("\n".join(parts).encode()).hexdigest()


@contextmanager
def _locked() -> Iterator[None]:
    with LOCK.open("a") as handle:
        fcntl.flock(handle, fcntl.LOCK_EX)  # released when the file closes
        yield


def _uv() -> str | None:
    beside = Path(sys.executable).parent / "uv"
    return str(beside) if beside.is_file() else shutil.which("uv")


def _run(command: list[str]) -> None:
    done = subprocess.run(command, capture_output=True, text=True, cwd=REPO_ROOT)
    if done.returncode == 0:
        return
    output = (done.stdout + done.stderr)[-4000:]
    if NO_NETWORK.search(output):
        raise TrlVenvUnavailable(f"the package index cannot be reached: {output[-600:]}")
    raise RuntimeError(f"{' '.join(command)} failed ({done.returncode}):\n{output}")


def _build(python: str, wheel: Path) -> None:
    shutil.rmtree(VENV, ignore_errors=True)
    packages = [str(wheel), "-r", str(REQUIREMENTS), *groundhog_requirements()]
    uv = _uv()
    target = str(VENV / "bin" / "python")
    # No bytecode at install (`--compile-bytecode` cost ~70 s of CPU here, all of torch): the
    # test lets its first run write what it imports (~30 s of CPU, then ~13 s per run).
    if uv:
        _run([uv, "venv", "--quiet", "--python", python, str(VENV)])
        _run([uv, "pip", "install", "--quiet", "--python", target, *packages])
    else:
        _run([python, "-m", "venv", str(VENV)])
        _run([target, "-m", "pip", "install", "--quiet", *packages])


def ensure() -> Path:
    """The TRL venv's interpreter, built first if missing or built from other inputs."""
    wheel = torch_wheel()
    python = find_python(wheel_python_version(wheel))
    digest = _digest(wheel, python)
    stamp = VENV / STAMP_NAME
    with _locked():
        if not (stamp.is_file() and stamp.read_text() == digest):
            _build(python, wheel)
            stamp.write_text(digest)
    return VENV / "bin" / "python"


if __name__ == "__main__":
    print(ensure())
