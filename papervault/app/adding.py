"""Bringing papers in, declared once as the pipeline ADD: what `papervault add` (with or without
`--task-runner`), the `add` flow, MCP's `add_paper` and the demo run.

    import (parse* -> analyse* -> write, commit) -> index (embed-batch*)      (* fanned out per paper / batch)

`import` writes the vault (`papervault.ingest`: dedup, notes, one commit or one per `[sources] commit_every`
records); on an executor that spreads parts over workers (Prefect's, on threads or Dask) each PDF's parse and
each new paper's analysis is a task there and this process only writes, while in process the library's own
pools run them (PDFs parsed in worker processes, the concurrent analyser). `index`, the last stage, makes the
papers it brought in searchable through the one index update (`papervault.app.indexing.index_added`).
"""

from __future__ import annotations

import multiprocessing as mp
from dataclasses import dataclass, field
from typing import Any, Callable

from papervault.agents import registered
from papervault.app.context import RunContext
from papervault.app.indexing import EMBED, EMBED_ML, embedding_parts, index_added
from papervault.errors import ParseError
from papervault.ingest import AddReport
from papervault.ingest import add as ingest
from papervault.pipeline.executors import InProcess
from papervault.pipeline.runner import Run, run
from papervault.pipeline.stage import Failed, Pipeline, Stage
from papervault.workspace import Workspace

Progress = Callable[[str, int, int | None], None]


# --- the parts: pure computation, nothing written ----------------------------------------------------

def parse_one(ctx: RunContext, path: str):
    """Parse one PDF (through the shared parse cache when this process can see it): a ParsedPaper, or the
    error as a plain tuple (it crosses process boundaries)."""
    from papervault.parse.batch import parse_in_child, parse_many  # deferred: PyMuPDF, only where PDFs are parsed

    cache = ctx.ws.parse_cache_dir
    if mp.current_process().daemon:
        # A Dask worker process may not start multiprocessing children, but may start a plain subprocess: the
        # file is parsed in one (kept for the next file), so a file that hangs is abandoned after the timeout.
        return parse_in_child(path, ctx.settings.parse.model_dump(), str(cache) if cache else None)
    # On threads: PyMuPDF is not thread-safe, so each file goes to its own process, with the parse timeout.
    out = parse_many([path], ctx.settings.parse, cache_dir=cache, workers=1)[path]
    return ("error", out.reason, out.fix) if isinstance(out, ParseError) else out


def analyse_one(ctx: RunContext, job: dict) -> dict:
    """One paper's analysis (`papervault.note_analysis.run_job`) with the run's backend in this process: the
    note's metadata and body back, or the error; the writer writes it."""
    from papervault.note_analysis import run_job  # deferred: the analyser, only where papers are analysed

    return run_job(job, ctx.backend_for(ctx.backend))


PARSE = Stage("parse-pdf", parse_one, per_paper=True, retries=1, retry_delay=2)
ANALYSE = Stage("analyse-paper", analyse_one, per_paper=True)


def _parse_over(r: Run, progress: Progress | None):
    """`papervault.ingest.ParseFn` over the run's executor: {path: ParsedPaper | ParseError}, in input order."""
    def parse(paths: list[str], _settings, _cache_dir) -> dict:
        from papervault.parse.batch import _result  # deferred: PyMuPDF, only where PDFs are parsed

        out = {}
        for n, (path, got) in enumerate(zip(paths, r.map(PARSE, paths)), 1):
            if isinstance(got, Failed):    # the task failed after its retry: that file's problem, not the run's
                got = ("error", f"parse task failed ({got.error[:200]})",
                       "run `papervault add` on that file alone to see the error")
            out[path] = _result(path, got)
            if progress:
                progress("parse", n, len(paths))
        return out
    return parse


def _analyse_over(r: Run, progress: Progress | None):
    """`papervault.ingest.AnalyseFn` over the run's executor."""
    def analyse(jobs: list[dict], _backend: str) -> list[dict]:
        out = []
        for n, (job, got) in enumerate(zip(jobs, r.map(ANALYSE, jobs)), 1):
            out.append({"paper_id": job["paper_id"], "error": f"analysis task failed ({got.error[:200]})"}
                       if isinstance(got, Failed) else got)
            if progress:
                progress("analyse", n, len(jobs))
        return out
    return analyse


