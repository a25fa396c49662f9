"""Dependencies where they belong: the worker side installs light, every import is declared.

Checked statically against pyproject.toml (building and installing a wheel in a fresh venv per
run would cost the suite minutes): each module's third-party imports must be covered by the
requirements of the install that runs it, and the client CLI must start without the services'
heavy packages.
"""

from __future__ import annotations

import ast
import importlib.metadata
import json
import re
import subprocess
import sys
import tomllib
from pathlib import Path

from tests.support.servers import REPO_ROOT

PROJECT = tomllib.loads((REPO_ROOT / "pyproject.toml").read_text())["project"]
LOCAL = {
    "groundhog",
    "engine",
    "services",
    "resolver",
    "store",
    "proxy",
    "worldsim",
    "bench",
    "tests",
    "examples",
}
HEAVY = {
    "sqlalchemy", "mitmproxy", "fastapi", "uvicorn", "alembic", "numpy", "scipy", "pyarrow",
    "pandas", "huggingface_hub",
}  # fmt: skip
IMPORT_TO_DISTRIBUTIONS = importlib.metadata.packages_distributions()


def requirement_names(requirements: list[str]) -> set[str]:
    names = set()
    for requirement in requirements:
        name = re.split(r"[<>=!~\[; ]", requirement, maxsplit=1)[0]
        names.add(name.lower().replace("_", "-"))
    return names


def extra(name: str) -> set[str]:
    return requirement_names(PROJECT["optional-dependencies"][name])


CORE = requirement_names(PROJECT["dependencies"])
INSTALLS = {
    "core": CORE,
    "services": CORE | extra("services"),
    "bench": CORE | extra("services") | extra("bench"),
    "reliability": CORE | extra("services") | extra("bench") | extra("reliability"),
    "datasets": CORE | extra("datasets"),
    "hub": CORE | extra("datasets") | extra("hub"),
    # A framework integration imports its framework on use, from the framework's own extra.
    "integrations": CORE | extra("services") | extra("verifiers") | extra("art"),
}


def third_party_imports(path: Path, *, module_level_only: bool) -> set[str]:
    tree = ast.parse(path.read_text())
    nodes = tree.body if module_level_only else list(ast.walk(tree))
    roots = set()
    for node in nodes:
        if isinstance(node, ast.Import):
            roots |= {alias.name.split(".")[0] for alias in node.names}
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            roots.add(node.module.split(".")[0])
    return {
        root
        for root in roots
        if root not in sys.stdlib_module_names and root not in LOCAL and root != "__future__"
    }


def distributions(import_name: str) -> set[str]:
    found = IMPORT_TO_DISTRIBUTIONS.get(import_name, [import_name])
    return {name.lower().replace("_", "-") for name in found}


def undeclared(paths: list[Path], install: str, *, module_level_only: bool) -> list[str]:
    allowed = INSTALLS[install]
    missing = []
    for path in paths:
        for name in third_party_imports(path, module_level_only=module_level_only):
            if not distributions(name) & allowed:
                missing.append(f"{path.relative_to(REPO_ROOT)} imports {name}")
    return missing


def sources(package: str) -> list[Path]:
    return sorted((REPO_ROOT / package).rglob("*.py"))


def test_the_core_install_has_none_of_the_services_packages() -> None:
    assert not CORE & {"mitmproxy", "fastapi", "sqlalchemy", "numpy", "scipy", "uvicorn"}, CORE
    assert PROJECT["name"] == "groundhog-rl", "`groundhog` on PyPI is an unrelated package"


def test_the_worker_side_imports_only_core_requirements_at_module_level() -> None:
    # Functions may import a service package on use (`groundhog migrate` needs SQLAlchemy).
    worker = [path for path in sources("groundhog") if "dataset" not in path.parts]
    assert undeclared(worker, "core", module_level_only=True) == []
    assert undeclared(worker, "integrations", module_level_only=False) == []


def test_publishing_needs_only_the_datasets_extra_and_the_hub_upload_its_own() -> None:
    hub = [REPO_ROOT / "groundhog" / "dataset" / "hub.py"]
    publishing = [path for path in sources("groundhog/dataset") if path not in hub]
    assert undeclared(publishing, "datasets", module_level_only=False) == []
    assert undeclared(hub, "hub", module_level_only=False) == []
    # `tape import DIR` reads a folder's layout on the core install.
    assert (
        undeclared([REPO_ROOT / "groundhog/dataset/folder.py"], "core", module_level_only=False)
        == []
    )
    assert "datasets" in extra("dev") and "pyarrow" in extra("datasets")


