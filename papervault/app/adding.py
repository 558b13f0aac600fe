"""Bringing papers in: what `papervault add`, the `add` flow, MCP's `add_paper` and the demo do. One `add`,
which ends with the papers it brought in searchable through the one index update (`papervault.app.indexing`)."""

from __future__ import annotations

from typing import Callable

from papervault.app.indexing import index_added
from papervault.ingest import add as ingest
from papervault.workspace import Workspace

Progress = Callable[[str, int, int | None], None]


def add(ws: Workspace, inputs: list[str], *, backend: str | None = None, progress: Progress | None = None,
        options: dict | None = None, reanalyse: bool = False, parse_fn=None, analyse_fn=None, index: bool = True,
        wait: bool = False, embed_batches=None, embed_ml_batches=None):
    """Import papers (paths, .bib, CSL-JSON, arXiv ids, DOIs, URLs, Zotero); one commit. Returns the AddReport.

    The one `add` of every front end (the CLI with or without a task runner, MCP's add_paper, the demo). Its last
    step makes the papers it added, merged or re-analysed searchable through the one index update
    (`papervault.app.indexing.index_added`: paper rows and sections now, paragraphs filled behind); its report
    is `report.index`. `index=False` leaves that to a later `papervault index` (a batch of imports); `wait`
    embeds the paragraphs too before it returns (no background fill).

    `parse_fn` and `analyse_fn` (see `papervault.ingest.ParseFn`, `AnalyseFn`) parse PDFs and analyse papers on
    a task runner, `embed_batches` / `embed_ml_batches` embed there; this process still writes."""
    ws.require()
    report = ingest(ws, list(inputs), backend=backend or ws.settings.agents.backend, progress=progress,
                    options=options, reanalyse=reanalyse, parse_fn=parse_fn, analyse_fn=analyse_fn)
    if index:
        ids = [*report.added, *(m["id"] for m in report.merged if m.get("id")), *report.reanalysed]
        report.index = index_added(ws, ids, wait=wait, progress=progress, embed_batches=embed_batches,
                                   embed_ml_batches=embed_ml_batches)
    return report
