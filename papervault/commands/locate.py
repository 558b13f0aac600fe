"""`locate`: the paper, page and anchor where a quoted passage occurs."""

from __future__ import annotations

import click

from papervault.commands.common import emit_json, json_option, open_workspace, paper_id, workspace_option


@click.command("locate")
@click.argument("quote")
@click.option("--paper", "paper", help="Only look in this paper (id).")
@click.option("--limit", "-n", type=int, default=5, show_default=True, help="At most this many papers.")
@workspace_option
@json_option
def locate(quote, paper, limit, workspace, as_json):
    """Find where a quoted passage occurs (exact or near-exact): paper, page and page anchor."""
    from papervault.app.locate import locate as run_locate  # deferred: not at CLI start-up

    ws = open_workspace(workspace)
    from papervault.app.locate import not_yet_read  # deferred: not at CLI start-up
    from papervault.parse.firstpass import scans_words  # deferred: as above

    pid = paper_id(ws, paper) if paper is not None else None
    found = run_locate(ws, quote, limit=limit, paper=pid)
    waiting = not_yet_read(ws, pid) if not found else None
    if waiting:     # (with --json too: on stderr, the list on stdout keeps its shape)
        click.echo(f"Not searched yet: {waiting['note']}.", err=True)
    if as_json:
        emit_json([f.as_dict() for f in found])
        return
    if not found:
        click.echo("Not found: no paper contains this passage (nor one close to it).", err=True)
        raise SystemExit(1)
    for f in found:
        page = f"p. {f.page}" if f.page else "no page"
        how = "exact" if f.exact else f"near-exact {f.score:.2f}"
        click.echo(f"[{f.paper_id}] {f.title} ({page}, {how})")
        click.echo(f"      {f.anchor}")
        click.echo(f"      \u201c{f.text[:300]}\u201d")
        if f.stage == "text layer":
            scans = f"; {scans_words(f.pending_pages)}" if f.pending_pages else ""
            click.echo(f"      (read by its text layer only{scans}: the full parse follows)")
