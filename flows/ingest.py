"""The Prefect flows `add` and `index`: the heavy per-paper work spread by a task runner, the writes in one place.

`add` maps the parse of each PDF (text, layout, OCR) and then the analysis of each new paper over the flow's task
runner; `index` maps the embedding batches. Workers only compute and return: parsed papers, notes, vectors. On a
Dask worker each PDF is parsed in a child process, so one that hangs is abandoned after `[parse] timeout` and
becomes that paper's problem while the batch goes on. The flow's own process is the single writer:
it runs the same library functions as the plain CLI (`papervault.app.adding.add`, `PaperIndex.sync`) under the
workspace write lock, writes the vault, makes the one commit and merges the rows into the index. The result is
the in-process result: the same notes, the same chunk ids, the same vectors (the batches are the same).

Task runners: threads (default), or a Dask cluster (`task_runner="dask"`: a local one of `workers` processes,
or an existing one at `dask_address`). Deployments of both flows are in prefect.yaml; their runs use the
scheduler at PAPERVAULT_DASK_ADDRESS when the work pool sets it, threads otherwise.
"""

from __future__ import annotations

import multiprocessing as mp
import os
import time
from functools import partial
from pathlib import Path
from typing import Any

os.environ.setdefault("PREFECT_SERVER_EPHEMERAL_STARTUP_TIMEOUT_SECONDS", "180")

from prefect import flow, get_run_logger, task, unmapped  # noqa: E402
from prefect.task_runners import ThreadPoolTaskRunner  # noqa: E402

from flows import runner  # noqa: E402
from papervault.agents import registered  # noqa: E402
from papervault.app.indexing import update_index  # noqa: E402
from papervault.app.adding import add as app_add  # noqa: E402
from papervault.config import EmbedSettings, ParseSettings  # noqa: E402
from papervault.errors import ParseError  # noqa: E402
from papervault.workspace import Workspace  # noqa: E402


# --- tasks: pure computation, nothing written to the vault or the index -----------------------------------

@task(name="parse-pdf", retries=1, retry_delay_seconds=2)
def parse_pdf(path: str, settings: dict, cache_dir: str | None):
    """Parse one PDF (through the shared parse cache when the workers can see it); a ParsedPaper, or the
    error as a plain tuple (it crosses process boundaries)."""
    from papervault.parse.batch import parse_in_child, parse_many  # deferred: PyMuPDF, only where PDFs are parsed

    if mp.current_process().daemon:
        # A Dask worker process may not start multiprocessing children, but may start a plain subprocess: the
        # file is parsed in one (kept for the next file), so a file that hangs is abandoned after the timeout.
        return parse_in_child(path, settings, cache_dir)
    # On threads: PyMuPDF is not thread-safe, so each file goes to its own process, with the parse timeout.
    out = parse_many([path], ParseSettings(**settings), cache_dir=Path(cache_dir) if cache_dir else None,
                     workers=1)[path]
    return ("error", out.reason, out.fix) if isinstance(out, ParseError) else out


@task(name="embed-batch", retries=1, retry_delay_seconds=2)
def embed_batch(texts: list[str], settings: dict):
    """Vectors of one batch of chunk texts, with the workspace's embedding settings (model loaded once per
    worker process)."""
    from papervault.index.embed import Embedder  # deferred: pyarrow and fastembed, only where batches are embedded

    return Embedder(EmbedSettings(**settings)).embed(texts)


@task(name="embed-multilingual-batch", retries=1, retry_delay_seconds=2)
def embed_ml_batch(texts: list[str], vector_cache: str | None):
    """Vectors of one batch of texts in the multilingual space (index/multilingual.py; the encoder loaded once
    per worker process)."""
    from papervault.index.multilingual import MultilingualEmbedder  # deferred: as Embedder above

    return MultilingualEmbedder(vector_cache).embed(texts)


@task(name="analyse-paper", retries=0)
def analyse_paper(job: dict, backend: str, settings: dict, state_dir: str | None) -> dict:
    """One paper's analysis (`papervault.note_analysis.run_job`): the note's metadata and body back, or the
    error; the flow's process writes it. The backend is built once per worker process.

    The function refers to no global of this module: a task runner may ship it by value (a Dask worker), and a
    global holding a built backend (locks, clients) could not travel."""
    # deferred: imported where the task runs, since it refers to no global of this module (above)
    from papervault.note_analysis import run_job, worker_backend

    return run_job(job, worker_backend(backend, settings, state_dir))


