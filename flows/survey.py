"""The Prefect flow `survey`: retrieve -> parse -> analyse -> index -> correlate -> outline -> draft -> polish.

Thin task wrappers over the stage functions of `papervault.app.survey` (which also runs a survey without
Prefect): each task adds retries, a cache key and mapping over papers and sections; the survey itself (its
artefacts in `vault/surveys/<slug>/`, one commit per stage, the workspace writer lock) is
`papervault.app.survey.run_stages`. A run that dies resumes where it stopped: parsed papers have their
`paper.md`, analysed papers a current note (skipped by the analyser), and the cross-paper stages are cached by
the content hash of everything they read, the workspace's own survey templates included.
"""

from __future__ import annotations

import os
from typing import Any

# The temporary local API server Prefect starts for an in-process run needs more than its default 20 s on a
# busy machine the first time (it creates its database); this must be set before Prefect reads its settings.
os.environ.setdefault("PREFECT_SERVER_EPHEMERAL_STARTUP_TIMEOUT_SECONDS", "180")

from prefect import flow, get_run_logger, task, unmapped  # noqa: E402
from prefect.artifacts import create_markdown_artifact, create_table_artifact  # noqa: E402
from prefect.task_runners import ThreadPoolTaskRunner  # noqa: E402

from flows import runner  # noqa: E402
from papervault.app import survey as S  # noqa: E402
from papervault.vault.paths import is_safe  # noqa: E402
from papervault.workspace import Workspace  # noqa: E402

STAGE_VERSION = S.STAGE_VERSION
slugify = S.slugify


def _log():
    """The run's logger inside a flow or task run; a plain logger when a task's function is called directly."""
    try:
        return get_run_logger()
    except Exception:
        return S.log


def _fresh(params) -> bool:
    """`survey --no-cache` (`[agents] answer_cache = false`): ask again, so no task result is served either."""
    return not Workspace(params["root"]).settings.agents.answer_cache


def _analyse_key(context, params) -> str | None:
    return None if _fresh(params) else S.analyse_key(params)


def _inputs_key(context, params) -> str | None:
    return None if _fresh(params) else S.cache_key(context.task.name, params)


# --- the tasks: one stage function each ----------------------------------------------------------------

@task(name="retrieve", retries=2, retry_delay_seconds=5)
def retrieve(root: str, specs: list[str], backend: str, slug: str, arxiv_max: int = 10, topic: str = "",
             max_papers: int | None = None) -> dict[str, Any]:
    """Resolve the selection (the topic's papers without specs) and write `selection.md`."""
    return S.retrieve(root, specs, backend, slug, arxiv_max, topic, max_papers)


@task(name="parse", task_run_name="parse-{paper_id}", retries=1, retry_delay_seconds=2)
def parse_paper(root: str, paper_id: str) -> dict[str, Any]:
    """Parse a selected paper that has a PDF but no full text yet."""
    return S.parse_paper(root, paper_id)


@task(name="analyse", task_run_name="analyse-{paper_id}", retries=1, retry_delay_seconds=5, cache_key_fn=_analyse_key, persist_result=True)
def analyse(root: str, paper_id: str, backend: str) -> dict[str, Any]:
    """Analyse one paper into its note (skipped when current)."""
    return S.analyse_paper(root, paper_id, backend)


@task(name="index", retries=1, retry_delay_seconds=5)
def index(root: str, ids: list[str] | None = None) -> dict[str, Any]:
    """Bring the index in step with the selected papers."""
    return S.index(root, ids)


@task(name="correlate", retries=1, cache_key_fn=_inputs_key, persist_result=True)
def correlate(root: str, topic: str, ids: list[str], backend: str, inputs: str) -> dict[str, Any]:
    """Themes, lineages, comparison, consensus, conflict and gaps of the selected papers."""
    return S.correlate(root, topic, ids, backend, inputs)


@task(name="outline", retries=1, cache_key_fn=_inputs_key, persist_result=True)
def outline(root: str, topic: str, ids: list[str], backend: str, correlation: dict[str, Any],
            existing: str | None) -> dict[str, Any]:
    """The outline: a person's edited `outline.md` is kept; otherwise a new one."""
    return S.outline(root, topic, ids, backend, correlation, existing)


