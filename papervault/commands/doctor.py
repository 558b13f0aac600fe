"""`doctor`: check the workspace, index, vault, Zotero access and backends."""

from __future__ import annotations

import sys

import click

from papervault.commands.common import emit_json, json_option, open_workspace, workspace_option
from papervault.wording import plural


@click.command()
@click.option("--fix", "do_fix", is_flag=True,
              help="Repair what an interrupted command left (stale git lock, staged or half-written files), "
                   "then check.")
@workspace_option
@json_option
def doctor(do_fix, workspace, as_json):
    """Check every part of the workspace and say how to fix each problem (exit 1 if any check fails)."""
    from papervault.doctor import fix, run_checks  # deferred: it reads the index (pyarrow)

    ws = open_workspace(workspace, require=False)
    fixed = fix(ws) if do_fix and ws.exists else []
    if not as_json:
        for line in fixed:
            click.echo(f"[fixed] {line}")
    checks = run_checks(ws)
    failed = [c for c in checks if not c.ok]
    if as_json:
        emit_json({"workspace": str(ws.root), "ok": not failed, "fixed": fixed,
                   "checks": [c.as_dict() for c in checks]})
    else:
        for c in checks:
            mark = "ok  " if c.ok and c.level != "warning" else ("warn" if c.ok else "FAIL")
            click.echo(f"[{mark}] {c.name}: {c.detail}")
            if c.fix and (not c.ok or c.level == "warning"):
                click.echo(f"       fix: {c.fix}")
        click.echo("All checks passed." if not failed else f"{plural(len(failed), 'problem')} found.")
    if failed:
        sys.exit(1)
