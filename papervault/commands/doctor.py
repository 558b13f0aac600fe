"""`doctor`: check the workspace, index, vault, Zotero access and backends."""

from __future__ import annotations

import sys

import click

from papervault.commands.common import emit_json, json_option, open_workspace, workspace_option


@click.command()
@workspace_option
@json_option
def doctor(workspace, as_json):
    """Check every part of the workspace and say how to fix each problem (exit 1 if any check fails)."""
    from papervault.doctor import run_checks

    ws = open_workspace(workspace, require=False)
    checks = run_checks(ws)
    failed = [c for c in checks if not c.ok]
    if as_json:
        emit_json({"workspace": str(ws.root), "ok": not failed, "checks": [c.as_dict() for c in checks]})
    else:
        for c in checks:
            mark = "ok  " if c.ok and c.level != "warning" else ("warn" if c.ok else "FAIL")
            click.echo(f"[{mark}] {c.name}: {c.detail}")
            if c.fix and (not c.ok or c.level == "warning"):
                click.echo(f"       fix: {c.fix}")
        click.echo("All checks passed." if not failed else f"{len(failed)} problem(s) found.")
    if failed:
        sys.exit(1)
