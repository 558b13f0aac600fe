"""`demo`: the whole pipeline on synthetic papers (or a folder of PDFs), printing where the results are."""

from __future__ import annotations

from pathlib import Path

import click

from papervault.commands.common import emit_json, json_option
from papervault.wording import plural


@click.command()
@click.option("--papers", type=click.Path(exists=True, file_okay=False, path_type=Path),
              help="A folder of PDFs (default: synthetic papers the demo generates, labelled as such).")
@click.option("--workspace", "-w", "workspace", metavar="DIR",
              help="Where to build the demo workspace (default: demo-workspace/<synthetic|folder name>).")
@click.option("--backend", default="extractive", show_default=True, help="Analyser: extractive | claude | openai.")
@click.option("--topic", help="The survey topic.")
@json_option
def demo(papers, workspace, backend, topic, as_json):
    """Run init, add, index, survey and site build end to end, and print where the survey and site are."""
    target = Path(workspace) if workspace else Path("demo-workspace") / (papers.resolve().name if papers else "synthetic")
    log = (lambda *a, **k: None) if as_json else click.echo
    # deferred: the library is kept out of the CLI's start-up
    from papervault.app.demo import run_demo

    # the survey as `papervault survey` runs it by default: in this process (no Prefect server to start)
    result = run_demo(target, papers, backend=backend, topic=topic, log=log)
    if as_json:
        emit_json(result)
        return
    click.echo("")
    click.echo(f"Workspace: {result['workspace']} ({plural(result['papers'], 'paper')})")
    click.echo(f"Survey:    {result['survey']}/survey.md")
    click.echo(f"Site:      {result['site']}  (open it in a browser, or: papervault site serve -w {result['workspace']})")
    click.echo(f"Wall time: {result['timings']['total']:.1f} s " +
               "(" + ", ".join(f"{k} {v:.1f} s" for k, v in result["timings"].items() if k != "total") + ")")
