"""`add-repo`: index a code repository (folder or git URL), link it to papers, write its code note."""

from __future__ import annotations

import time

import click

from papervault.commands.common import (Progress, emit_json, json_option, open_workspace, paper_ids,
                                        workspace_option)
from papervault.wording import plural


@click.command("add-repo")
@click.argument("target", metavar="PATH|GIT_URL")
@click.option("--paper", "papers", multiple=True, metavar="ID",
              help="Link the repository to this paper (repeatable); papers whose text names the repository's "
                   "GitHub/GitLab URL are linked without it.")
@click.option("--name", help="Name in the vault (default: the folder or URL's last part).")
@click.option("--rebuild", is_flag=True,
              help="Drop the repository's rows and index all its files again (after an embedding model change).")
@click.option("--quiet", "-q", is_flag=True, help="No progress output.")
@workspace_option
@json_option
def add_repo(target, papers, name, rebuild, quiet, workspace, as_json):
    """Index a code repository: only files changed since the last run are chunked and embedded again."""
    from papervault.app.papers import add_repo as run  # deferred: not at CLI start-up

    ws = open_workspace(workspace)
    papers = paper_ids(ws, papers)
    progress = Progress(quiet or as_json)
    t0 = time.perf_counter()
    try:
        report = run(ws, target, papers=list(papers), name=name, rebuild=rebuild, progress=progress)
    finally:
        progress.close()
    data = report.as_dict()
    data["seconds"] = round(time.perf_counter() - t0, 2)
    if as_json:
        emit_json(data)
        return
    if report.rechunked:
        click.echo(report.rechunked)
    at = f" @ {report.commit[:10]}" if report.commit else ""
    click.echo(f"{report.repo}{at}: {plural(report.files, 'file')} ({len(report.added)} added, {len(report.changed)} changed, "
               f"{len(report.removed)} removed, {report.unchanged} unchanged), {plural(report.chunks, 'chunk')}, "
               f"{report.embedded} embedded in {data['seconds']} s")
    for p in report.papers:
        click.echo(f"linked {p['paper_id']} ({p['how']}: {p['evidence']})")
    click.echo(f"note: vault/{report.note}" + ("" if report.vault_commit else " (unchanged)"))
    if report.note.endswith(".new.md"):
        click.echo("the code note was edited by hand: the new version is written beside it")
    for w in report.warnings:
        click.echo(f"warning: {w}", err=True)
    if report.dropped_repos:
        click.echo("the code index was rebuilt for a new embedding model; add these repositories again: "
                   + ", ".join(report.dropped_repos), err=True)
