"""`demo`: the whole pipeline on synthetic papers (or a folder of PDFs), printing where the results are."""

from __future__ import annotations

import time
from pathlib import Path

import click

from papervault.commands.common import emit_json, json_option


def run_demo(ws_dir: Path, papers: Path | None, *, backend: str = "extractive", topic: str | None = None,
             log=print) -> dict:
    """init -> add -> index -> survey -> site build, timing each step; returns where everything is."""
    from papervault.demo import SPECS, make_synthetic_papers
    from papervault.ingest import add
    from papervault.workspace import Workspace

    timings: dict[str, float] = {}
    t0 = time.perf_counter()
    ws, _ = Workspace.init(ws_dir)
    if papers is None:
        papers_dir = ws.state_dir / "demo-papers"
        make_synthetic_papers(papers_dir)
        log(f"Generated {len(SPECS)} synthetic demo papers (labelled as such) in {papers_dir}")
        topic = topic or "replication and consistency in storage systems (synthetic demo)"
    else:
        papers_dir = papers
        topic = topic or "replication and consistency in distributed storage"
    t = time.perf_counter()
    report = add(ws, [str(papers_dir)], backend=backend)
    timings["add"] = time.perf_counter() - t
    log(f"add: {len(report.added)} new, {len(report.merged)} merged, {len(report.unchanged)} unchanged, "
        f"{len(report.problems)} problem(s) [{timings['add']:.1f} s]")
    for p in report.problems:
        log(f"  skipped {p.source}: {p.error}")

    from papervault.index.store import PaperIndex

    t = time.perf_counter()
    with ws.write_lock("index"):
        PaperIndex(ws).sync()
    timings["index"] = time.perf_counter() - t
    log(f"index: done [{timings['index']:.1f} s]")

    from flows.survey import run_survey

    t = time.perf_counter()
    result = run_survey(topic, workspace=str(ws.root), backend=backend)
    timings["survey"] = time.perf_counter() - t
    survey_dir = Path(result["dir"])
    log(f"survey: {survey_dir} [{timings['survey']:.1f} s]")

    from papervault.site.build import build_site

    t = time.perf_counter()
    site = build_site(ws)
    timings["site"] = time.perf_counter() - t
    timings["total"] = time.perf_counter() - t0
    log(f"site: {ws.site_dir} [{timings['site']:.1f} s]")
    return {"workspace": str(ws.root), "papers": len(ws.vault.paper_ids()), "survey": str(survey_dir),
            "site": str(ws.site_dir / "index.html"), "timings": {k: round(v, 2) for k, v in timings.items()},
            "problems": [p.as_dict() for p in report.problems], "site_pages": site.get("pages") if isinstance(site, dict) else None}


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
    result = run_demo(target, papers, backend=backend, topic=topic, log=log)
    if as_json:
        emit_json(result)
        return
    click.echo("")
    click.echo(f"Workspace: {result['workspace']} ({result['papers']} papers)")
    click.echo(f"Survey:    {result['survey']}/survey.md")
    click.echo(f"Site:      {result['site']}  (open it in a browser, or: papervault site serve -w {result['workspace']})")
    click.echo(f"Wall time: {result['timings']['total']:.1f} s " +
               "(" + ", ".join(f"{k} {v:.1f} s" for k, v in result["timings"].items() if k != "total") + ")")
