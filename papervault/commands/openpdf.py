"""`open`: a paper's PDF, from the workspace's own copy, at a page."""

from __future__ import annotations

import os
import shlex
import shutil
import subprocess

import click

from papervault.commands.common import emit_json, json_option, open_workspace, paper_id as resolve, workspace_option
from papervault.errors import InputError


@click.command("open")
@click.argument("paper_id", metavar="ID")
@click.option("--page", "-p", type=int, default=None, help="Open at this page of the PDF (1-based, as in the "
              "full text's #page-N anchors).")
@click.option("--print", "print_only", is_flag=True, help="Print the file:// URL (with #page=N) instead of opening it.")
@workspace_option
@json_option
def open_pdf(paper_id, page, print_only, workspace, as_json):
    """Open a paper's PDF (kept by the workspace in pdfs/) with $BROWSER or xdg-open."""
    from papervault.pdfstore import locate  # deferred: not at CLI start-up

    ws = open_workspace(workspace)
    paper_id = resolve(ws, paper_id)
    out = locate(ws, paper_id, page)
    out.update(_unfinished(ws, paper_id, page))
    if out.get("note") and not as_json:
        click.echo(f"note: {out['note']}", err=True)
    if as_json:
        emit_json(out)
        return
    if print_only:
        click.echo(out["url"])
        return
    browser = os.environ.get("BROWSER", "").strip()
    # $BROWSER honours `#page=N`; xdg-open hands the URL to the desktop's PDF viewer.
    argv = [*shlex.split(browser), out["url"]] if browser else (["xdg-open", out["url"]] if shutil.which("xdg-open") else None)
    if argv is None:
        raise InputError("no $BROWSER and no xdg-open to open the PDF with",
                         fix=f"set $BROWSER, or open the URL yourself: papervault open {paper_id} --print")
    try:
        subprocess.Popen(argv, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                         start_new_session=True)
    except OSError as exc:
        raise InputError(f"cannot run {argv[0]}: {exc.strerror or exc}",
                         fix=f"set $BROWSER to a program that opens URLs, or use: papervault open {paper_id} --print") from None
    click.echo(out["url"])


def _unfinished(ws, paper_id: str, page: int | None) -> dict:
    """For a paper still read by its first pass: its stage, the scanned pages that wait for OCR, and a note (the
    page asked for is a scan whose text is not in the vault yet); {} for a complete paper."""
    from papervault.parse.firstpass import behind, is_first_pass, pending_pages  # deferred: not at CLI start-up

    if not is_first_pass(ws.vault.read_meta(paper_id).parser):
        return {}
    # the PDF is whole; its text in the vault is the first pass's (papervault.app.arrival parses it behind)
    scans = pending_pages(ws.vault.read_fulltext(paper_id))
    return {"stage": "text layer", "pending_pages": scans,
            "note": (f"page {page} is a scan waiting for OCR: its text is not in the vault yet" if page in scans
                     else "the paper is read by its text layer only") + f"; {behind(ws)}"}
