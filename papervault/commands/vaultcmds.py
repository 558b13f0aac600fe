"""`init`, `add`, `list`, `show`, `delete`, `status`: create a workspace, bring papers in, look at what is there."""

from __future__ import annotations

import re

import click

from papervault import timing
from papervault.commands.common import (Progress, emit_json, json_option, open_workspace, paper_id as resolve,
                                        plural, runner_options, workspace_option)
from papervault.wording import plural
from papervault.workspace import Workspace


@click.command()
@click.argument("directory", required=False)
@click.option("--embed-model", help="Embedding model (fastembed name) recorded in papervault.toml.")
@click.option("--embed-model-path", help="Local ONNX folder of that model, or 'packaged' (recorded too).")
@workspace_option
@json_option
def init(directory, embed_model, embed_model_path, workspace, as_json):
    """Create a workspace: papervault.toml, vault/ (its own git repository), mkdocs.yml, .papervault/."""
    target = directory or workspace or "."
    ws, created = Workspace.init(target, embed_model=embed_model, embed_model_path=embed_model_path)
    if as_json:
        emit_json({"workspace": str(ws.root), "created": created})
    elif created:
        click.echo(f"Workspace ready at {ws.root} (created {', '.join(created)})")
    else:
        click.echo(f"Workspace at {ws.root} already exists; nothing changed")


@click.command()
@click.argument("inputs", nargs=-1)
@click.option("--zotero", "zotero", is_flag=False, flag_value="", default=None, metavar="[DIR]",
              help="Import from a Zotero data directory (default: the usual one).")
@click.option("--collection", help="With --zotero: only this collection (and its sub-collections).")
@click.option("--since", help="With --zotero: only items added or modified since this date (YYYY-MM-DD).")
@click.option("--arxiv-search", "arxiv_search", metavar="QUERY", help="Search arXiv and import the best matches.")
@click.option("--max", "max_results", type=int, default=10, show_default=True, help="With --arxiv-search: how many.")
@click.option("--backend", default=None, help="Analyser for the new notes (default: the workspace's).")
@click.option("--reanalyse", is_flag=True, help="Analyse notes again even when they are current.")
@click.option("--no-index", "no_index", is_flag=True,
              help="Leave the new papers out of the index until `papervault index` (a batch of imports).")
@click.option("--wait", is_flag=True,
              help="One pass: parse every PDF fully and embed every vector before returning (no work left behind).")
@click.option("--quiet", "-q", is_flag=True, help="No progress output.")
@runner_options
@workspace_option
@json_option
def add(inputs, zotero, collection, since, arxiv_search, max_results, backend, reanalyse, no_index, wait, quiet,
        task_runner, workers, dask_address, workspace, as_json):
    """Import papers: PDF files and folders, .bib, CSL-JSON, arXiv ids/URLs, DOIs, PDF URLs, Zotero; then make
    them searchable (paragraphs filled in the background), unless --no-index."""
    from papervault.app.adding import add as run_add  # deferred: not at CLI start-up

    ws = open_workspace(workspace)
    if not inputs and zotero is None and not arxiv_search:
        raise click.UsageError("nothing to add: give PDF paths, folders, .bib/.json files, arXiv ids, DOIs or URLs")
    index = not no_index
    options = {}
    if zotero is not None:
        options.update(zotero=zotero or None, collection=collection, since=since)
    if arxiv_search:
        options.update(arxiv_search=arxiv_search, max_results=max_results)
    if task_runner and options:
        raise click.UsageError("--task-runner takes paths, files and identifiers, not --zotero or --arxiv-search")
    progress = Progress(quiet or as_json)
    try:
        with timing.recording() as timings:
            if task_runner:
                # deferred: the flows load Prefect, kept out of the CLI's start-up
                from flows.ingest import add as add_flow, run

                # the same app.adding.add, its parses, analyses and embeddings on the task runner
                report = run(add_flow, task_runner_kind=task_runner, workers=workers, dask_address=dask_address,
                             progress=progress, inputs=list(inputs), workspace=str(ws.root), backend=backend,
                             reanalyse=reanalyse, index=index)
            else:
                report = run_add(ws, list(inputs), backend=backend, progress=progress, options=options,
                                 reanalyse=reanalyse, index=index, wait=wait)
        report.timings = timings.as_dict()
    finally:
        progress.close()
    # Every input failed: the command failed (a script or a Makefile must see it), after saying why. So did an
    # add whose papers the index could not take: they are in the vault, but no search finds them yet.
    failed = bool(report.problems) and not (report.added or report.merged or report.unchanged)
    unsearchable = bool(report.index and (report.index.get("error") or report.index.get("errors")))
    if as_json:
        emit_json(report.as_dict())
        if failed or unsearchable:
            raise SystemExit(1)
        return
    for line in (report.recovered or {}).get("undone", []):
        click.echo(f"undid what an interrupted run wrote: vault/{line}")
    for line in (report.recovered or {}).get("kept", []):
        click.echo(f"kept vault/{line}")
    for p in report.problems:
        click.echo(f"skipped {p.source}: {p.error}", err=True)
    for w in report.warnings:
        click.echo(f"warning {w.source}: {w.error}", err=True)
    for c in report.chosen:
        click.echo(f"chose {c['source']} ({c['title']}): {c['reason']}")
    for m in report.merged:
        click.echo(f"merged {m['source']} into {m['id']}" + (" (gained its PDF)" if m.get("gained_pdf") else ""))
    for link in report.code_links:
        click.echo(f"linked {link['paper_id']} to code repository {link['repo']} ({link['how']}: {link['evidence']})")
    if report.pdfs_kept:
        click.echo(f"kept the PDFs of {plural(len(report.pdfs_kept), 'earlier paper')} in {ws.pdf_dir}: "
                   + ", ".join(report.pdfs_kept[:5]) + (" ..." if len(report.pdfs_kept) > 5 else ""))
    click.echo(f"Added {plural(len(report.added), 'paper')}, merged {len(report.merged)}, unchanged {len(report.unchanged)}"
               + (f" ({len(report.reanalysed)} re-analysed)" if report.reanalysed else "")
               + f", problems {len(report.problems)}"
               + (f"; {len(report.commits)} vault commits, the last {report.commit[:8]}" if len(report.commits) > 1
                  else f"; vault commit {report.commit[:8]}" if report.commit else ""))
    if report.index is not None:
        click.echo(report.index["line"], err=unsearchable)
    if report.arrival and report.arrival.get("waiting"):
        click.echo(f"{plural(report.arrival['waiting'], 'paper')} searchable by their text layer; layout, figures, "
                   "tables and OCR follow in the background (`papervault status` shows how far)")
    elif report.added or report.merged:
        click.echo("not indexed (--no-index): run `papervault index` to make them searchable")
    if failed:
        click.echo(f"error: nothing was added: {plural(len(report.problems), 'input')} failed (see above)", err=True)
        raise SystemExit(1)
    if unsearchable:
        click.echo("error: added, but not searchable until `papervault index` succeeds (see above)", err=True)
        raise SystemExit(1)


