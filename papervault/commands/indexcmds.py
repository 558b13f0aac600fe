"""`index` and `search`: build the LanceDB index of the vault and query it."""

from __future__ import annotations

import time

import click

from papervault import timing
from papervault.commands.common import (Progress, emit_json, json_option, open_workspace, paper_id, plural,
                                        runner_options, workspace_option)


@click.command()
@click.option("--rebuild", is_flag=True, help="Index everything again (after a model change); searches see the old index until it is done.")
@click.option("--quiet", "-q", is_flag=True, help="No progress output.")
@click.option("--wait", is_flag=True, help="Embed the paragraphs now too, instead of in the background "
              "([index] background_fill).")
@click.option("--fill", "fill_only", is_flag=True, help="Only embed the paragraphs an earlier `index` left to the "
              "background (what the background process runs).")
@runner_options
@workspace_option
@json_option
def index(rebuild, quiet, wait, fill_only, task_runner, workers, dask_address, workspace, as_json):
    """Index the vault incrementally: only new or changed papers are embedded.

    The index is searchable when this returns; with [index] background_fill (the default) a background
    process then embeds the paragraphs (`papervault status` shows how far)."""
    ws = open_workspace(workspace)
    t0 = time.perf_counter()
    if fill_only:
        return _fill(ws, quiet, as_json, t0)
    if task_runner:
        from flows.ingest import index as index_flow, run  # deferred: Prefect, not at CLI start-up

        progress = Progress(quiet or as_json)
        try:
            report = run(index_flow, task_runner_kind=task_runner, workers=workers, dask_address=dask_address,
                         progress=progress, workspace=str(ws.root), rebuild=rebuild)
        finally:
            progress.close()
        return _print_index_report(report, t0, as_json)
    from papervault.app.indexing import run_index  # deferred: not at CLI start-up

    progress = Progress(quiet or as_json)
    try:
        with timing.recording() as timings:
            report = run_index(ws, rebuild=rebuild, defer=ws.settings.index.background_fill and not wait,
                               progress=progress)
    finally:
        progress.close()
    report["timings"] = timings.as_dict()
    _print_index_report(report, t0, as_json)


def _fill(ws, quiet: bool, as_json: bool, t0: float) -> None:
    """`index --fill`: embed the paragraphs a background-fill `index` left (one fill per workspace)."""
    # deferred: LanceDB and pyarrow are kept out of the CLI's start-up
    from papervault.index import fill
    from papervault.index.store import PaperIndex

    progress = Progress(quiet or as_json)
    try:
        report = fill.run(ws, PaperIndex(ws), progress)
    finally:
        progress.close()
    report["seconds"] = round(time.perf_counter() - t0, 2)
    if as_json:
        emit_json(report)
    elif report.get("running"):
        click.echo(f"A fill is already running on this workspace (pid {report['running']}).")
    else:
        click.echo(f"Filled {plural(report['filled'], 'paragraph')} in {report['seconds']} s "
                   f"({report['pending']} still pending)")


def _print_index_report(report, t0: float, as_json: bool) -> None:
    report = dict(report or {})
    report["seconds"] = round(time.perf_counter() - t0, 2)
    errors = dict(sorted((report.get("errors") or {}).items()))
    if as_json:
        emit_json(report)
    else:
        for pid, err in errors.items():
            click.echo(f"error: {pid} not indexed: {err}", err=True)
        parts = ", ".join(f"{k} {v}" for k, v in report.items() if isinstance(v, (int, float)) and k != "seconds")
        click.echo(f"Indexed in {report['seconds']} s ({parts})")
        if report.get("code"):
            click.echo(report["code"]["line"])
        fill = report.get("fill") or {}
        if fill.get("pending"):
            click.echo(f"Searchable now. {plural(fill['pending'], 'paragraph')} get their vectors in the background"
                       + (f" (pid {fill['pid']})" if fill.get("pid") else "")
                       + ": `papervault status` shows how far, `papervault index --wait` finishes them here.")
    if errors:
        # A paper in the vault that no search can find is a failure of the run, not a warning: the rest is
        # indexed, and the exit status (and `papervault status`) says which papers are missing.
        shown = ", ".join(list(errors)[:10]) + (f" and {len(errors) - 10} more" if len(errors) > 10 else "")
        click.echo(f"error: {plural(len(errors), 'paper')} of the vault not indexed ({shown}); fix them and "
                   "run `papervault index` again (`papervault status` lists the papers missing from the index)",
                   err=True)
        raise click.exceptions.Exit(1)


