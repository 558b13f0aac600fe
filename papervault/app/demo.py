"""The demo: init -> add -> index -> survey -> site build on synthetic papers (or a folder of PDFs), timed."""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any, Callable

from papervault.wording import plural
from papervault.app.adding import add
from papervault.app.surveyplan import run_survey_inprocess
from papervault.demo import SPECS, make_synthetic_papers
from papervault.site.build import build_site
from papervault.workspace import Workspace

Survey = Callable[..., dict[str, Any]]


def run_demo(ws_dir: Path, papers: Path | None, *, backend: str = "extractive", topic: str | None = None,
             log: Callable[[str], Any] = print, survey: Survey | None = None) -> dict[str, Any]:
    """Build a demo workspace end to end; returns where everything is and how long each step took.

    `survey(topic, workspace=..., backend=...)` runs the survey: by default in this process, as
    `papervault survey` does (`papervault.app.surveyplan.run_survey_inprocess`); a caller may pass a flow.
    """
    if survey is None:
        survey = run_survey_inprocess
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
    # the one add: the papers searchable when it returns, every vector embedded (the survey reads them next)
    report = add(ws, [str(papers_dir)], backend=backend, wait=True)
    timings["add"] = time.perf_counter() - t
    log(f"add: {len(report.added)} new, {len(report.merged)} merged, {len(report.unchanged)} unchanged, "
        f"{plural(len(report.problems), 'problem')} [{timings['add']:.1f} s]")
    for p in report.problems:
        log(f"  skipped {p.source}: {p.error}")
    log(report.index["line"])

    t = time.perf_counter()
    result = survey(topic, workspace=str(ws.root), backend=backend)
    timings["survey"] = time.perf_counter() - t
    survey_dir = Path(result["dir"])
    log(f"survey: {survey_dir} [{timings['survey']:.1f} s]")

    t = time.perf_counter()
    site = build_site(ws)
    timings["site"] = time.perf_counter() - t
    timings["total"] = time.perf_counter() - t0
    log(f"site: {ws.site_dir} [{timings['site']:.1f} s]")
    return {"workspace": str(ws.root), "papers": len(ws.vault.paper_ids()), "survey": str(survey_dir),
            "site": str(ws.site_dir / "index.html"), "timings": {k: round(v, 2) for k, v in timings.items()},
            "problems": [p.as_dict() for p in report.problems], "site_pages": site.get("pages") if isinstance(site, dict) else None}