@click.command("list")
@click.option("--tag", help="Only papers with this tag.")
@click.option("--year", metavar="YEAR|RANGE", help="Only papers from this year or range (2019, 2015-2020, 2015.., ..2020).")
@click.option("--venue", help="Only papers whose venue contains this text.")
@click.option("--author", help="Only papers with an author whose name contains this text.")
@click.option("--status", help="Only papers with this status (metadata, parsed, analysed).")
@click.option("--title", help="Only papers whose title contains this text.")
@workspace_option
@json_option
def list_papers(tag, year, venue, author, status, title, workspace, as_json):
    """List the papers in the vault."""
    # deferred: the library loads on use, not at CLI start-up
    from papervault.app.papers import PaperFilter, list_papers as run_list

    ws = open_workspace(workspace)
    rows = [{"id": m.id, "title": m.title, "authors": m.authors, "year": m.year, "status": m.status,
             "pages": m.pages, "tags": m.tags}
            for m in run_list(ws, PaperFilter(tag=tag, year=year, venue=venue, author=author, status=status,
                                              title=title))]
    if as_json:
        emit_json(rows)
        return
    for r in rows:
        click.echo(f"{r['id']:32} {r['year'] or '    '}  {r['status']:9} {r['title'][:80]}")
    click.echo(plural(len(rows), "paper"))


@click.command()
@click.argument("paper_id")
@click.option("--full", is_flag=True, help="Print the full text (paper.md) instead of the note.")
@workspace_option
@json_option
def show(paper_id, full, workspace, as_json):
    """Print a paper's note (or its full text)."""
    # deferred: the library loads on use, not at CLI start-up
    from papervault.app.papers import metadata_lines
    from papervault.pdfstore import pdf_of

    ws = open_workspace(workspace)
    paper_id = resolve(ws, paper_id)
    meta, body = ws.vault.read_note(paper_id)
    text = ws.vault.read_fulltext(paper_id) if full else body
    pdf = pdf_of(ws, meta)     # the workspace's copy (pdfs/<sha256>.pdf), else the original if still there
    if as_json:
        emit_json({"meta": meta.model_dump(exclude_none=True), "text": text, "pdf": str(pdf) if pdf else None})
        return
    rest = re.sub(r"\A\s*#\s+[^\n]*\n?", "", body).strip()
    if full and not text.strip():
        click.echo(f"{paper_id} has no full text yet; its record:", err=True)
        click.echo("\n".join(metadata_lines(meta)))
    elif not full and (meta.status == "metadata" or not rest):
        # a paper known only by its record (BibTeX, CSL, Zotero without PDF): its note is just the title
        click.echo("\n".join(metadata_lines(meta) + ([ "", rest] if rest else [])))
    else:
        click.echo(text)
        if pdf and not full:
            click.echo(f"\nPDF: {pdf}  (papervault open {paper_id} --page N)")


