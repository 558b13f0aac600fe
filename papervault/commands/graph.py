"""`graph`: a paper's citation neighbourhood in the vault, each edge with its evidence."""

from __future__ import annotations

import click

from papervault.commands.common import emit_json, json_option, open_workspace, paper_id, workspace_option


@click.command("graph")
@click.argument("paper")
@workspace_option
@json_option
def graph(paper, workspace, as_json):
    """The vault papers PAPER cites and those that cite it, each with the reference line and its page."""
    from papervault.app.graph import neighbourhood  # deferred: not at CLI start-up

    ws = open_workspace(workspace)
    got = neighbourhood(ws, paper_id(ws, paper))
    if as_json:
        emit_json(got)
        return
    p = got["paper"]
    click.echo(f"[{p['id']}] {p['title']} ({p['year'] or 'n.d.'})")

    def show(label: str, rows: list) -> None:
        click.echo(f"{label} ({len(rows)}):")
        for r in rows:
            ev = r["evidence"]
            where = f"p. {ev['printed_page']}" if ev["page"] else "page unknown"
            click.echo(f"  [{r['id']}] {r['title']} ({r['year'] or 'n.d.'})")
            click.echo(f"      in {ev['in']}, {where}: \u201c{ev['reference'][:300]}\u201d")

    show("Cites, in the vault", got["cites"])
    if not got["has_references"]:
        click.echo("  (no reference list in its full text)")
    show("Cited by, in the vault", got["cited_by"])
