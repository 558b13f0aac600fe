"""`papervault edit` and `papervault enrich`: a person's corrections and identity resolved online."""

from __future__ import annotations

import click

from papervault.commands.common import emit_json, json_option, open_workspace, paper_id, paper_ids, workspace_option
from papervault.wording import plural


@click.command()
@click.argument("given", metavar="PAPER_ID")
@click.option("--title", help="The paper's title.")
@click.option("--author", "authors", multiple=True, help="An author, in order (repeat for each; replaces all).")
@click.option("--year", type=int, help="The year the paper was published.")
@click.option("--venue", help="Journal, conference or publisher.")
@click.option("--doi", help="The paper's DOI.")
@click.option("--arxiv", help="The paper's arXiv id.")
@click.option("--pages", "bib_pages", help="Printed pages, e.g. 223--234 (kept in the note's bib fields).")
@workspace_option
@json_option
def edit(given, title, authors, year, venue, doi, arxiv, bib_pages, workspace, as_json):
    """Correct a paper's identity; the correction wins over every source and survives later imports."""
    from papervault.identity import edit_paper  # deferred: not at CLI start-up

    ws = open_workspace(workspace)
    meta = edit_paper(ws, paper_id(ws, given), title=title, authors=list(authors) or None, year=year, venue=venue,
                      doi=doi, arxiv=arxiv, bib={"pages": bib_pages} if bib_pages else None)
    if as_json:
        emit_json(meta.model_dump(exclude_none=True))
    else:
        who = ", ".join(meta.authors) or "?"
        click.echo(f"{meta.id}: {meta.title} — {who} ({meta.year or 'no year'})")


@click.command()
@click.argument("given", nargs=-1, metavar="[PAPER_IDS]...")
@click.option("--doubtful", is_flag=True,
              help="Only the papers whose title or id was read with low confidence (as `status` lists them).")
@workspace_option
@json_option
def enrich(given, doubtful, workspace, as_json):
    """Resolve papers' identity online (DOI via Crossref/OpenAlex, arXiv id, title search); needs
    [sources] online = true. Your own metadata (BibTeX, Zotero, edits) is never replaced."""
    # deferred: the library loads on use, not at CLI start-up
    from papervault.identity import doubtful as doubtful_papers
    from papervault.sources.enrich import enrich as run

    ws = open_workspace(workspace)
    if doubtful and given:
        raise click.UsageError("give PAPER_IDS or --doubtful, not both")
    if doubtful:
        ids = [d["id"] for d in doubtful_papers(ws.vault)]
        if not ids:
            report = {"enriched": {}, "unchanged": [], "not_found": [], "failed": {}}
            if as_json:
                emit_json(report)
            else:
                click.echo("no paper has a low-confidence title or id")
            return
    else:
        ids = paper_ids(ws, given) if given else None
    report = run(ws, ids)
    if as_json:
        emit_json(report)
        return
    for pid, fields in report["enriched"].items():
        click.echo(f"{pid}: {', '.join(fields)}")
    for pid, err in report["failed"].items():
        click.echo(f"{pid}: failed: {err}", err=True)
    for pid, base in report.get("rekey", {}).items():
        click.echo(f"{pid}: its id no longer matches its authors, year and title ({base}...): "
                   f"`papervault rekey {pid}` renames it everywhere")
    click.echo(f"{len(report['enriched'])} enriched, {len(report['unchanged'])} unchanged, "
               f"{len(report['not_found'])} not found, {len(report['failed'])} failed")


@click.command()
@click.argument("given", metavar="PAPER_ID")
@click.argument("new_id", required=False)
@workspace_option
@json_option
def rekey(given, new_id, workspace, as_json):
    """Rename a paper everywhere (folder, citations, links, bibliographies, index) in one commit; without
    NEW_ID the id is made again from its current authors, year and title. The old id stays an alias."""
    # deferred: not at CLI start-up
    from papervault.app.indexing import update_index_reported
    from papervault.identity import rekey as run

    ws = open_workspace(workspace)
    # the renamed paper's rows through the one index update, every vector now (no background fill)
    report = run(ws, paper_id(ws, given), new_id, reindex=lambda w: update_index_reported(w, wait=True))
    if as_json:
        emit_json(report)
    else:
        for line in report.get("refused", []):
            click.echo(f"warning: {line}", err=True)
        click.echo(f"{report['id']} -> {report['new']}: {plural(len(report['changed']), 'file')} changed, "
                   f"index {report.get('index', 'none')}")
