"""Bring the index in step with the vault, declared once as the pipeline INDEX (its embedding batches fanned
out by the executor): the one implementation behind `papervault index`, `papervault add` (every front end's),
the `index` flow, the MCP server's writes, the survey's index stage and its topic selection, `rekey`, the demo
and `papervault sync`."""

from __future__ import annotations

import contextlib
from typing import Any, Callable

from papervault.app.context import RunContext
from papervault.errors import PapervaultError
from papervault.index import fill
from papervault.pipeline.executors import InProcess
from papervault.pipeline.runner import Run, run
from papervault.pipeline.stage import Failed, Pipeline, Stage
from papervault.timing import phase
from papervault.wording import plural
from papervault.workspace import Workspace

Progress = Callable[..., None]   # progress(stage, done, total)


def update_index(ws: Workspace, *, rebuild: bool = False, defer: bool = False, paper_ids: list[str] | None = None,
                 progress: Progress | None = None, embed_batches=None, embed_ml_batches=None, code: bool = True,
                 lock: str | None = "index", lock_wait: float = 0.0, stage: str = "embed",
                 embedder=None, start_fill: bool = True, fill_pending: bool = True,
                 lexicon: bool | None = None) -> dict[str, Any]:
    """Sync (or with `rebuild`, rebuild) the paper index, then the code index when its chunks are stale.

    - `defer`: paragraphs are left to the background fill (docs/index.md, "Searchable first"), which is started
      when any row is pending (`report["fill"]`); without it, whatever an earlier deferred sync left is filled
      first, so the caller gets an index whose every row has its own vector.
    - `paper_ids`: only those papers (a survey's selection); the code index is then left alone.
    - `embed_batches` / `embed_ml_batches`: embed the batches elsewhere (the index flow's task runner).
    - `lock`: the write lock is taken under that command name (None: the caller holds it), waiting `lock_wait` s.
    - `embedder`: a model already loaded (a survey's searcher's), else the workspace's is loaded.
    - `progress(stage, done, total)` is told how the embedding goes.
    - `start_fill=False`: pending rows are left for a later fill (papers whose first pass the arrival worker
      replaces soon: their paragraphs would be embedded for nothing).
    - `lexicon=True`: the multilingual space's lexicon follows this sync of some papers too (the last index
      step of an add by first pass; by default only a sync of the whole vault rebuilds it).
    - `fill_pending=False` (without `defer`): what an earlier deferred sync left stays with the background fill
      (a survey reads the index as it is, and never waits for the fill).
    """
    from papervault.index.store import PaperIndex  # deferred: pyarrow, not at the MCP server's start-up

    step = (lambda done, total: progress(stage, done, total)) if progress else None
    held = ws.write_lock(lock, wait=lock_wait) if lock else contextlib.nullcontext()
    with held:
        idx = PaperIndex(ws, embedder, embed_batches=embed_batches, embed_ml_batches=embed_ml_batches)
        with phase("index: model load"):
            idx.embedder.dim      # the model's load, apart from the embedding
        if rebuild:
            report = idx.rebuild(progress=step, defer=defer)
        else:
            report = idx.sync(progress=step, paper_ids=paper_ids, defer=defer, fill_pending=fill_pending,
                              lexicon=lexicon)
        report = dict(report or {})
        if code and paper_ids is None:
            from papervault.app.papers import rechunk_code  # deferred: the ingest path, not at MCP start-up

            with phase("index: code repositories"):
                done = rechunk_code(ws, embedder=idx.embedder, progress=progress)
            if done:
                report["code"] = done
    if defer:
        pending = idx.pending()
        report["fill"] = {"pending": pending,
                          "pid": (fill.start(ws) or fill.running(ws)) if pending and start_fill else None,
                          "behind": not start_fill}   # an add by first pass: the arrival worker starts the fill
    return report


def update_index_reported(ws, paper_ids: list[str] | None = None, *, wait: bool = False,
                          lock: str | None = "index", **kw: Any) -> dict:
    """The index brought up to date as `papervault index` does (paragraph vectors left to the background fill
    with [index] background_fill), for a caller whose other work is done (an add, a sync pass, an accepted inbox
    entry, a renamed paper): an error is the report's `error`, not raised. With `paper_ids`, only those papers
    are looked at (what an add brought in), and the code index is left to `papervault index`. With `wait`, every
    vector is embedded before it returns (`papervault index --wait`, an MCP write). `lock=None`: the caller
    holds the write lock (an add indexing what it committed so far)."""
    try:
        return update_index(ws, defer=ws.settings.index.background_fill and not wait, lock=lock, lock_wait=60,
                            paper_ids=paper_ids, **kw)
    except PapervaultError as exc:
        return {"error": str(exc)}


