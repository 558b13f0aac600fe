"""`sync` and `changes`: keep the vault current with the sources it follows, and say what changed."""

from __future__ import annotations

import click

from papervault.commands.common import Progress, emit_json, json_option, open_workspace, plural, workspace_option
from papervault.errors import InputError, SourceError


@click.command()
@click.option("--every", metavar="INTERVAL", help="Run a pass every INTERVAL (30m, 1h, 1d) with Prefect's own "
              "serving, until stopped; each pass is a run of the `sync` flow.")
@click.option("--no-index", "no_index", is_flag=True, help="Do not bring the index up to date after the pass.")
@click.option("--accept-removals", "accept", multiple=True, metavar="SOURCE",
              help="Mark this source's papers as gone even when most of them left at once (zotero, or "
                   "folder:PATH as [sync] folders writes it); without it such a pass stops the source. Repeatable.")
@click.option("--quiet", "-q", is_flag=True, help="No progress output.")
@workspace_option
@json_option
def sync(every, no_index, accept, quiet, workspace, as_json):
    """One pass over every source papervault.toml [sync] follows (Zotero, folders, arXiv queries): add what is
    new, update what changed, mark what left its source, then update the index."""
    ws = open_workspace(workspace)
    if every and accept:
        raise InputError("--accept-removals confirms one pass, not every pass of --every",
                         fix="run `papervault sync --accept-removals SOURCE` once, then --every again")
    if every:
        # deferred: the library and Prefect (the flows) are kept out of the CLI's start-up
        from papervault.app.sync import require_sources

        from flows.sync import parse_interval, serve

        interval = parse_interval(every)
        require_sources(ws)     # before a server starts: a workspace that follows nothing says so now
        click.echo(f"Serving the sync flow for {ws.root} every {interval} (Ctrl-C stops it)")
        serve(str(ws.root), interval, index=not no_index)
        return
    from papervault.app.sync import sync as run_sync  # deferred: not at CLI start-up

    progress = Progress(quiet or as_json)
    try:
        report = run_sync(ws, progress=progress, index=not no_index, accept_removals=accept)
    finally:
        progress.close()
    out = report.as_dict()
    if as_json:
        emit_json(out)
    else:
        print_report(out)
    if report.sources and all(s["status"] == "failed" for s in report.sources):
        raise SystemExit(1)


def print_report(out: dict) -> None:
    rec = out.get("recovered") or {}
    for line in rec.get("undone", []):
        click.echo(f"undone   vault/{line} (written by an interrupted run, not committed)")
    for line in rec.get("kept", []):
        click.echo(f"kept     vault/{line}")
    for kind in ("added", "updated", "marked"):
        for e in out[kind]:
            click.echo(f"{kind:8} {e.get('paper') or '-':32} {e['source']}: {e.get('item')} ({e['reason']})")
    for e in out["skipped"]:
        click.echo(f"skipped  {e.get('paper') or '-':32} {e['source']}: {e.get('item') or ''} ({e['reason']})")
    for e in out.get("inbox", []):
        click.echo(f"inbox    {e['id']:32} {e['query']}: {(e.get('title') or '')[:60]} (score {e['score']})")
    for e in out.get("stale_surveys", []):
        click.echo(f"survey   {e['survey']:32} {e['reason']}" + "".join(
            f"\n           quote {q['status']} (page {q['page']}): {q['quote'][:80]}" for q in e.get("quotes", [])))
    for e in out.get("surveys_gained", []):
        if e.get("survey"):
            click.echo(f"survey   {e['survey']:32} {e['reason']}")
    for s in out["sources"]:
        if s["status"] == "failed":
            click.echo(f"error: {s['source']}: {s['error']}", err=True)
    index = out.get("index") or {}
    if index.get("error"):
        click.echo(f"error: index not updated: {index['error']}", err=True)
    click.echo(f"Synced {plural(len(out['sources']), 'source')} in {out['seconds']} s: added {len(out['added'])}, "
               f"updated {len(out['updated'])}, marked {len(out['marked'])}, skipped {len(out['skipped'])}, "
               f"new in the inbox {len(out.get('inbox', []))}"
               + (f"; {sum(1 for s in out['sources'] if s['status'] == 'failed')} failed"
                  if any(s["status"] == "failed" for s in out["sources"]) else ""))


@click.command()
@click.option("--since", default="7d", show_default=True, metavar="WHEN",
              help="How far back: 7d, 12h, 2w, or a date (YYYY-MM-DD).")
