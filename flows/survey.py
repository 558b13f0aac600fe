"""The Prefect flow `survey`: the survey's declaration (`papervault.app.surveyplan.SURVEY`) run by the Prefect
executor, each stage a task (retries, cache keys, per-paper and per-section stages mapped over the task runner).

A run that dies resumes where it stopped: parsed papers have their `paper.md`, analysed papers a current note
(skipped by the analyser), and the cross-paper stages are cached by the content hash of everything they read,
the workspace's own survey templates included.
"""

from __future__ import annotations

import os
from typing import Any

# The temporary local API server Prefect starts for an in-process run needs more than its default 20 s on a
# busy machine the first time (it creates its database); this must be set before Prefect reads its settings.
os.environ.setdefault("PREFECT_SERVER_EPHEMERAL_STARTUP_TIMEOUT_SECONDS", "180")

from prefect import flow  # noqa: E402
from prefect.task_runners import ThreadPoolTaskRunner  # noqa: E402

from flows import runner  # noqa: E402
from flows.executor import PrefectExecutor  # noqa: E402
from papervault.app.surveyplan import run_survey as run_declared  # noqa: E402
from papervault.workspace import Workspace  # noqa: E402


@flow(name="survey", task_runner=ThreadPoolTaskRunner(max_workers=4), log_prints=True)
def survey(topic: str, slug: str | None = None, papers: list[str] | None = None, backend: str | None = None,
           workspace: str | None = None, arxiv_max: int = 10, threshold: float | None = None,
           max_papers: int | None = None, progress: Any = None) -> dict[str, Any]:
    """Write a literature survey of vault papers on `topic` into `vault/surveys/<slug>/`. `progress(stage,
    seconds)`, handed down by the CLI when it runs the flow in its own process, is told as each stage ends."""
    ws = Workspace.resolve(workspace).require()
    return run_declared(ws, topic, executor=PrefectExecutor(), on_stage=progress, slug=slug, papers=papers,
                        backend=backend, arxiv_max=arxiv_max, threshold=threshold, max_papers=max_papers)


def run_survey(topic: str, *, task_runner: str = "thread", workers: int | None = None,
               dask_address: str | None = None, **params: Any) -> dict[str, Any]:
    """Run the flow in this process with the chosen task runner (`flows.runner.run`): threads, a local Dask
    cluster of `workers` processes, or the existing one at `dask_address`."""
    # two threads per local Dask worker process: the survey's tasks mostly wait on a model or the disk
    return runner.run(survey, kind=task_runner, workers=workers, address=dask_address, threads_per_worker=2,
                      topic=topic, **params)
