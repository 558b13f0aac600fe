"""The one runner: a pipeline's stages in order, each through the executor the run was given.

    state --given--> input --executor--> output --then--> state      (per stage, in the declared order)

`run` is how every operation runs, whatever the executor: the in-process one (`executors.InProcess`), or
Prefect's (`flows/executor.py`), on threads or a Dask cluster. The state is the operation's own typed object;
it may set `stopped` to end the run after a stage (`survey --select-only`).
"""

from __future__ import annotations

import logging
import time
from typing import Any, Callable

from papervault.pipeline.stage import Failed, Pipeline, Stage

OnStage = Callable[[str, float], None]      # told as each stage ends: (name, seconds)


class Run:
    """One run of a pipeline: its context (the typed settings object every stage is given, and the one thing
    that travels to workers), its executor, and the time of each stage."""

    def __init__(self, pipeline: Pipeline, context: Any, executor: Any, on_stage: OnStage | None = None):
        self.pipeline, self.context, self.executor, self.on_stage = pipeline, context, executor, on_stage
        self.timings: dict[str, float] = {}

    @property
    def distributed(self) -> bool:
        """Whether fanned-out parts go to the executor's workers (else the library's own pools run them)."""
        return bool(getattr(self.executor, "distributed", False))

    @property
    def log(self) -> logging.Logger:
        return self.executor.logger(logging.getLogger(f"papervault.{self.pipeline.name}"))

    def call(self, stage: Stage, given: Any) -> Any:
        """One stage on one input: a writer here, with this run; any other through the executor."""
        if stage.writer:
            return stage.fn(self, given)
        return self.executor.call(stage, self.context, given)

    def map(self, stage: Stage, items: list[Any]) -> list[Any]:
        """A fanned-out stage over `items`, results in their order; an item that failed is a `Failed`."""
        if not items:
            return []
        return self.executor.map(stage, self.context, list(items))

    def execute(self, stage: Stage, given: Any) -> Any:
        return self.map(stage, given) if stage.per_paper else self.call(stage, given)

    def artifact(self, kind: str, key: str, content: Any, description: str) -> None:
        """A table or document worth showing beside the run (an orchestrator's UI); nothing in process."""
        self.executor.artifact(kind, key, content, description)


def run(pipeline: Pipeline, context: Any, state: Any, executor: Any, *, on_stage: OnStage | None = None) -> Run:
    """Run `pipeline`'s stages in order over `state` (which gets `state.run`); returns the run (its timings)."""
    r = Run(pipeline, context, executor, on_stage)
    state.run = r
    for stage in pipeline.stages:
        if getattr(state, "stopped", False):
            break
        t0 = time.perf_counter()
        out = r.execute(stage, stage.given(state) if stage.given else state)
        if stage.then:
            stage.then(state, out)
        r.timings[stage.name] = round(time.perf_counter() - t0, 2)
        if on_stage is not None:
            on_stage(stage.name, r.timings[stage.name])
    return r


def results(outputs: list[Any], failed: Callable[[Any, Failed], Any]) -> list[Any]:
    """The outputs of a fanned-out stage with each `Failed` item turned into `failed(item, failure)`."""
    return [failed(o.item, o) if isinstance(o, Failed) else o for o in outputs]
