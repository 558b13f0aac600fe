"""`survey`: write a literature survey of vault papers, the declaration `papervault.app.surveyplan.SURVEY` run
in this process, or with `--task-runner` as the Prefect flow `survey` (its tasks on threads or a Dask cluster).

The command belongs to the CLI layer, which may call `flows/` (the library below it never does).
"""

from __future__ import annotations

import contextlib
import logging
import os
import time
from pathlib import Path

import click

from papervault.registry import BACKENDS as BACKEND_REGISTRY
from papervault.commands.common import (RegisteredChoice, RegisteredOption, emit_json, json_option, open_workspace,
                                       plural, workspace_option)


@click.command()
@click.argument("topic", required=False)
@click.option("--backend", cls=RegisteredOption, type=RegisteredChoice(BACKEND_REGISTRY), default=None,
              describe=lambda names: f"Who writes: {names}; extractive quotes the papers, no model (default: the "
                                     "workspace's).")
@click.option("--slug", help="Folder under vault/surveys/ (default: from the topic).")
@click.option("--papers", "papers", multiple=True, metavar="SPEC",
              help="Which papers (default: those about TOPIC, chosen from the index): all, tag:X or collection:X "
                   "(the topic's papers among them), query:TEXT, arxiv:QUERY (added). Repeat to combine.")
@click.option("--max-papers", type=click.IntRange(min=1), default=None,
              help="At most this many papers chosen by the topic (default: as many as stand out).")
@click.option("--arxiv-max", type=int, default=10, show_default=True, help="With arxiv:QUERY: how many papers to retrieve.")
@click.option("--task-runner", type=click.Choice(["thread", "dask"]), default=None,
              help="Run as a Prefect flow, its per-paper and per-section tasks in threads or on a Dask cluster "
                   "(default: in this process, without Prefect).")
@click.option("--workers", type=int, default=None,
              help="Parallel tasks (threads, or Dask worker processes; default 4 / 2).")
@click.option("--dask-address", metavar="ADDR",
              help="With --task-runner dask: an existing Dask scheduler (tcp://host:8786) instead of a local cluster.")
@click.option("--threshold", type=float, default=None,
              help="Support score a cited sentence needs (default: the measured one, see docs/survey.md).")
@click.option("--select-only", is_flag=True,
              help="Choose the papers and write selection.md, then stop (no flow, no model): review and edit it, "
                   "then run the same command without this flag to write the survey.")
@click.option("--refresh", "refresh", metavar="SLUG",
              help="Show what the survey SLUG's selection.md would get now (papers entering and leaving, with "
                   "reasons); nothing is written unless --run.")
@click.option("--run", "run_again", is_flag=True, help="With --refresh: run the survey again (its topic, slug and "
              "selection; your edits to selection.md kept).")
@click.option("--no-cache", "no_cache", is_flag=True,
              help="Ask the model again even where it answered the same request before (by default a request "
                   "whose prompts, schema and files are unchanged is answered from .papervault/cache/answers/).")
@workspace_option
@json_option
def survey(topic, backend, slug, papers, max_papers, arxiv_max, task_runner, workers, dask_address, threshold,
           select_only, refresh, run_again, no_cache, workspace, as_json):
    """Survey vault papers on TOPIC: correlation, outline, draft and polish in vault/surveys/<slug>/."""
    from papervault.survey.select import parse_spec  # deferred: not at CLI start-up

    if no_cache:
        # read by every backend this process (and the task runner's workers it starts) builds
        os.environ["PAPERVAULT_AGENTS_ANSWER_CACHE"] = "false"
    ws = open_workspace(workspace)
    if run_again and not refresh:
        raise click.UsageError("--run goes with --refresh SLUG")
    if refresh:
        from papervault.app.refresh import preview  # deferred: not at CLI start-up

        diff = preview(ws, refresh)
        if not run_again:
            _show_refresh(diff, as_json)
            return
        if not as_json:
            _show_refresh(diff, False)
        topic, slug = diff["topic"], refresh
        papers = tuple(papers) or tuple(diff["papers"])
    if not topic:
        raise click.UsageError("give a TOPIC (or --refresh SLUG)")
    for spec in papers:
        parse_spec(spec)  # a typo in a selection fails before Prefect starts
    t0 = time.perf_counter()
    if select_only:
        _select_only(topic, ws, slug=slug, papers=list(papers) or None, backend=backend, arxiv_max=arxiv_max,
                     max_papers=max_papers, as_json=as_json, t0=t0)
        return
    params = dict(slug=slug, papers=list(papers) or None, backend=backend, arxiv_max=arxiv_max, threshold=threshold,
                  max_papers=max_papers)
    if task_runner is None:
        from papervault.app.surveyplan import run_survey as run_here  # deferred: not at CLI start-up
        from papervault.pipeline.executors import InProcess

        with _stage_display(enabled=not as_json, where="in this process") as progress:
            executor = InProcess(workers or ws.settings.agents.concurrency)
            result = run_here(ws, topic, executor=executor, on_stage=progress, **params)
    else:
        # Prefect reads its settings when first imported: its console shows warnings only (set before the import)
        os.environ.setdefault("PREFECT_LOGGING_HANDLERS_CONSOLE_LEVEL", "WARNING")
        from flows.survey import run_survey  # deferred: Prefect loads here, after the setting above

        with _quiet_prefect_console(), _stage_display(enabled=not as_json, where="as a Prefect flow") as progress:
            result = run_survey(topic, task_runner=task_runner, workers=workers, dask_address=dask_address,
                                workspace=str(ws.root), progress=progress, **params)
    result["wall_seconds"] = round(time.perf_counter() - t0, 1)   # Prefect's start-up and shutdown included
    if as_json:
        emit_json(result)
        return
    for p in result.get("problems", []):
        click.echo(f"warning: {p}", err=True)
    for f in result.get("failed", []):
        click.echo(f"analysis failed for {f['id']}: {f['message']}", err=True)
    report = Path(result["dir"]) / "polish-report.md"
    click.echo(f"Survey written to {result['dir']} ({plural(len(result['papers']), 'paper')}, see selection.md; "
               f"{plural(result['sections'], 'section')}, outline {result['outline']}).")
    click.echo(f"Polish: {plural(result['claims'], 'cited claim')} checked, {result['changes']} fixed, "
               f"{result['flags']} flagged (see {report}).")
    click.echo(f"Done in {result['wall_seconds']:.1f} s ({result['seconds']:.1f} s in the stages).")
    _show_unfinished(result)