@click.command()
@click.argument("query")
@click.option("--limit", "-n", type=int, default=10, show_default=True, help="How many hits.")
@click.option("--level", type=click.Choice(["paper", "section", "paragraph", "figure", "table", "note", "highlight"]),
              help="Only chunks of this level (highlight: your own highlights and reader notes).")
@click.option("--paper", "paper", help="Only this paper (id).")
@click.option("--year", help="Only these years: 2019 or 2015-2020.")
@click.option("--venue", help="Only this venue (substring).")
@click.option("--tag", help="Only papers with this tag.")
@click.option("--budget", type=int, help="Expand around the best hits up to this many tokens of context.")
@click.option("--code", "code", is_flag=True, help="Search indexed code repositories instead of papers.")
@click.option("--repo", help="With --code: only this repository.")
@click.option("--language", help="With --code: only this language.")
@workspace_option
@json_option
def search(query, limit, level, paper, year, venue, tag, budget, code, repo, language, workspace, as_json):
    """Hybrid search (full text + vectors) over papers, or over code with --code."""
    ws = open_workspace(workspace)
    if code:
        from papervault.index.code import search_code  # deferred: LanceDB, tree-sitter: not at start-up

        hits = search_code(ws, query, limit=limit, repo=repo, language=language, budget=budget)
        if as_json:
            emit_json(hits)
            return
        for i, h in enumerate(hits, 1):
            click.echo(f"{i:2}. {h.get('repo')}/{h.get('path')}:{h.get('start_line')}-{h.get('end_line')} "
                       f"{h.get('symbol') or ''}  ({h.get('score', 0):.3f})")
        return
    # deferred: LanceDB and pyarrow are kept out of the CLI's start-up
    from papervault.app.search import check_query, search_papers, why_no_hits
    from papervault.index.search import Searcher

    if paper is not None and (query or "").strip():
        paper = paper_id(ws, paper)
    query = check_query(ws, query, paper=paper)
    filters = {k: v for k, v in {"paper": paper, "year": year, "venue": venue, "tag": tag}.items() if v}
    searcher = Searcher(ws)
    hits = search_papers(ws, query, limit=limit, level=level, filters=filters, budget=budget, searcher=searcher)
    for notice in searcher.notices:   # e.g. a Chinese question on an English-only index
        click.echo(f"Note: {notice}", err=True)
    from papervault.parse.firstpass import behind, unfinished  # deferred: read for the hits' papers only

    waiting = unfinished(ws, [h.paper_id for h in hits])
    if as_json:
        rows = [h.model_dump() for h in hits]
        for r in rows:          # a paper still read by its text layer (first pass): said on its hits
            if r["paper_id"] in waiting:
                r["stage"] = "text layer"
                r["pending_pages"] = waiting[r["paper_id"]]["pending_pages"]
        emit_json(rows)
        return
    if not hits:
        click.echo(why_no_hits(ws, filters=filters, level=level))
        return
    for i, h in enumerate(hits, 1):
        page = f"p. {h.page}" if h.page else "-"
        if h.page_end and h.page and h.page_end != h.page:
            page = f"pp. {h.page}-{h.page_end}"
        mark = "  (text layer only: its full parse follows)" if h.paper_id in waiting else ""
        click.echo(f"{i:2}. [{h.paper_id}] {h.title}{mark}")
        click.echo(f"      {h.level} · {h.section or '-'} · {page} · score {h.score:.3f}")
        snippet = " ".join(h.text.split())[:240]
        click.echo(f"      {snippet}")
    if waiting:
        click.echo(f"{len(waiting)} of these papers {'is' if len(waiting) == 1 else 'are'} read by the text layer "
                   f"only (no headings, figures or OCR'd scans yet); {behind(ws)}")