def test_every_service_import_is_declared() -> None:
    paths = [
        path
        for package in ("engine", "services", "resolver", "store", "proxy", "worldsim")
        for path in sources(package)
    ]
    assert undeclared(paths, "services", module_level_only=False) == []


def test_the_benchmark_needs_only_its_extra_and_fuzzing_its_own() -> None:
    reliability = REPO_ROOT / "bench" / "reliability"
    fuzzers = [reliability / "fuzz.py"]
    bench = [path for path in sources("bench") if path not in fuzzers]
    assert undeclared(bench, "bench", module_level_only=False) == []
    assert undeclared(fuzzers, "reliability", module_level_only=False) == []
    importers = [
        path.relative_to(REPO_ROOT)
        for path in bench
        if "bench.reliability.fuzz"
        in {
            node.module
            for node in ast.parse(path.read_text()).body
            if isinstance(node, ast.ImportFrom)
        }
    ]
    assert importers == [], "bench.reliability must run without hypothesis and schemathesis"


# Examples that are themselves services (a miss simulator is a small web app the user runs
# beside the resolver) need the services extra; every worker-side example needs only core.
SERVICE_EXAMPLES = {"simulator.py"}


def test_the_examples_run_on_the_core_install() -> None:
    examples = sources("examples")
    workers = [path for path in examples if path.name not in SERVICE_EXAMPLES]
    services = [path for path in examples if path.name in SERVICE_EXAMPLES]
    assert services, "the service examples were renamed: update SERVICE_EXAMPLES"
    assert undeclared(workers, "core", module_level_only=False) == []
    assert undeclared(services, "services", module_level_only=False) == []


PROBE = """
import json, sys
from groundhog.cli import main
sys.argv = ["groundhog", *json.loads(sys.argv[1])]
try:
    main()
except SystemExit:
    pass
print(json.dumps(sorted(name for name in sys.modules if name.split(".")[0] in {heavy})))
"""


def loaded_heavy_modules(*args: str, env: dict[str, str] | None = None) -> list[str]:
    code = PROBE.format(heavy=sorted(HEAVY))
    done = subprocess.run(
        [sys.executable, "-c", code, json.dumps(list(args))],
        capture_output=True,
        text=True,
        cwd=REPO_ROOT,
        env=env,
        timeout=120,
    )
    return json.loads(done.stdout.strip().splitlines()[-1])


def test_client_commands_start_without_the_services_packages() -> None:
    assert loaded_heavy_modules("--help") == []
    assert loaded_heavy_modules("tape", "ls", "--help") == []
    assert loaded_heavy_modules("tape", "publish", "--help") == []
    # Against a resolver that is not there: the command runs to its error, still light.
    env = {"GROUNDHOG_RESOLVER_URL": "http://127.0.0.1:9", "PATH": "/usr/bin:/bin"}
    assert loaded_heavy_modules("tape", "ls", env=env) == []
    assert loaded_heavy_modules("env", "--tape", "t", env=env) == []


def test_the_protocol_is_standard_library_only() -> None:
    # Proxy, resolver, client, bench and worldsim all import it: it must not pull a service in.
    for path in sources("groundhog/protocol"):
        assert third_party_imports(path, module_level_only=False) == set(), path


def test_an_undeclared_import_is_caught(tmp_path: Path) -> None:
    # The checks above must be able to fail: a module importing what no install declares.
    module = REPO_ROOT / "groundhog" / "_undeclared_probe.py"
    module.write_text("import playwright\nimport certifi\n\n\ndef later():\n    import numpy\n")
    try:
        assert undeclared([module], "core", module_level_only=True) == [
            "groundhog/_undeclared_probe.py imports playwright"
        ]
        assert sorted(undeclared([module], "core", module_level_only=False)) == [
            "groundhog/_undeclared_probe.py imports numpy",
            "groundhog/_undeclared_probe.py imports playwright",
        ]
        assert undeclared([module], "bench", module_level_only=False) == [
            "groundhog/_undeclared_probe.py imports playwright"
        ]
    finally:
        module.unlink()


def test_the_type_checker_is_a_dev_requirement_and_runs_in_make_test() -> None:
    assert "mypy" in extra("dev")
    makefile = (REPO_ROOT / "Makefile").read_text()
    test_target = makefile.split("\ntest:", 1)[1].split("\n\n", 1)[0]
    assert "$(BIN)/mypy" in test_target