def _analyse_mapped(ws: Workspace, progress=None):
    """`papervault.ingest.AnalyseFn` over the task runner, with the workspace's agent settings."""
    def analyse(jobs: list[dict], backend: str) -> list[dict]:
        # the analyser's sections only: the agent settings and the backend's own (never the whole configuration)
        names = ["agents"] + [n for n in ("claude", "openai") if n == backend and n in registered()]
        settings = {n: getattr(ws.settings, n).model_dump() for n in names}
        futures = analyse_paper.map(jobs, unmapped(backend), unmapped(settings), unmapped(str(ws.state_dir)))
        out = []
        for n, (job, fut) in enumerate(zip(jobs, futures), 1):
            try:
                out.append(fut.result())
            except Exception as exc:  # the task itself failed: that paper's problem, not the run's
                out.append({"paper_id": job["paper_id"], "error": f"analysis task failed ({type(exc).__name__}: "
                                                                  f"{str(exc)[:160]})"})
            if progress:
                progress("analyse", n, len(jobs))
        return out
    return analyse


def _parse_mapped(paths: list[str], settings, cache_dir, progress=None) -> dict:
    """`papervault.ingest.ParseFn` over the task runner: {path: ParsedPaper | ParseError}, in input order."""
    from papervault.parse.batch import _result  # deferred: PyMuPDF, not for the index flow

    futures = parse_pdf.map(paths, unmapped(settings.model_dump()), unmapped(str(cache_dir) if cache_dir else None))
    out = {}
    for n, (path, fut) in enumerate(zip(paths, futures), 1):
        try:
            out[path] = _result(path, fut.result())
        except Exception as exc:  # the task failed after its retry: that file's problem, not the run's
            out[path] = _result(path, ("error", f"parse task failed ({type(exc).__name__}: {str(exc)[:160]})",
                                       "run `papervault add` on that file alone to see the error"))
        if progress:
            progress("parse", n, len(paths))
    return out


def _embed_mapped(embed_task, arg):
    """An `embed_batches` for PaperIndex: each batch of texts to `embed_task(texts, arg)` on the task runner."""
    def embed_batches(batches: list[list[str]]):
        return [f.result() for f in embed_task.map(batches, unmapped(arg))]
    return embed_batches


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
    """Import papers like `papervault add` (the same `papervault.app.adding.add`, which ends with the papers
    searchable unless `index` is False), parsing, analysing and embedding on the task runner; one vault commit.
    Returns the AddReport itself: the CLI prints it as it prints an in-process add."""
    from papervault.index.embed import workspace_embed_settings  # deferred: pyarrow, only when the flow runs

    ws = Workspace.resolve(workspace).require()
    progress = _progress(progress)
    embed = workspace_embed_settings(ws)
    return app_add(ws, list(inputs), backend=backend, reanalyse=reanalyse, progress=progress,
                   parse_fn=partial(_parse_mapped, progress=progress), analyse_fn=_analyse_mapped(ws, progress),
                   index=index, embed_batches=_embed_mapped(embed_batch, embed.model_dump()),
                   embed_ml_batches=_embed_mapped(embed_ml_batch, embed.vector_cache))


@flow(name="index", task_runner=_default_runner(), log_prints=True)
def index(workspace: str | None = None, rebuild: bool = False, progress: Any = None) -> dict[str, Any]:
    """Bring the index in step with the vault like `papervault index`, embedding the batches on the task runner."""
    from papervault.index.embed import workspace_embed_settings  # deferred: pyarrow, not for the add flow

    ws = Workspace.resolve(workspace).require()
    # the settings the index runs with (its recorded model and precision when papervault.toml is silent)
    settings = workspace_embed_settings(ws)
    # every vector before the flow ends (no background fill); code is embedded here: repositories are few
    return update_index(ws, rebuild=rebuild, progress=_progress(progress),
                        embed_batches=_embed_mapped(embed_batch, settings.model_dump()),
                        embed_ml_batches=_embed_mapped(embed_ml_batch, settings.vector_cache))


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
