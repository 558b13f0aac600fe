"""The Prefect executor: every stage of a pipeline (`papervault.pipeline`) as a Prefect task, inside the flow run
of its operation (`flows/survey.py`, `flows/ingest.py`, `flows/sync.py`).

A stage becomes a task named after it, with the stage's retries and, when the stage declares a cache key, that
key (results persisted, so a run that died resumes where it stopped). A single stage is called in the flow's
process (its output is the writer's next input); a fanned-out stage is mapped over the flow's task runner:
threads, or a Dask cluster (`flows/runner.py`), whose workers get the stage's function, the run's context (the
settings object, never a root to read again) and one item each. An item whose task failed after its retries is
a `Failed`: that item's problem, not the run's. Artefacts become Prefect artifacts; the log is the run's.
"""

from __future__ import annotations

import logging
from typing import Any

from prefect import get_run_logger, task, unmapped
from prefect.artifacts import create_markdown_artifact, create_table_artifact
from prefect.cache_policies import NO_CACHE

from papervault.pipeline.stage import Failed, Stage


def _call(fn, context, item):
    """A stage's function on one input: what every task runs (module-level, so a Dask worker imports it)."""
    return fn(context, item)


def _keyed(stage: Stage):
    """The task's cache key: the stage's own, from the context and the input it was given."""
    def key(_task_context, params) -> str | None:
        return stage.cache_key(params["context"], params["item"])
    return key


class PrefectExecutor:
    """Stages as Prefect tasks on the flow's task runner; fanned-out parts go to its workers (`distributed`)."""
    distributed = True

    def __init__(self):
        self._tasks: dict[str, Any] = {}

    def task_of(self, stage: Stage):
        """The Prefect task of `stage` (made once per run)."""
        if stage.name not in self._tasks:
            options: dict[str, Any] = {"name": stage.name, "retries": stage.retries,
                                       "retry_delay_seconds": stage.retry_delay}
            if stage.cache_key is not None:
                options |= {"cache_key_fn": _keyed(stage), "persist_result": True}
            else:
                options["cache_policy"] = NO_CACHE
            self._tasks[stage.name] = task(**options)(_call)
        return self._tasks[stage.name]

    def call(self, stage: Stage, context: Any, given: Any) -> Any:
        return self.task_of(stage)(stage.fn, context, given)

    def map(self, stage: Stage, context: Any, items: list[Any]) -> list[Any]:
        t = self.task_of(stage)
        if all(isinstance(i, str) for i in items):      # per paper: task runs named by it (`analyse-<paper id>`)
            t = t.with_options(task_run_name=f"{stage.name}-{{item}}")
        futures = t.map(unmapped(stage.fn), unmapped(context), items)
        out = []
        for item, fut in zip(items, futures):
            try:
                out.append(fut.result())
            except Exception as exc:  # the task failed after its retries: that item's problem, not the run's
                out.append(Failed.of(item, exc))
        return out

    def artifact(self, kind: str, key: str, content: Any, description: str) -> None:
        if kind == "table":
            create_table_artifact(key=key, table=content, description=description)
        else:
            create_markdown_artifact(key=key, markdown=content, description=description)

    def logger(self, default: logging.Logger):
        """The flow run's logger (its lines in Prefect's UI); the plain one outside a run."""
        try:
            return get_run_logger()
        except Exception:
            return default
