"""The Prefect flow `survey` on the indexed shared-corpus papers: killed in stage 3, resumed, then re-run from an edited outline.

The module works on a private copy of the run's corpus workspace (the ten corpus papers the e2e searches ask
about, conftest's CORPUS_INDEXED: parsed by the project's parser and indexed, English vectors only), its notes
set back from `analysed` to `parsed` so that stage 3 has every paper to analyse; the index holds every chunk
already, so the flow runs embed next to nothing. It makes three runs: a subprocess killed with SIGKILL while it
analyses, the resuming run (in this process), and a run on a local Dask cluster after a person edited the
outline.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from papervault.vault import frontmatter
from papervault.workspace import Workspace

from conftest import CORPUS_INDEXED

TOPIC = "replication and consistency in distributed storage"
SLUG = "repl"
KILL_AFTER = 3          # analysed notes seen before the run is killed


def _analysed(ws: Workspace, ids) -> set[str]:
    done = set()
    for pid in ids:
        try:
            data, _ = frontmatter.split(ws.vault.note_path(pid).read_text(encoding="utf-8"))
        except (OSError, ValueError):
            continue  # being replaced right now
        if data.get("status") == "analysed":
            done.add(pid)
    return done


def _kill_during_analysis(ws: Workspace, ids, log: Path) -> set[str]:
    """Start `papervault survey` in its own process group, SIGKILL the group once a few notes are analysed."""
    cmd = [sys.executable, "-m", "papervault", "survey", TOPIC, "--slug", SLUG, "--papers", "all", "--workers", "1",
           "--json", "--workspace", str(ws.root)]
    with open(log, "wb") as out:
        proc = subprocess.Popen(cmd, stdout=out, stderr=subprocess.STDOUT, env=dict(os.environ),
                                start_new_session=True)
        deadline = time.monotonic() + 600
        try:
            while time.monotonic() < deadline:
                done = _analysed(ws, ids)
                if len(done) >= KILL_AFTER:
                    os.killpg(proc.pid, signal.SIGKILL)   # the run (it uses the session's Prefect server)
                    proc.wait(timeout=30)
                    return _analysed(ws, ids)
                if proc.poll() is not None:
                    pytest.fail(f"the survey ended (rc {proc.returncode}) before {KILL_AFTER} notes were analysed:\n"
                                + log.read_text(errors="replace")[-3000:])
                time.sleep(0.05)
            pytest.fail("no note was analysed within 600 s")
        finally:
            if proc.poll() is None:
                os.killpg(proc.pid, signal.SIGKILL)
                proc.wait(timeout=30)


@pytest.fixture(scope="module")
def run(tmp_path_factory, corpus_workspace, prefect_api):
    from flows.survey import run_survey

    root = tmp_path_factory.mktemp("survey-flow")
    shutil.copytree(corpus_workspace, root / "ws", symlinks=True)
    ws = Workspace(root / "ws").require()
    ids = sorted(ws.vault.paper_ids())
    for pid in ids:     # `add` analysed them: back to parsed (the body stays, so no note counts as edited)
        note = ws.vault.note_path(pid)
        text = note.read_text(encoding="utf-8")
        assert "\nstatus: analysed\n" in text, pid
        note.write_text(text.replace("\nstatus: analysed\n", "\nstatus: parsed\n", 1), encoding="utf-8")
    ws.vault.commit("test: the notes before their analysis")
    assert not _analysed(ws, ids)
    head = ws.vault.repo.head.commit.hexsha
    before = _kill_during_analysis(ws, ids, root / "killed.log")
    killed_head = ws.vault.repo.head.commit.hexsha
    result = run_survey(TOPIC, slug=SLUG, workspace=str(ws.root), papers=["all"])
    return {"ws": ws, "ids": ids, "before": before, "head": head, "killed_head": killed_head, "result": result}


def test_resume_after_sigkill_skips_finished_papers(run):
    ids, before, result = run["ids"], run["before"], run["result"]
    from support_faults import record

    finished = set(result["current"]) | set(result["analysed"])
    # What the killed run committed: only stage 1's selection.md (a finished stage), never part of stage 3.
    repo = run["ws"].vault.repo
    committed = [c.message.splitlines()[0] for c in repo.iter_commits(f"{run['head']}..{run['killed_head']}")]
    whole = all(m.startswith(f"survey {SLUG}: select ") for m in committed)
    record({"command": "survey (killed in stage 3)", "killed": True,
            "recovered": finished == set(ids) and whole,
            "lost": len(set(ids) - finished - {f["id"] for f in result["failed"]}),
            "duplicated": len(before & set(result["analysed"]))})
    assert ids == sorted(CORPUS_INDEXED)
    assert KILL_AFTER <= len(before) < len(ids), "the run was killed in the middle of stage 3"
    assert whole and len(committed) <= 1, f"the killed run committed a half-finished stage: {committed}"
    # the resumed run did not redo the papers the killed run had finished
    assert before <= set(result["current"])
    assert not before & set(result["analysed"])
    redone = set(result["analysed"]) | {f["id"] for f in result["failed"]}
    assert redone == set(ids) - before
    log = [c.message for c in run["ws"].vault.repo.iter_commits(max_count=20)]
    assert any(m.startswith(f"survey {SLUG}: analyse {len(set(ids) - before) - len(result['failed'])} paper")
               for m in log), log


def test_every_stage_commits_its_artefact_and_every_citation_resolves(run):
    ws, result = run["ws"], run["result"]
    sdir = ws.vault.survey_dir(SLUG)
    for name in ("correlation.md", "outline.md", "survey.md", "references.bib", "references.json", "polish-report.md"):
        assert (sdir / name).is_file(), name
    messages = [c.message.splitlines()[0] for c in ws.vault.repo.iter_commits(max_count=20)]
    for stage in ("select", "correlate", "outline", "draft", "polish"):
        assert any(m.startswith(f"survey {SLUG}: {stage}") for m in messages), (stage, messages)
    assert ws.vault.is_clean()
    known = set(ws.vault.paper_ids())
    survey_md = (sdir / "survey.md").read_text()
    header, _ = frontmatter.split(survey_md)
    assert "references.bib" in header["bibliography"]
    bib = (sdir / "references.bib").read_text()
    csl = {item["id"] for item in json.loads((sdir / "references.json").read_text())}
    cited = set(re.findall(r"@([A-Za-z0-9][A-Za-z0-9_.:-]*[A-Za-z0-9])", survey_md))
    assert cited and cited <= known
    for key in cited:
        assert f"{{{key}," in bib and key in csl
    for name in ("correlation.md", "outline.md", "polish-report.md"):
        keys = set(re.findall(r"\[@([A-Za-z0-9][A-Za-z0-9_.:-]*[A-Za-z0-9])", (sdir / name).read_text()))
        assert keys <= known, name
    # page links point at anchors that exist in the papers' full text
    for pid, page in set(re.findall(r"\.\./\.\./papers/([^/]+)/paper\.md#page-(\d+)", survey_md)):
        assert f'<a id="page-{page}"></a>' in ws.vault.read_fulltext(pid)
    assert result["claims"] > 10 and result["supported"] + result["flags"] >= result["claims"]
    report = (sdir / "polish-report.md").read_text()
    assert f"Cited claims checked against passages of the cited papers: {result['claims']}" in report
    # the outline and the comparison table are Prefect artifacts of the run
    from prefect.artifacts import Artifact

    outline = Artifact.get(f"survey-{SLUG}-outline")
    table = Artifact.get(f"survey-{SLUG}-comparison")
    assert outline is not None and "Purpose:" in outline.data
    assert table is not None and table.type == "table" and len(json.loads(table.data)) == len(run["ids"])

    # the per-paper tasks of the flow run are named by paper
    import anyio
    from prefect.client.orchestration import get_client
    from prefect.client.schemas.filters import TaskRunFilter, TaskRunFilterName

    wanted = {f"{stage}-{pid}" for stage in ("parse", "analyse") for pid in run["ids"]}

    async def task_runs() -> set[str]:
        async with get_client() as c:
            runs = await c.read_task_runs(task_run_filter=TaskRunFilter(name=TaskRunFilterName(any_=sorted(wanted))))
        return {t.name for t in runs}

    assert anyio.run(task_runs) == wanted


def test_planted_citation_is_caught_by_the_index_backed_check(run):
    """The polish task with the real index: a true quotation passes, a planted claim is flagged."""
    from papervault.app.survey import PolishInput, SurveyContext, polish
    from papervault.survey.evidence import paper_sentences, quotable
    from papervault.survey.polish import SUPPORT_THRESHOLD

    ws = run["ws"]
    pid = next(p for p in run["ids"] if p.startswith("baker2011"))          # Megastore
    full = ws.vault.read_fulltext(pid)
    quote = next(s for s in paper_sentences(pid, full) if quotable(s.text))
    body = (f"- “{quote.text}” [@{pid}, p. {quote.page}]\n"
            f"- Megastore stores every entity group on a single magnetic tape robot in one building [@{pid}].\n")
    res = polish(SurveyContext(ws, TOPIC, SLUG, "extractive"), PolishInput(run["ids"], body, SUPPORT_THRESHOLD))
    assert res["claims"] == 2 and res["supported"] == 1
    assert [f["text"][:40] for f in res["flags"]] == ["Megastore stores every entity group on a"]
    assert "magnetic tape robot in one building [@%s] **(unverified)**" % pid in res["markdown"]


def test_edited_outline_is_honoured_on_a_dask_cluster(run):
    """A person's outline edit, drafted by a run whose tasks go to a local Dask cluster (prefect-dask)."""
    from flows.survey import run_survey

    ws = run["ws"]
    opath = ws.vault.survey_dir(SLUG) / "outline.md"
    meta, body = frontmatter.split(opath.read_text())
    related = [p for p in run["ids"] if re.search(r"(?i)megastore|paxos", ws.vault.read_meta(p).title or "")]
    assert len(related) == 2, related
    # a person drops the theme sections and adds their own, citing two papers
    parts = re.split(r"(?m)^(?=## \d+\. )", body)
    kept = [p for p in parts if not p.startswith("## ") or "kind: theme" not in p]
    edited = "".join(kept).rstrip() + (f"\n\n## 99. Fault tolerance in practice\n\nPurpose: how replicated systems "
                                       f"survive failures of machines and datacenters.\n\nCites: [@{related[0]}], [@{related[1]}]\n")
    opath.write_text(frontmatter.join(meta, edited))
    api_before = os.environ.get("PREFECT_API_URL")
    result = run_survey(TOPIC, slug=SLUG, workspace=str(ws.root), papers=["all"], task_runner="dask", workers=2)
    assert result["outline"] == "kept" and result["analysed"] == [] and not result["failed"]
    assert os.environ.get("PREFECT_API_URL") == api_before, "the Dask run restores the environment it changed"
    assert opath.read_text() == frontmatter.join(meta, edited), "the person's outline is never overwritten"
    survey_md = (ws.vault.survey_dir(SLUG) / "survey.md").read_text()
    headings = re.findall(r"(?m)^## \d+\. (.+)$", survey_md)
    assert headings[-1] == "Fault tolerance in practice"
    assert not any(h.startswith("Theme:") for h in headings)
    last = survey_md.split("Fault tolerance in practice", 1)[1]
    assert f"[@{related[0]}" in last and f"[@{related[1]}" in last
    # the person's outline is theirs to commit: no survey commit takes it in
    rel = f"surveys/{SLUG}/outline.md"
    assert f" M {rel}" in ws.vault.repo.git.status("--porcelain").splitlines()
    assert not any(rel in c.stats.files for c in ws.vault.repo.iter_commits(max_count=10)
                   if "kept the edited outline" in c.message)


def test_survey_runs_its_tasks_on_the_dask_scheduler_it_is_given(run, cli_run):
    """`papervault survey --task-runner dask --dask-address ADDR` sends its tasks to that scheduler, not to a
    cluster of its own (the same runner helpers as `add` and `index`)."""
    from distributed import LocalCluster

    ws = run["ws"]
    with LocalCluster(n_workers=1, threads_per_worker=2, processes=False, dashboard_address=None) as cluster:
        assert not cluster.scheduler.task_prefixes
        out = cli_run(["survey", TOPIC, "--slug", "repl-remote", "--papers", "all", "--task-runner", "dask",
                       "--dask-address", cluster.scheduler_address, "--json", "--workspace", ws.root])
        ran = sorted(cluster.scheduler.task_prefixes)
    result = json.loads(out.stdout)
    assert not result["failed"] and (ws.vault.survey_dir("repl-remote") / "survey.md").is_file()
    assert ran, "no task reached the given scheduler"
