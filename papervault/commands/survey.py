"""`survey`: write a literature survey of vault papers by running the Prefect flow `survey` in this process.

The command belongs to the CLI layer, which may call `flows/` (the library below it never does).
"""

from __future__ import annotations

import click

from papervault.commands.common import emit_json, json_option, open_workspace, workspace_option


@click.command()
@click.argument("topic")
@click.option("--backend", type=click.Choice(["extractive", "claude", "openai"]), default=None,
              help="Who writes: extractive (quotations only, no model), claude or openai (default: the workspace's).")
@click.option("--slug", help="Folder under vault/surveys/ (default: from the topic).")
@click.option("--papers", "papers", multiple=True, metavar="SPEC",
              help="Which papers (default: those about TOPIC, chosen from the index): all, tag:X or collection:X "
                   "(the topic's papers among them), query:TEXT, arxiv:QUERY (added). Repeat to combine.")
@click.option("--max-papers", type=click.IntRange(min=1), default=None,
              help="At most this many papers chosen by the topic (default: as many as stand out).")
@click.option("--arxiv-max", type=int, default=10, show_default=True, help="With arxiv:QUERY: how many papers to retrieve.")
@click.option("--task-runner", type=click.Choice(["thread", "dask"]), default="thread", show_default=True,
              help="Run per-paper and per-section tasks in threads, or on a local Dask cluster.")
@click.option("--workers", type=int, default=None, help="Parallel tasks (threads, or Dask worker processes).")
@click.option("--threshold", type=float, default=None,
              help="Support score a cited sentence needs (default: the measured one, see docs/survey.md).")
@workspace_option
@json_option
def survey(topic, backend, slug, papers, max_papers, arxiv_max, task_runner, workers, threshold, workspace, as_json):
    """Survey vault papers on TOPIC: correlation, outline, draft and polish in vault/surveys/<slug>/."""
    from papervault.survey.select import parse_spec

    ws = open_workspace(workspace)
    for spec in papers:
        parse_spec(spec)  # a typo in a selection fails before Prefect starts
    from flows.survey import run_survey

    result = run_survey(topic, task_runner=task_runner, workers=workers, slug=slug, papers=list(papers) or None,
                        backend=backend, workspace=str(ws.root), arxiv_max=arxiv_max, threshold=threshold,
                        max_papers=max_papers)
    if as_json:
        emit_json(result)
        return
    for p in result.get("problems", []):
        click.echo(f"warning: {p}", err=True)
    for f in result.get("failed", []):
        click.echo(f"analysis failed for {f['id']}: {f['message']}", err=True)
    click.echo(f"Survey written to {result['dir']} ({len(result['papers'])} papers, see selection.md; "
               f"{result['sections']} sections, "
               f"outline {result['outline']}).")
    click.echo(f"Polish: {result['claims']} cited claims checked, {result['changes']} fixed, {result['flags']} flagged "
               f"(see polish-report.md). {result['seconds']} s.")