def index_added(ws, paper_ids: list[str], **kw: Any) -> dict:
    """The last step of `papervault.app.adding.add` (the CLI's `add`, the add flow, MCP's add_paper, the demo):
    the papers just written made searchable (paper rows and section chunks embedded now, paragraphs filled
    behind). Returns the index report with `line`, a one-line summary; a paper the index could not take is
    named in `errors` (and by `papervault status`), never silently left out."""
    if not paper_ids:
        return {"papers": 0, "line": "index: nothing new to index"}
    try:
        report = update_index_reported(ws, list(dict.fromkeys(paper_ids)), **kw)
    except Exception as exc:  # the papers are in the vault (committed): the add stands, and says what is missing
        report = {"error": f"internal error: {type(exc).__name__}: {' '.join(str(exc).split())[:300]}"}
    report["line"] = index_line(report)
    return report


def index_line(report: dict) -> str:
    """One line saying what an index step did for the papers it was given."""
    if report.get("error"):
        return f"index: not updated: {report['error']}; run `papervault index`"
    done = len(report.get("added", [])) + len(report.get("updated", []))
    line = (f"indexed {done} of {plural(report.get('papers', 0), 'paper')} "
            f"({plural(report.get('chunks_embedded', 0), 'chunk')} embedded")
    pending = (report.get("fill") or {}).get("pending")
    if pending and (report.get("fill") or {}).get("behind"):
        # a first pass's passages: the full parse replaces them, then the fill gives the new ones vectors
        line += f"; {plural(pending, 'passage')} follow behind: the full parse, then their vectors)"
    else:
        line += f"; {plural(pending, 'paragraph')} filling in the background)" if pending else ")"
    errors = report.get("errors") or {}
    if errors:
        line += f"; NOT indexed: {', '.join(sorted(errors))} (see `papervault status`)"
    return line


# --- the declaration: the index update as a stage, its embedding batches fanned out ----------------------

def embed_batch(ctx: RunContext, texts: list[str]):
    """Vectors of one batch of chunk texts with the run's embedding settings (the model loaded once per process)."""
    from papervault.index.embed import Embedder  # deferred: pyarrow and fastembed, only where batches are embedded

    return Embedder(ctx.embed).embed(texts)


def embed_ml_batch(ctx: RunContext, texts: list[str]):
    """Vectors of one batch of texts in the multilingual space (index/multilingual.py)."""
    from papervault.index.multilingual import MultilingualEmbedder  # deferred: as Embedder above

    return MultilingualEmbedder(ctx.embed.vector_cache).embed(texts)


EMBED = Stage("embed-batch", embed_batch, per_paper=True, retries=1, retry_delay=2)
EMBED_ML = Stage("embed-multilingual-batch", embed_ml_batch, per_paper=True, retries=1, retry_delay=2)


def embedding_parts(r: Run) -> dict[str, Any]:
    """`embed_batches` / `embed_ml_batches` for the index when the run's executor spreads parts over its
    workers (the same batches as in this process, so the same vectors); nothing when it does not."""
    if not r.distributed:
        return {}

    def over(stage: Stage):
        def batches(texts: list[list[str]]):
            out = r.map(stage, texts)
            for o in out:
                if isinstance(o, Failed):
                    raise PapervaultError(f"embedding a batch failed: {o.error}", fix="run `papervault index` again")
            return out
        return batches
    return {"embed_batches": over(EMBED), "embed_ml_batches": over(EMBED_ML)}


def _index(r: Run, st: "IndexState") -> dict[str, Any]:
    return update_index(r.context.ws, rebuild=st.rebuild, defer=st.defer, progress=st.progress,
                        **embedding_parts(r))


class IndexState:
    def __init__(self, rebuild: bool, defer: bool, progress: Progress | None):
        self.rebuild, self.defer, self.progress = rebuild, defer, progress
        self.report: dict[str, Any] = {}
        self.run = None


def _indexed(st: IndexState, report: dict[str, Any]) -> None:
    st.report = report


INDEX = Pipeline("index", (Stage("index", _index, writer=True, parts=(EMBED, EMBED_ML), then=_indexed),),
                 doc="the index in step with the vault (paper rows, sections, paragraphs, code)")


def embed_context(ws: Workspace) -> RunContext:
    """The context of a run that embeds: the settings the index runs with (its recorded model and precision
    when papervault.toml is silent); only the embedder's section travels to workers."""
    from papervault.index.embed import workspace_embed_settings  # deferred: pyarrow, only when a run embeds

    return RunContext(ws, sections=("embed",), embed=workspace_embed_settings(ws))


def run_index(ws: Workspace, *, executor: Any = None, rebuild: bool = False, defer: bool = False,
              progress: Progress | None = None) -> dict[str, Any]:
    """`papervault index` (every front end's): INDEX through `executor` (in this process when None)."""
    st = IndexState(rebuild, defer, progress)
    run(INDEX, embed_context(ws.require()), st, executor or InProcess())
    return st.report
