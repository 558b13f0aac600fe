"""The Prefect flows `add` and `index`: the declarations `papervault.app.adding.ADD` and
`papervault.app.indexing.INDEX` run by the Prefect executor (`flows/executor.py`).

`add` maps the parse of each PDF (text, layout, OCR) and then the analysis of each new paper over the flow's task
runner; `index` maps the embedding batches. Workers only compute and return: parsed papers, notes, vectors. On a
Dask worker each PDF is parsed in a child process, so one that hangs is abandoned after `[parse] timeout` and
becomes that paper's problem while the batch goes on. The flow's own process is the single writer: it runs the
same stages as the plain CLI under the workspace write lock, writes the vault, makes the one commit and merges
the rows into the index. The result is the in-process result: the same notes, the same chunk ids, the same
vectors (the batches are the same).

Task runners: threads (default), or a Dask cluster (`task_runner="dask"`: a local one of `workers` processes,
or an existing one at `dask_address`). Deployments of both flows are in prefect.yaml; their runs use the
scheduler at PAPERVAULT_DASK_ADDRESS when the work pool sets it, threads otherwise.
"""

from __future__ import annotations

import os
import time
from typing import Any

os.environ.setdefault("PREFECT_SERVER_EPHEMERAL_STARTUP_TIMEOUT_SECONDS", "180")

from prefect import flow, get_run_logger  # noqa: E402
from prefect.task_runners import ThreadPoolTaskRunner  # noqa: E402

from flows import runner  # noqa: E402
from flows.executor import PrefectExecutor  # noqa: E402
from papervault.app.adding import add as app_add  # noqa: E402
from papervault.app.indexing import run_index  # noqa: E402
from papervault.workspace import Workspace  # noqa: E402


# --- progress: the CLI's progress line when run from it, else the flow run's log ---------------------------

def _progress(progress=None):
    """The progress callback `(stage, done, total)` of this flow run: the one the CLI hands down (its terminal
    progress line) when it runs the flow in its own process, else lines in the flow run's log (at most one per
    LOG_EVERY seconds, and the last)."""
    if progress is not None:
        return progress
    logger = get_run_logger()
    last = [0.0]

    def report(stage: str, done: int, total: int | None = None) -> None:
        now = time.monotonic()
        if now - last[0] >= LOG_EVERY or (total and done >= total):
            last[0] = now
            logger.info("%s: %s", stage, f"{done}/{total}" if total else done)
    return report


LOG_EVERY = 10.0


# --- flows: the single writer -----------------------------------------------------------------------------

def _default_runner():
    """Threads, or the Dask scheduler named by PAPERVAULT_DASK_ADDRESS: how a deployment's flow run (whose task
    runner is fixed when this module is imported) reaches a cluster, through the work pool's job variables."""
    address = os.environ.get("PAPERVAULT_DASK_ADDRESS")
    if address:
        from prefect_dask import DaskTaskRunner  # deferred: Dask, optional and heavy, only for a cluster

        return DaskTaskRunner(address=address)
    return ThreadPoolTaskRunner(max_workers=4)


@flow(name="add", task_runner=_default_runner(), log_prints=True)
def add(inputs: list[str], workspace: str | None = None, backend: str | None = None,
        reanalyse: bool = False, progress: Any = None, index: bool = True):
    """Import papers like `papervault add` (the same declaration, which ends with the papers searchable unless
    `index` is False), parsing, analysing and embedding on the task runner; one vault commit.
    Returns the AddReport itself: the CLI prints it as it prints an in-process add."""
    ws = Workspace.resolve(workspace).require()
    return app_add(ws, list(inputs), backend=backend, reanalyse=reanalyse, progress=_progress(progress),
                   index=index, executor=PrefectExecutor())


@flow(name="index", task_runner=_default_runner(), log_prints=True)
def index(workspace: str | None = None, rebuild: bool = False, progress: Any = None) -> dict[str, Any]:
    """Bring the index in step with the vault like `papervault index`, embedding the batches on the task runner."""
    ws = Workspace.resolve(workspace).require()
    # every vector before the flow ends (no background fill); code is embedded here: repositories are few
    return run_index(ws, executor=PrefectExecutor(), rebuild=rebuild, progress=_progress(progress))


# --- running them from the CLI ----------------------------------------------------------------------------

# the task runner and the Prefect API for Dask workers are every flow's: flows/runner.py
task_runner = runner.task_runner
_api_for_workers_env = runner.api_for_workers


def run(flow_fn, *, task_runner_kind: str = "thread", workers: int | None = None, dask_address: str | None = None,
        progress=None, **params: Any) -> dict[str, Any]:
    """Run `add` or `index` in this process with the chosen task runner (`flows.runner.run`);
    `progress(stage, done, total)` is handed down to the flow and told how the run goes (the CLI's progress
    line)."""
    # One thread per Dask worker process: ONNX Runtime and PyMuPDF each use a core, so N workers use N cores.
    return runner.run(flow_fn, kind=task_runner_kind, workers=workers, address=dask_address, progress=progress,
                      **params)