# --- the stages in the writer -------------------------------------------------------------------------

@dataclass
class AddState:
    inputs: list[str]
    progress: Progress | None = None
    options: dict | None = None
    reanalyse: bool = False
    index: bool = True
    wait: bool = False
    report: AddReport | None = None
    run: Run | None = None
    stopped: bool = False
    extra: dict[str, Any] = field(default_factory=dict)


def _import(r: Run, st: AddState) -> AddReport:
    ctx = r.context
    spread = {"parse_fn": _parse_over(r, st.progress), "analyse_fn": _analyse_over(r, st.progress)} \
        if r.distributed else {}
    return ingest(ctx.ws, list(st.inputs), backend=ctx.backend, progress=st.progress, options=st.options,
                  reanalyse=st.reanalyse, first_pass=st.extra.get("first_pass", False), **spread)


def _imported(st: AddState, report: AddReport) -> None:
    st.report = report
    st.stopped = not st.index       # `--no-index`: a later `papervault index` makes them searchable


def _index(r: Run, st: AddState) -> dict:
    rep = st.report
    ids = [*rep.added, *(m["id"] for m in rep.merged if m.get("id")), *rep.reanalysed]
    # first pass: no fill now; the arrival worker starts it once the full parses replaced these paragraphs
    first = {"start_fill": False} if st.extra.get("first_pass") else {}
    return index_added(r.context.ws, ids, wait=st.wait, progress=st.progress, **embedding_parts(r), **first)


def _indexed(st: AddState, report: dict) -> None:
    st.report.index = report


ADD = Pipeline("add", (
    Stage("import", _import, writer=True, parts=(PARSE, ANALYSE), then=_imported),
    Stage("index", _index, writer=True, parts=(EMBED, EMBED_ML), then=_indexed),
), doc="papers in: parsed, analysed, written and committed, then searchable")


def add_context(ws: Workspace, backend: str, distributed: bool = False) -> RunContext:
    """The context of an add: the workspace, the backend and, when parts go to workers, the embedding settings
    of its index; to a worker go only the sections the parser, the embedder and the analyser read (the
    agents' and the backend's own), never the whole configuration."""
    embed = None
    if distributed:
        from papervault.index.embed import workspace_embed_settings  # deferred: pyarrow, only for workers

        embed = workspace_embed_settings(ws)
    sections = ("parse", "embed", "agents", *(n for n in ("claude", "openai") if n == backend and n in registered()))
    return RunContext(ws, sections=sections, backend=backend, embed=embed)


def add(ws: Workspace, inputs: list[str], *, backend: str | None = None, progress: Progress | None = None,
        options: dict | None = None, reanalyse: bool = False, index: bool = True, wait: bool = False,
        executor: Any = None) -> AddReport:
    """Import papers (paths, .bib, CSL-JSON, arXiv ids, DOIs, URLs, Zotero): ADD through `executor` (in this
    process when None). Returns the AddReport.

    The one `add` of every front end. Its last stage makes the papers it added, merged or re-analysed
    searchable (`papervault.app.indexing.index_added`: paper rows and sections now, paragraphs filled behind;
    every vector at once with `wait` or on a distributing executor); its report is `report.index`.
    `index=False` leaves that to a later `papervault index` (a batch of imports). With `[parse] first_pass` (and
    neither `wait` nor a distributing executor), PDFs are read by their first pass and the arrival worker
    (`papervault.app.arrival`) parses them fully behind; `report.arrival` says so."""
    ws.require()
    executor = executor or InProcess()
    # [parse] first_pass: the text layer now, the full parse behind (papervault.app.arrival); --wait: one pass
    first = bool(ws.settings.parse.first_pass) and not wait and not executor.distributed
    st = AddState(list(inputs), progress, options, reanalyse, index, wait, extra={"first_pass": first})
    run(ADD, add_context(ws, backend or ws.settings.agents.backend, executor.distributed), st, executor)
    if first:
        from papervault.app.arrival import after_add  # deferred: only when the first pass ran

        st.report.arrival = after_add(ws)
    return st.report
