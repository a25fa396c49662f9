"""A verifiers v1 taskset for tests/groundhog/test_verifiers_v1.py: one task, fetch a URL.

verifiers loads a taskset by module name (`--env.taskset.id`), a module exporting its `Taskset`
subclass via `__all__`; the task's URL is set per test through `FetchTaskset.url`.
"""

from __future__ import annotations

from collections.abc import Iterable

import verifiers.v1 as vf


class FetchData(vf.TaskData):
    url: str = ""


class FetchTask(vf.Task[FetchData]):
    pass


class FetchTaskset(vf.Taskset[FetchTask]):
    url = ""  # set by the test before the env is built

    def load(self) -> Iterable[FetchTask]:
        yield FetchTask(FetchData(prompt="What does the page say?", url=self.url))


__all__ = ["FetchTaskset"]
