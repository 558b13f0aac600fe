"""`review`: list notes waiting for review, show what changed since the last review, mark notes reviewed."""

from __future__ import annotations

from dataclasses import asdict

import click

from papervault.commands.common import (emit_json, json_option, open_workspace, paper_ids as resolve_all,
                                        workspace_option)
from papervault.wording import plural


@click.command()
@click.argument("paper_ids", nargs=-1)
@click.option("--diff", "show_diff", is_flag=True, help="Show what changed in each paper since its last review.")
@click.option("--done", "mark", is_flag=True, help="Mark the papers reviewed (one commit each).")
@click.option("--by", "reviewer", default=None, help="With --done: who reviewed (kept in the frontmatter).")
@click.option("--message", "-m", "comment", default=None, help="With --done: a comment for the commit.")
@click.option("--all", "include_unanalysed", is_flag=True, help="List notes that are not analysed yet too.")
@workspace_option
@json_option
def review(paper_ids, show_diff, mark, reviewer, comment, include_unanalysed, workspace, as_json):
    """Review notes. Without ids: list the notes not yet reviewed. With ids: show each note's changes since
    its last review (--diff) or mark it reviewed (--done)."""
    from papervault.survey.review import changes, mark_reviewed, pending  # deferred: not at CLI start-up

    ws = open_workspace(workspace)
    vault = ws.vault
    if not paper_ids:
        if mark or show_diff:
            raise click.UsageError("--diff and --done need paper ids (see `papervault review` for the list)")
        items = pending(vault, include_unanalysed=include_unanalysed)
        if as_json:
            emit_json([asdict(p) for p in items])
        elif not items:
            click.echo("Nothing to review.")
        else:
            for p in items:
                flag = "  (new version in note.new.md)" if p.has_new_version else ""
                seen = f"last reviewed {p.last_review[:8]}" if p.last_review else "never reviewed"
                click.echo(f"{p.paper_id}  [{p.status}, {p.analyser or '-'}, {seen}]{flag}  {p.title}")
                if p.identity:
                    click.echo(f"    identity to check: {p.identity}")
        return
    out = []
    for pid in dict.fromkeys(resolve_all(ws, paper_ids)):
        item: dict = {"paper_id": pid}
        if show_diff or not mark:
            d = changes(vault, pid)
            item["changes"] = asdict(d)
            if not as_json:
                since = f"since review {d.since[:8]}" if d.since else "(no commits yet)"
                click.echo(f"== {pid} {since}: {plural(len(d.commits), 'commit')}")
                for c in d.commits:
                    click.echo(f"   {c['sha'][:8]} {c['message']}")
                click.echo(d.diff or "   no changes to note.md or paper.md")
                if d.new_version:
                    click.echo(f"-- note.new.md (a newer analysis beside your edited note):\n{d.new_version}")
        if mark:
            with ws.write_lock("review"):
                sha = mark_reviewed(vault, pid, reviewer=reviewer, comment=comment)
            item["commit"] = sha
            if not as_json:
                click.echo(f"{pid}: reviewed ({sha[:8] if sha else 'no change'})")
        out.append(item)
    if as_json:
        emit_json(out)
