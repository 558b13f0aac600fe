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

import contextlib
import multiprocessing as mp
import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable

from papervault.agents import registered
from papervault.app.context import RunContext
from papervault.app.indexing import EMBED, EMBED_ML, embedding_parts, index_added, index_line
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
    first = st.extra.get("first_pass", False)
    return ingest(ctx.ws, list(st.inputs), backend=ctx.backend, progress=st.progress, options=st.options,
                  reanalyse=st.reanalyse, first_pass=first, on_commit=_early_index(ctx, st) if first and st.index
                  else None, **spread)


def _early_index(ctx: RunContext, st: AddState):
    """The first pass's index step after each of the import's commits but the last (under its write lock): the
    papers committed so far are searchable while the rest of a large folder is read. The index stage then
    finds them current (a hash each)."""
    def index(ids: list[str]) -> None:
        if "embedder" not in st.extra:       # loaded once for the run's index steps
            from papervault.index.embed import Embedder  # deferred: the model loads at the first index step

            st.extra["embedder"] = Embedder.for_workspace(ctx.ws)
        rep = index_added(ctx.ws, ids, lock=None, start_fill=False, progress=st.progress,
                          embedder=st.extra["embedder"])
        st.extra.setdefault("early_index", []).append(rep)
        if not st.extra.get("arrival_started"):
            # the full parse starts behind the first commit: the worker reads ahead while this add reads on (at a
            # lower priority), and writes once the add has returned (papervault.parse.firstpass.adding)
            from papervault.app.arrival import start, waiting  # deferred: only when the first pass ran

            if waiting(ctx.ws, ids):
                start(ctx.ws, nice=True)
            st.extra["arrival_started"] = True
    return index


def _imported(st: AddState, report: AddReport) -> None:
    st.report = report
    st.stopped = not st.index       # `--no-index`: a later `papervault index` makes them searchable


def _index(r: Run, st: AddState) -> dict:
    rep = st.report
    ids = [*rep.added, *(m["id"] for m in rep.merged if m.get("id")), *rep.reanalysed]
    # first pass: no fill now (the arrival worker starts it once the full parses replaced these paragraphs), and
    # the lexicon now, so a Chinese question finds the text layer's paragraphs through their English words
    first = {"start_fill": False, "lexicon": True} if st.extra.get("first_pass") else {}
    if st.extra.get("embedder") is not None:
        first["embedder"] = st.extra["embedder"]
    return index_added(r.context.ws, ids, wait=st.wait, progress=st.progress, **embedding_parts(r), **first)


def _indexed(st: AddState, report: dict) -> None:
    early = st.extra.get("early_index") or []
    if early and not report.get("error"):
        # what the import's own index steps did counts as this step's: one line for the add
        last = {key: list(report.get(key, [])) for key in ("added", "updated")}
        for key in last:
            report[key] = list(dict.fromkeys([*(p for e in early for p in e.get(key, [])), *last[key]]))
        # a paper an early step added and this one updated (a duplicate PDF merged into it later) counts once
        report["updated"] = [p for p in report["updated"] if p not in set(report["added"])]
        report["chunks_embedded"] = report.get("chunks_embedded", 0) + sum(e.get("chunks_embedded", 0) for e in early)
        done = {*last["added"], *last["updated"]}    # a paper an early step missed and this one indexed is fine
        report["errors"] = {**{k: v for e in early for k, v in (e.get("errors") or {}).items() if k not in done},
                            **(report.get("errors") or {})}
        report["early_steps"] = len(early)
        report["line"] = index_line(report)
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


REMOTE_PAGES = 12   # what `first_pass = "auto"` counts for a paper to download (an arXiv id, a DOI, a URL)


def first_pass_wanted(ws: Workspace, inputs: list[str], backend: str, options: dict | None = None) -> bool:
    """Whether this add reads its PDFs by their first pass (`[parse] first_pass`). With "auto": when a model
    analyses the papers (its minutes would keep them from search), when the add is a library (Zotero, an arXiv
    search, a .bib or CSL-JSON file, whose PDFs are many or unknown), or when its PDFs hold more than
    `[parse] first_pass_pages` pages (a scanned page counting `SCAN_COST`); a paper or two is parsed in one pass,
    complete within seconds. The PDFs are only opened until the count is reached (a folder of any size costs
    milliseconds)."""
    mode = ws.settings.parse.first_pass
    if mode != "auto":
        return bool(mode)
    from papervault.agents import capabilities  # deferred: as the rest of the backend registry

    if capabilities(backend).uses_model:
        return True
    opts = options or {}
    if opts.get("arxiv_search") or "zotero" in opts:
        return True
    from papervault.sources.resolve import classify  # deferred: the readers load only when records are read

    limit = ws.settings.parse.first_pass_pages
    cost = 0
    for raw in inputs:
        kind = classify(str(raw))
        if kind in ("bibtex", "csl"):
            return True
        if kind in ("arxiv", "doi", "url"):
            cost += REMOTE_PAGES
        elif kind in ("path", "pdf"):
            cost += _pages(Path(str(raw)).expanduser(), limit - cost)
        if cost > limit:
            return True
    return False


def _pages(path: Path, budget: int) -> int:
    """The parse cost (`papervault.parse.batch.estimated_cost`) of the PDFs at `path` (a file or a folder,
    walked as `add` walks it), counted until it exceeds `budget`."""
    from papervault.parse.batch import estimated_cost  # deferred: PyMuPDF, only where PDFs are counted

    if path.is_file():
        return estimated_cost(str(path))
    cost = 0
    for root, dirs, files in os.walk(path):
        dirs[:] = sorted(d for d in dirs if not d.startswith("."))
        for f in sorted(files):
            if f.lower().endswith(".pdf") and not f.startswith("."):
                cost += estimated_cost(os.path.join(root, f))
                if cost > budget:
                    return cost
    return cost


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
    backend = backend or ws.settings.agents.backend
    # [parse] first_pass: the text layer now, the full parse behind (papervault.app.arrival); --wait: one pass.
    # The worker analyses with the workspace's backend: another one asked for (`--backend`) gets a one-pass add.
    first = not wait and not executor.distributed \
        and backend.strip().lower() == (ws.settings.agents.backend or "extractive").strip().lower() \
        and first_pass_wanted(ws, inputs, backend, options)
    st = AddState(list(inputs), progress, options, reanalyse, index, wait, extra={"first_pass": first})
    held = contextlib.nullcontext()
    if first:
        from papervault.parse.firstpass import adding  # deferred: only when the first pass runs

        held = adding(ws)       # the worker it starts at its first commit writes once it has returned
    with held:
        run(ADD, add_context(ws, backend, executor.distributed), st, executor)
    if first:
        from papervault.app.arrival import after_add  # deferred: only when the first pass ran

        rep = st.report
        st.report.arrival = after_add(ws, [*rep.added, *(m["id"] for m in rep.merged if m.get("id"))])
    return st.report