def _show_unfinished(result: dict) -> None:
    """The selected papers a survey read before they were finished, and how to get the complete survey."""
    got = result.get("unfinished") or {}
    for p in got.get("papers", []):
        click.echo(f"not finished: {p['id']}: {p['note']}", err=True)
    if got.get("hint"):
        click.echo(f"Unfinished: {got['hint']}", err=True)


def _show_refresh(diff: dict, as_json: bool) -> None:
    """The difference `survey --refresh` found, for a person (titles are one line of plain text)."""
    from papervault.survey.selection import _one_line  # deferred: not at CLI start-up

    if as_json:
        emit_json(diff)
        return
    for p in diff["problems"]:
        click.echo(f"warning: {p}", err=True)
    click.echo(f"Survey {diff['survey']} ({_one_line(diff['topic'], 120)}): {diff['now']} papers selected now, "
               f"{diff['would']} if it ran again.")
    for e in diff["entering"]:
        click.echo(f"  + {e['id']}  {_one_line(e['title'], 100)}  ({_one_line(e['reason'], 160)})")
    for e in diff["leaving"]:
        click.echo(f"  - {e['id']}  {_one_line(e['title'], 100)}  ({_one_line(e['reason'], 160)})")
    if not diff["entering"] and not diff["leaving"]:
        click.echo("  no change: the selection would stay as it is.")
    else:
        click.echo(f"Run it again with: papervault survey --refresh {diff['survey']} --run")


def _select_only(topic, ws, *, as_json: bool, t0: float, **params) -> None:
    """Stage 1 alone, in this process: it reads the index and writes one file, so it needs no Prefect run."""
    from papervault.app.surveyplan import run_survey_inprocess  # deferred: not at CLI start-up

    result = run_survey_inprocess(topic, workspace=ws.root, select_only=True, **params)
    result["wall_seconds"] = round(time.perf_counter() - t0, 1)
    if as_json:
        emit_json(result)
        return
    for p in result.get("problems", []):
        click.echo(f"warning: {p}", err=True)
    edits = result["edits"]
    kept = (f" (keeping your {len(edits['added'])} added and {len(edits['struck'])} struck out)"
            if any(edits.values()) else "")
    if result.get("missing"):
        click.echo(f"{plural(len(result['missing']), 'work')} cited by the selection {'is' if len(result['missing']) == 1 else 'are'} "
                   "not in the vault: listed in selection.md (`papervault inbox` offers those with a DOI or arXiv id).")
    if result.get("review"):
        click.echo(f"Reviewed by the model: {result['review']} (each move says why in selection.md).")
    click.echo(f"Selected {plural(len(result['papers']), 'paper')}{kept} in "
               f"{Path(result['dir']) / 'selection.md'}: untick or add papers there, then run the same command "
               f"without --select-only to write the survey (your edits are kept).")
    _show_unfinished(result)


STAGES = ("retrieve", "parse", "analyse", "index", "correlate", "outline", "draft", "polish")


@contextlib.contextmanager
def _stage_display(enabled: bool, where: str):
    """The progress handed down to the survey: one line on stderr per stage as it finishes (`[3/8] analyse
    2.1 s`), instead of Prefect's log lines; None when `enabled` is false (--json)."""
    def show(name: str, seconds: float) -> None:
        n = STAGES.index(name) + 1 if name in STAGES else "?"
        click.echo(f"[{n}/{len(STAGES)}] {name:<10} {seconds:6.1f} s", err=True)

    if not enabled:
        yield None
        return
    click.echo(f"[0/{len(STAGES)}] starting the survey {where} ...", err=True)
    yield show


@contextlib.contextmanager
def _quiet_prefect_console():
    """Prefect's console handler shows only warnings and errors while the flow runs in this process; its
    records still reach the API handler, so the run's logs are in Prefect's UI and `prefect flow-run logs`."""
    from prefect.logging.handlers import PrefectConsoleHandler  # deferred: Prefect is not for CLI start-up

    handlers = {h for name in ("", "prefect", "prefect.flow_runs", "prefect.task_runs")
                for h in logging.getLogger(name).handlers if isinstance(h, PrefectConsoleHandler)}
    before = {h: h.level for h in handlers}
    for h in handlers:
        h.setLevel(max(h.level, logging.WARNING))
    try:
        yield
    finally:
        for h, level in before.items():
            h.setLevel(level)
