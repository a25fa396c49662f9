"""Stand-ins for `datetime.datetime` and `datetime.date` whose now/utcnow/today read the shim.

`datetime.datetime` is a C type: its `now` cannot be patched, so the module attribute is
replaced by a subclass. Without the pass-through metaclass, every datetime made before
installation (or by C code) would fail `isinstance(x, datetime.datetime)` while the shim is on.
Constructors hand back instances of the real classes, so values pickle, compare and subtract
exactly as before; only `type(x) is datetime.datetime` tells the difference.
"""

from __future__ import annotations

import datetime as _datetime_module
from typing import Any

from groundhog.shim.context import active

REAL_DATETIME = _datetime_module.datetime
REAL_DATE = _datetime_module.date


class _PassThroughMeta(type):
    """isinstance/issubclass against the stand-in answer as for the real class."""

    _real: type

    def __instancecheck__(cls, instance: object) -> bool:
        return isinstance(instance, cls._real)

    def __subclasscheck__(cls, subclass: type) -> bool:
        return issubclass(subclass, cls._real)


def _virtual_datetime(tz: _datetime_module.tzinfo | None) -> _datetime_module.datetime | None:
    state = active()
    if state is None:
        return None
    wall_ns = state.wall_ns()
    seconds, remainder_ns = divmod(wall_ns, 10**9)
    moment = REAL_DATETIME.fromtimestamp(seconds, tz)
    return moment.replace(microsecond=remainder_ns // 1000)


class ShimDatetime(REAL_DATETIME, metaclass=_PassThroughMeta):
    """`datetime.datetime` while the shim is installed."""

    _real = REAL_DATETIME

    def __new__(cls, *args: Any, **kwargs: Any) -> Any:
        return REAL_DATETIME(*args, **kwargs)

    @classmethod
    def now(cls, tz: _datetime_module.tzinfo | None = None) -> Any:
        virtual = _virtual_datetime(tz)
        return REAL_DATETIME.now(tz) if virtual is None else virtual

    @classmethod
    def utcnow(cls) -> Any:
        virtual = _virtual_datetime(_datetime_module.UTC)
        if virtual is None:
            return REAL_DATETIME.now(_datetime_module.UTC).replace(tzinfo=None)
        return virtual.replace(tzinfo=None)

    @classmethod
    def today(cls) -> Any:
        return cls.now()


class ShimDate(REAL_DATE, metaclass=_PassThroughMeta):
    """`datetime.date` while the shim is installed."""

    _real = REAL_DATE

    def __new__(cls, *args: Any, **kwargs: Any) -> Any:
        return REAL_DATE(*args, **kwargs)

    @classmethod
    def today(cls) -> Any:
        virtual = _virtual_datetime(None)
        return REAL_DATE.today() if virtual is None else virtual.date()
