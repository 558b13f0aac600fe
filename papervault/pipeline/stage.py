"""A stage and a pipeline: what an operation declares, nothing of how it runs.

A `Stage` is a name, a function of the run's context and a typed input, whether it fans out (then its input
is a list, one item per paper, section or batch, and the function runs once per item), its cache key, its
retries, and where its input comes from and where its output goes in the run's state (`given`, `then`, both
in the writer's process). A stage marked `writer` writes the vault or the index: it runs in the writer's
process, where it may fan parts out through the run (`Run.map`); any other stage only computes and returns, so
an executor may ship it to a thread, a process or a Dask worker.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Callable


@dataclass(frozen=True)
class Stage:
    name: str
    fn: Callable[[Any, Any], Any]                    # fn(context, input) -> output (a writer gets the Run)
    per_paper: bool = False                           # fans out: `fn` once per item of its (list) input
    cache_key: Callable[[Any, Any], str | None] | None = None   # (context, input) -> key; None: never cached
    retries: int = 0
    retry_delay: float = 0.0
    writer: bool = False                              # writes: runs in the writer's process, never shipped
    threads: bool = True                              # per-paper items may run side by side in threads
    given: Callable[[Any], Any] | None = None         # state -> input (None: the state itself)
    then: Callable[[Any, Any], None] | None = None    # (state, output): artefacts, commits, the next input
    parts: tuple["Stage", ...] = ()                   # the per-item stages a writer fans out through the run
    doc: str = ""


@dataclass(frozen=True)
class Pipeline:
    """An operation: its stages in the order they run."""
    name: str
    stages: tuple[Stage, ...]
    doc: str = ""

    def stage(self, name: str) -> Stage:
        for s in self.stages:
            for one in (s, *s.parts):
                if one.name == name:
                    return one
        raise KeyError(f"{self.name} has no stage {name!r}")


@dataclass
class Failed:
    """One item of a fanned-out stage that failed after its retries: that item's problem, not the run's."""
    item: Any
    error: str
    kind: str = field(default="")

    @classmethod
    def of(cls, item: Any, exc: BaseException) -> "Failed":
        return cls(item, f"{type(exc).__name__}: {' '.join(str(exc).split())[:300]}", type(exc).__name__)