@task(name="draft", retries=2, retry_delay_seconds=5, cache_key_fn=_inputs_key, persist_result=True)
def draft(root: str, section: dict[str, Any], topic: str, ids: list[str], backend: str,
          correlation: dict[str, Any], inputs: str) -> dict[str, Any]:
    """One section of the survey."""
    return S.draft(root, section, topic, ids, backend, correlation, inputs)


@task(name="polish", retries=1)
def polish(root: str, slug: str, ids: list[str], body: str, threshold: float) -> dict[str, Any]:
    """Check citations, support, figures, formulas and repeated sentences of the drafted body; fix or flag."""
    return S.polish(root, slug, ids, body, threshold)


# --- the flow --------------------------------------------------------------------------------------

def _gather(futures, ids: list[str]) -> list[dict[str, Any]]:
    """Results of a per-paper map; a task that failed after its retries is one paper's problem, not the run's."""
    out = []
    for pid, f in zip(ids, futures):
        try:
            out.append(f.result())
        except Exception as exc:
            out.append({"id": pid, "status": "failed", "message": f"{type(exc).__name__}: {exc}"})
    return out


class PrefectStages(S.Stages):
    """The stages as Prefect tasks: per-paper and per-section stages mapped, artefacts also Prefect artifacts."""

    def retrieve(self, specs, backend, slug, arxiv_max, topic="", max_papers=None):
        return retrieve(self.root, specs, backend, slug, arxiv_max, topic, max_papers)

    def parse(self, ids):
        return _gather(parse_paper.map(unmapped(self.root), ids), ids)

    def analyse(self, ids, backend):
        return _gather(analyse.map(unmapped(self.root), ids, unmapped(backend)), ids)

    def index(self, ids=None):
        return index(self.root, ids)

    def correlate(self, topic, ids, backend, inputs):
        return correlate(self.root, topic, ids, backend, inputs)

    def outline(self, topic, ids, backend, correlation, existing):
        return outline(self.root, topic, ids, backend, correlation, existing)

    def draft(self, sections, topic, ids, backend, correlation, inputs):
        return [f.result() for f in draft.map(unmapped(self.root), sections, unmapped(topic), unmapped(ids),
                                              unmapped(backend), unmapped(correlation), unmapped(inputs))]

    def polish(self, slug, ids, body, threshold):
        return polish(self.root, slug, ids, body, threshold)

    def table_artifact(self, key, rows, description):
        create_table_artifact(key=key, table=rows, description=description)

    def markdown_artifact(self, key, markdown, description):
        create_markdown_artifact(key=key, markdown=markdown, description=description)

    def log(self):
        return _log()


@flow(name="survey", task_runner=ThreadPoolTaskRunner(max_workers=4), log_prints=True)
def survey(topic: str, slug: str | None = None, papers: list[str] | None = None, backend: str | None = None,
           workspace: str | None = None, arxiv_max: int = 10, threshold: float | None = None,
           max_papers: int | None = None, progress: Any = None) -> dict[str, Any]:
    """Write a literature survey of vault papers on `topic` into `vault/surveys/<slug>/`. `progress(stage,
    seconds)`, handed down by the CLI when it runs the flow in its own process, is told as each stage ends."""
    ws = Workspace.resolve(workspace).require()
    return S.run_stages(PrefectStages(str(ws.root), progress), topic, slug=slug, papers=papers, backend=backend,
                        arxiv_max=arxiv_max, threshold=threshold, max_papers=max_papers)


def run_survey(topic: str, *, task_runner: str = "thread", workers: int | None = None,
               dask_address: str | None = None, **params: Any) -> dict[str, Any]:
    """Run the flow in this process with the chosen task runner (`flows.runner.run`): threads, a local Dask
    cluster of `workers` processes, or the existing one at `dask_address`."""
    # two threads per local Dask worker process: the survey's tasks mostly wait on a model or the disk
    return runner.run(survey, kind=task_runner, workers=workers, address=dask_address, threads_per_worker=2,
                      topic=topic, **params)