@workspace_option
@json_option
def changes(since, workspace, as_json):
    """What changed in the vault: papers added, updated, marked as gone from their source."""
    from papervault.app.changes import changes as run_changes  # deferred: not at CLI start-up

    ws = open_workspace(workspace)
    out = run_changes(ws, since)
    if as_json:
        emit_json(out)
        return
    click.echo(f"Since {out['since']}:")
    for kind in ("added", "updated", "marked", "deleted"):
        for e in out[kind]:
            what = e.get("title") or ""
            extra = e.get("reason") or ", ".join(e.get("what", []))
            click.echo(f"  {kind:8} {e['id']:32} {what[:60]}" + (f" ({extra})" if extra else ""))
    for e in out.get("versions", []):
        v = e.get("version") or {}
        click.echo(f"  version  {e['id']:32} v{v.get('from')} -> v{v.get('to')}: {'; '.join(e.get('summary') or [])}")
    for e in out.get("inbox", []):
        click.echo(f"  inbox    {e['id']:32} {(e.get('title') or '')[:60]} ({e.get('reason')})")
    for e in out.get("stale_surveys", []):
        click.echo(f"  survey   {e['survey']:32} {e['reason']}"
                   + (f", {len(e['quotes'])} quote(s) moved or vanished" if e.get("quotes") else ""))
    for e in out.get("surveys_gained", []):
        click.echo(f"  survey   {e['survey']:32} {e['reason']}")
    click.echo(f"{plural(len(out['added']), 'paper')} added, {len(out['updated'])} updated, "
               f"{len(out['marked'])} marked, {len(out['deleted'])} deleted, {len(out.get('versions', []))} new "
               f"versions, {len(out.get('inbox', []))} in the inbox, {len(out.get('stale_surveys', []))} survey "
               "citations to check")


@click.group(invoke_without_command=True)
@workspace_option
@json_option
@click.pass_context
def inbox(ctx, workspace, as_json):
    """New matches of the saved arXiv queries, and works a survey's papers cite that the vault lacks, best first,
    metadata only until accepted."""
    ctx.ensure_object(dict)
    ctx.obj["workspace"] = workspace
    if ctx.invoked_subcommand is not None:
        return
    from papervault.app.inbox import listing  # deferred: not at CLI start-up

    ws = open_workspace(workspace)
    ws.require()
    items = listing(ws)
    if as_json:
        emit_json({"items": items})
        return
    for e in items:
        click.echo(f"{e['id']:20} {e['score']:.2f}  {(e.get('title') or '')[:70]}")
        click.echo(f"{'':20}       {e['reason']}")
    click.echo(f"{plural(len(items), 'paper')} in the inbox" + ("; accept one with `papervault inbox accept ID`"
                                                              if items else ""))


@inbox.command("accept")
@click.argument("ident", metavar="ID")
@click.option("--no-index", "no_index", is_flag=True, help="Do not bring the index up to date.")
@json_option
@click.pass_context
def inbox_accept(ctx, ident, no_index, as_json):
    """Add inbox entry ID (an arXiv id, or the DOI of a cited work) to the vault: metadata, and the PDF, full text
    and note where one can be fetched."""
    from papervault.app.inbox import accept  # deferred: not at CLI start-up
    from papervault.sources.dedup import normalize_arxiv  # deferred: with the inbox

    ws = open_workspace(ctx.obj.get("workspace"))
    out = accept(ws, ident, index=not no_index)
    is_arxiv = normalize_arxiv(out["id"]) == out["id"]         # an old-style id (hep-th/9901001) has a slash too
    if as_json:
        emit_json(out)
    elif out.get("paper"):
        what = f"arXiv {out['id']}" if is_arxiv else f"doi:{out['id']}"
        click.echo(f"Added {out['paper']} ({what}" + (f"v{out['version']}" if out.get("version") else "") + ")")
    if not out.get("paper"):
        again = f"arxiv:{out['id']}" if is_arxiv else out["id"]
        raise SourceError(f"{out['id']} not added: {out.get('error')}", fix=f"try again later, or `papervault add {again}`")


@inbox.command("dismiss")
@click.argument("ident", metavar="ID")
@click.pass_context
def inbox_dismiss(ctx, ident):
    """Drop inbox entry ID; its query does not bring it back."""
    from papervault.app.inbox import dismiss  # deferred: not at CLI start-up

    ws = open_workspace(ctx.obj.get("workspace"))
    entry = dismiss(ws, ident)
    click.echo(f"Dismissed {entry['id']}")
