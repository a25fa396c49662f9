"""Typer's parameter coercion without pydantic for the plain values the CLI parses.

Typer 0.29 coerces every parsed parameter through a pydantic `TypeAdapter` built on first use.
Importing pydantic (its plugin loader scans every installed distribution's entry points) and
building the adapters cost about as much as importing httpx, so `groundhog tape ls` took 2.5x a
bare `python -c "import httpx"`. A string, an integer, a flag or a list of strings needs no
schema: those are taken as they are here, and anything else (paths, choices, ranges, files, a
value that is not plain, such as `--children abc`) still goes through typer's own adapter, with
typer's own error message. On a typer without these internals nothing is patched.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from typer._click import Context
    from typer._coercion import TypeDescriptor
    from typer.core import _TyperParameter

_INTEGER = re.compile(r"[+-]?\d+")
_NOT_PLAIN = object()


def _plain_value(annotation: Any, value: Any) -> Any:
    """`value` as `annotation` when no schema is needed to say so, else `_NOT_PLAIN`."""
    if annotation is str and isinstance(value, str):
        return value
    if annotation is bool and isinstance(value, bool):
        return value
    if annotation is int:
        if isinstance(value, int) and not isinstance(value, bool):
            return value
        if isinstance(value, str) and _INTEGER.fullmatch(value.strip()):
            return int(value)
    plain_list = isinstance(value, list | tuple) and all(isinstance(v, str) for v in value)
    if annotation == list[str] and plain_list:
        return list(value)
    return _NOT_PLAIN


def _is_plain(descriptor: TypeDescriptor) -> bool:
    return (
        descriptor.annotation in (str, int, bool, list[str])
        and descriptor.parameter_info.parser is None
        and not (descriptor.is_path or descriptor.is_choice or descriptor.is_ranged)
        and not descriptor.is_file
    )


def install() -> None:
    """Make typer take plain values without building a pydantic adapter (idempotent)."""
    try:
        from typer import core
        from typer._coercion import RuntimeParam, build_runtime_param
    except ImportError:  # another typer: it coerces as it always did
        return
    parameter = getattr(core, "_TyperParameter", None)
    typer_runtime_param = getattr(parameter, "get_runtime_param", None)
    if parameter is None or typer_runtime_param is None or getattr(parameter, "_plain", False):
        return

    @dataclass(frozen=True)
    class PlainRuntimeParam(RuntimeParam):
        descriptor: TypeDescriptor

        def _coerce_value(self, value: Any, param: _TyperParameter, ctx: Context) -> Any:
            plain = _plain_value(self.annotation, value)
            if plain is not _NOT_PLAIN:
                return plain
            typer_own = build_runtime_param(self.descriptor)
            return typer_own._coerce_value(value, param=param, ctx=ctx)

    def runtime_param(self: _TyperParameter) -> RuntimeParam:
        if self._runtime_param is None and _is_plain(self.type_descriptor):
            descriptor = self.type_descriptor
            self._runtime_param = PlainRuntimeParam(
                parameter_info=descriptor.parameter_info,
                annotation=descriptor.annotation,
                descriptor=descriptor,
            )
        result: RuntimeParam = typer_runtime_param(self)
        return result

    parameter.get_runtime_param = runtime_param
    parameter._plain = True
