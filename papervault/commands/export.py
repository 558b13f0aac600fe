"""`export`: BibTeX or CSL-JSON of the library, a tag, a collection or a survey's references."""

from __future__ import annotations

from pathlib import Path

import click

from papervault.commands.common import emit_json, json_option, open_workspace, workspace_option
from papervault.wording import plural


@click.command("export")
@click.option("--format", "fmt", type=click.Choice(["bibtex", "csl"]), default="bibtex", show_default=True,
              help="BibTeX (.bib) or CSL-JSON (.json).")
@click.option("--tag", help="Only papers with this tag.")
@click.option("--collection", help="Only papers from this Zotero collection.")
@click.option("--survey", "survey", metavar="SLUG", help="Only the papers this survey cites.")
@click.option("--output", "-o", "output", type=click.Path(dir_okay=False, path_type=Path),
              help="Write to this file (default: standard output).")
@workspace_option
@json_option
def export(fmt, tag, collection, survey, output, workspace, as_json):
    """Export the library (or a tag, a collection, a survey's references) as BibTeX or CSL-JSON."""
    # deferred: the library loads on use, not at CLI start-up
    from papervault.app.export import export as run_export
    from papervault.vault.store import atomic_write

    ws = open_workspace(workspace)
    out = run_export(ws, fmt=fmt, tag=tag, collection=collection, survey=survey)
    for p in out.problems:
        click.echo(f"skipped {p}", err=True)
    if output is not None:
        atomic_write(output, out.text)
        summary = out.as_dict() | {"output": str(output)}
        if as_json:
            emit_json(summary)
        else:
            click.echo(f"Exported {plural(len(out.ids), 'paper')} as {'BibTeX' if fmt == 'bibtex' else 'CSL-JSON'} "
                       f"to {output}")
        return
    if as_json and fmt == "bibtex":
        emit_json(out.as_dict() | {"text": out.text})
        return
    click.echo(out.text, nl=False)
    if not out.ids:
        click.echo("no papers matched", err=True)
