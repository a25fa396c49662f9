"""A small Dockerfile reader: stages, their instructions and the final image's promises.

There is no Docker engine where the tests run, so the Dockerfile cannot be built to prove it
is multi-stage, non-root and health-checked. Reading it the way BuildKit does (comments
dropped, backslash continuations joined, `ARG`s before the first `FROM` substituted into
`FROM`) lets tests/deploy/test_dockerfile.py check those promises on every run.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field
from pathlib import Path

_VARIABLE = re.compile(
    r"\$\{(?P<braced>[A-Za-z_][A-Za-z0-9_]*)\}|\$(?P<bare>[A-Za-z_][A-Za-z0-9_]*)"
)


class DockerfileError(ValueError):
    """The Dockerfile cannot be read as a sequence of stages."""


@dataclass(frozen=True)
class Instruction:
    keyword: str
    arguments: str
    line: int

    def exec_form(self) -> list[str] | None:
        """The JSON array of an exec-form CMD/ENTRYPOINT/RUN, or None for the shell form."""
        text = re.sub(r"^(?:--\S+\s+)*", "", self.arguments)
        if self.keyword == "HEALTHCHECK":
            text = re.sub(r"^CMD\s+", "", text, flags=re.I)
        if not text.startswith("["):
            return None
        try:
            value = json.loads(text)
        except json.JSONDecodeError:
            return None
        return value if isinstance(value, list) else None

    def flags(self) -> dict[str, str]:
        """The leading `--name=value` flags (COPY --from=builder, HEALTHCHECK --interval=…)."""
        found: dict[str, str] = {}
        for match in re.finditer(r"--([a-z-]+)=(\S+)", self.arguments):
            found[match.group(1)] = match.group(2)
        return found


@dataclass
class Stage:
    base: str
    name: str | None
    line: int
    instructions: list[Instruction] = field(default_factory=list)

    def all(self, keyword: str) -> list[Instruction]:
        return [item for item in self.instructions if item.keyword == keyword.upper()]

    def last(self, keyword: str) -> Instruction | None:
        found = self.all(keyword)
        return found[-1] if found else None

    def environment(self) -> dict[str, str]:
        """The stage's ENV settings, in the `KEY=value` form (the only one this repo uses)."""
        values: dict[str, str] = {}
        for item in self.all("ENV"):
            for key, value in re.findall(r"([A-Za-z_][A-Za-z0-9_]*)=(\S*)", item.arguments):
                values[key] = value
        return values


@dataclass
class Dockerfile:
    global_args: dict[str, str]
    stages: list[Stage]

    @property
    def final(self) -> Stage:
        return self.stages[-1]

    def stage(self, name: str) -> Stage:
        for stage in self.stages:
            if stage.name == name:
                return stage
        raise KeyError(f"no stage named {name!r}; stages: {[s.name for s in self.stages]}")


def logical_lines(text: str) -> list[tuple[int, str]]:
    """Join continuations and drop comments and blank lines; keep each start's line number."""
    joined: list[tuple[int, str]] = []
    pending: list[str] = []
    start = 0
    for number, raw in enumerate(text.splitlines(), start=1):
        stripped = raw.strip()
        if not stripped or stripped.startswith("#"):
            # Comment and blank lines vanish even inside a continuation, as in BuildKit.
            continue
        if not pending:
            start = number
        if stripped.endswith("\\"):
            pending.append(stripped[:-1].strip())
            continue
        pending.append(stripped)
        joined.append((start, " ".join(part for part in pending if part)))
        pending = []
    if pending:
        raise DockerfileError(f"line {start}: the file ends inside a backslash continuation")
    return joined


def substitute(text: str, variables: dict[str, str]) -> str:
    def replace(match: re.Match[str]) -> str:
        name = match.group("braced") or match.group("bare")
        return variables.get(name, match.group(0))

    return _VARIABLE.sub(replace, text)


def parse(text: str) -> Dockerfile:
    global_args: dict[str, str] = {}
    stages: list[Stage] = []
    for number, line in logical_lines(text):
        keyword, _, arguments = line.partition(" ")
        keyword = keyword.upper()
        arguments = arguments.strip()
        if keyword == "FROM":
            match = re.fullmatch(r"(?:--platform=\S+\s+)?(\S+)(?:\s+AS\s+(\S+))?", arguments, re.I)
            if match is None:
                raise DockerfileError(f"line {number}: cannot read FROM {arguments!r}")
            base = substitute(match.group(1), global_args)
            stages.append(Stage(base=base, name=match.group(2), line=number))
        elif not stages:
            if keyword != "ARG":
                raise DockerfileError(f"line {number}: {keyword} before the first FROM")
            name, _, default = arguments.partition("=")
            global_args[name.strip()] = default.strip()
        else:
            stages[-1].instructions.append(Instruction(keyword, arguments, number))
    if not stages:
        raise DockerfileError("no FROM: not a Dockerfile")
    return Dockerfile(global_args=global_args, stages=stages)


def load(path: Path) -> Dockerfile:
    return parse(path.read_text())
