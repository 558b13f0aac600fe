"""The in-process executor: the default of every command (`--task-runner` absent).

A stage is a plain call in this process; a fanned-out stage runs its items in up to `workers` threads (one at a
time when the stage says it is not thread-safe). Parsing and analysis inside `add` keep the library's own
pools (PDFs parsed in worker processes, papers analysed by the concurrent analyser): `distributed` is False.
The Prefect executor (`flows/executor.py`) has the same four methods and runs each stage as a Prefect task
(retries, cache keys, a task runner of threads or a Dask cluster).
"""

from __future__ import annotations

import logging
from concurrent.futures import ThreadPoolExecutor
from typing import Any

from papervault.pipeline.stage import Failed, Stage


class InProcess:
    distributed = False

    def __init__(self, workers: int | None = None):
        self.workers = workers or 4

    def call(self, stage: Stage, context: Any, given: Any) -> Any:
        return stage.fn(context, given)

    def map(self, stage: Stage, context: Any, items: list[Any]) -> list[Any]:
        def one(item: Any) -> Any:
            try:
                return stage.fn(context, item)
            except Exception as exc:  # one item's failure is that item's problem, not the run's
                return Failed.of(item, exc)

        if not stage.threads or self.workers <= 1 or len(items) == 1:
            return [one(i) for i in items]
        with ThreadPoolExecutor(max_workers=min(self.workers, len(items))) as pool:
            return list(pool.map(one, items))

    def artifact(self, kind: str, key: str, content: Any, description: str) -> None:
        """Nothing to show beside an in-process run: its files are its artefacts."""

    def logger(self, default: logging.Logger) -> logging.Logger:
        return default
