"""`papervault edit`: correct a paper's title, authors, year, venue or identifiers."""

from __future__ import annotations

import click

from papervault.commands.common import emit_json, json_option, open_workspace, workspace_option


@click.command()
@click.argument("paper_id")
@click.option("--title", help="The paper's title.")
@click.option("--author", "authors", multiple=True, help="An author, in order (repeat for each; replaces all).")
@click.option("--year", type=int, help="The year the paper was published.")
@click.option("--venue", help="Journal, conference or publisher.")
@click.option("--doi", help="The paper's DOI.")
@click.option("--arxiv", help="The paper's arXiv id.")
@click.option("--pages", "bib_pages", help="Printed pages, e.g. 223--234 (kept in the note's bib fields).")
@workspace_option
@json_option
def edit(paper_id, title, authors, year, venue, doi, arxiv, bib_pages, workspace, as_json):
    """Correct a paper's identity; the correction wins over every source and survives later imports."""
    from papervault.identity import edit_paper

    ws = open_workspace(workspace)
    meta = edit_paper(ws, paper_id, title=title, authors=list(authors) or None, year=year, venue=venue, doi=doi,
                      arxiv=arxiv, bib={"pages": bib_pages} if bib_pages else None)
    if as_json:
        emit_json(meta.model_dump(exclude_none=True))
    else:
        who = ", ".join(meta.authors) or "?"
        click.echo(f"{meta.id}: {meta.title} — {who} ({meta.year or 'no year'})")