@click.command()
@click.argument("paper_ids", nargs=-1, required=True, metavar="ID [ID...]")
@workspace_option
@json_option
def delete(paper_ids, workspace, as_json):
    """Delete papers: their folders (one vault commit), their index rows and their links to code."""
    # deferred: the library loads on use, not at CLI start-up
    from papervault.app.ids import PaperRef
    from papervault.app.papers import delete as run_delete

    ws = open_workspace(workspace)
    out = run_delete(ws, list(paper_ids))     # resolves former ids (rekey) itself, and says which
    for old, new in out.get("renamed", {}).items():
        click.echo(f"note: {PaperRef(new, old).notice()}", err=True)
    if as_json:
        emit_json(out)
        return
    removed = out["index"]["chunks_removed"] if isinstance(out["index"], dict) else None
    click.echo(f"Deleted {plural(len(out['deleted']), 'paper')}: {', '.join(out['deleted'])}"
               + (f"; vault commit {out['commit'][:8]}" if out["commit"] else "")
               + (f"; {plural(removed, 'chunk')} removed from the index" if removed is not None else f"; index {out['index']}"))


@click.command()
@workspace_option
@json_option
def status(workspace, as_json):
    """Counts, the embedding model and the health of the index and the vault."""
    from papervault.status import workspace_status  # deferred: not at CLI start-up

    ws = open_workspace(workspace)
    st = workspace_status(ws)
    if as_json:
        emit_json(st)
        return
    click.echo(f"workspace       {st['workspace']}")
    click.echo(f"papers          {st['papers']} ({st['papers_with_text']} with full text)")
    click.echo(f"chunks          {st['chunks']}")
    click.echo(f"surveys         {st['surveys']}")
    click.echo(f"embedding model {st['embedding_model']} ({st['embedding_precision']})")
    click.echo(f"index           {st['index_health']}")
    fill = st.get("fill")
    if fill and fill["paragraphs"]:
        if not fill["pending"]:
            click.echo(f"fill            all {plural(fill['paragraphs'], 'paragraph')} have their vectors")
        else:
            made = fill["paragraphs"] - fill["pending"]
            running = f"background fill running (pid {fill['running']})" if fill["running"] else fill["hint"]
            click.echo(f"fill            {made} of {fill['paragraphs']} paragraph vectors made "
                       f"({100 * made // fill['paragraphs']}%); {running}")
    stages = st.get("stages") or {}
    waiting = stages.get("first_pass") or []
    if waiting:
        last = stages.get("last") or {}
        how = (f"full parse running (pid {stages['running']}, {last.get('done', 0)} done)" if stages.get("running")
               else stages.get("hint", ""))
        shown = ", ".join(waiting[:STATUS_PAPERS]) + (" ..." if len(waiting) > STATUS_PAPERS else "")
        click.echo(f"stages          {plural(len(waiting), 'paper')} searchable by text layer only, layout, "
                   f"figures and OCR to come ({shown}); {how}")
    elif st["papers"]:
        click.echo("stages          every paper fully parsed")
    click.echo(f"vault           {'clean' if st['vault_clean'] else 'uncommitted changes'}")
    tl = st["text_layers"]
    repaired = f"{plural(tl['repaired_pages'], 'repaired page')} in {plural(tl['papers_repaired'], 'paper')}"
    ocr = plural(tl["ocr_pages"], "OCR'd page") + " in " + plural(tl["papers_ocr"], "paper")
    click.echo(f"text layers     {repaired}, {ocr}")
    for pid, p in list(tl["papers"].items())[:STATUS_PAPERS]:
        what = [f"{label} p. {page_ranges(p[k])}" for k, label in (("repaired", "repaired"), ("ocr", "OCR'd")) if p[k]]
        click.echo(f"  {pid}: {'; '.join(what)} (of {p['pages'] or '?'} pages)")
    if len(tl["papers"]) > STATUS_PAPERS:
        click.echo(f"  ... and {plural(len(tl['papers']) - STATUS_PAPERS, 'more paper')} (`papervault status --json` lists all)")
    low = st.get("low_confidence") or []
    if low:
        click.echo(f"identity        {plural(len(low), 'paper')} with a low-confidence title or id "
                   "(check with `papervault edit`, or `papervault enrich --doubtful` online)")
        for d in low[:STATUS_PAPERS]:
            click.echo(f"  {d['id']}: {d['why']}")


STATUS_PAPERS = 20   # papers with repaired or OCR'd pages listed by `status` (--json lists all)


def page_ranges(pages: list[int]) -> str:
    """`[1, 2, 3, 7]` -> `1-3, 7`."""
    runs: list[list[int]] = []
    for p in sorted(set(pages)):
        if runs and p == runs[-1][1] + 1:
            runs[-1][1] = p
        else:
            runs.append([p, p])
    return ", ".join(str(a) if a == b else f"{a}-{b}" for a, b in runs)
