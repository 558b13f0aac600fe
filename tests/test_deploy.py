"""The deployments of prefect.yaml run for real: `survey`, `add` and `index`, deployed as its header says
(`prefect work-pool create papervault --type process`, `prefect deploy --all`) on the session's Prefect server on
127.0.0.1 (conftest `prefect_api`), one process worker polling the pool, one run of each through it.

Slow (a deploy, a worker and three flow runs, each in a process of its own): the pool, the deployments and the
worker are made once for the module; every step is bounded by a timeout.
"""

from __future__ import annotations

import os
import subprocess
import sys
import tomllib
from pathlib import Path

import pytest

from papervault.workspace import Workspace

from conftest import RUN_SPEED_VARS, start_process, stop_process, without_multilingual
from support_survey import build_corpus_vault

ROOT = Path(__file__).resolve().parent.parent
PREFECT = str(Path(sys.executable).with_name("prefect"))
POOL = "papervault"          # prefect.yaml's work pool: no other test of the run deploys to the session's server
PDF = "distributed_systems_harvest-yield-and-scalable-tolerant-systems.pdf"


def _run(cmd: list[str], env: dict, timeout: float) -> subprocess.CompletedProcess:
    r = subprocess.run(cmd, env=env, cwd=ROOT, capture_output=True, text=True, timeout=timeout)
    assert r.returncode == 0, f"{' '.join(cmd[:4])} failed:\n{r.stdout[-2000:]}\n{r.stderr[-2000:]}"
    return r


@pytest.fixture(scope="module")
def worker(tmp_path_factory, prefect_api) -> Path:
    """prefect.yaml's deployments on its pool and a process worker polling it; yields the worker's log.

    The worker's environment is the test run's less every PAPERVAULT_EMBED_* variable but the run's speed
    settings (conftest RUN_SPEED_VARS), and less the workspace, as a worker started in a fresh shell has it: each
    run names its workspace, whose papervault.toml names the model (issue 18, trap 1)."""
    if not Path(PREFECT).exists():
        pytest.skip("the prefect CLI is not installed beside this Python")
    base = tmp_path_factory.mktemp("deploy")
    env = {k: v for k, v in os.environ.items() if not k.startswith("PAPERVAULT_EMBED_") or k in RUN_SPEED_VARS}
    env.pop("PAPERVAULT_WORKSPACE", None)
    env.update(PREFECT_API_URL=prefect_api, HOME=str(base / "home"))
    (base / "home").mkdir()
    _run([PREFECT, "work-pool", "create", POOL, "--type", "process", "--overwrite"], env, 120)
    _run([PREFECT, "--no-prompt", "deploy", "--all"], env, 300)
    log = base / "worker.log"
    proc = start_process([PREFECT, "worker", "start", "--pool", POOL, "--limit", "1"], env, log, ROOT)
    try:
        yield log
    finally:
        stop_process(proc)


def run_deployment(deployment: str, params: dict, worker_log: Path) -> None:
    """Run a deployment through the module's worker and wait for it: it must complete (else its state and the
    worker's last output are shown)."""
    from prefect.deployments import run_deployment as run

    flow_run = run(deployment, parameters=params, timeout=600, poll_interval=1)
    assert flow_run.state is not None and flow_run.state.is_completed(), (
        f"{deployment}: {flow_run.state!r}\n" + worker_log.read_text(errors="replace")[-3000:])


def init_workspace(root: Path, model_dir: Path) -> Workspace:
    """A workspace that records its embedding model in papervault.toml, as `init --embed-model` does (its English
    space only: no test here asks in another language)."""
    ws, _ = Workspace.init(root, embed_model=os.environ["PAPERVAULT_EMBED_MODEL"], embed_model_path=str(model_dir))
    recorded = tomllib.loads((ws.config_path).read_text())["embed"]
    assert recorded["model_path"] == str(model_dir.resolve()), recorded
    without_multilingual(ws.root)
    return Workspace(ws.root)


def test_survey_deployment_runs_through_server_and_worker(tmp_path, corpus_dir, model_dir, worker):
    ws = init_workspace(tmp_path / "deploy-ws", model_dir)
    ids = build_corpus_vault(ws, corpus_dir, max_pages=2, only=["harvest", "paxos"])
    params = {"topic": "fault tolerance", "slug": "deployed", "workspace": str(ws.root), "papers": ["all"]}
    run_deployment("survey/survey", params, worker)
    sdir = ws.vault.survey_dir("deployed")
    for name in ("correlation.md", "outline.md", "survey.md", "references.bib", "references.json", "polish-report.md"):
        assert (sdir / name).is_file(), name
    survey_md = (sdir / "survey.md").read_text()
    assert all(f"[@{pid}" in survey_md for pid in ids)
    assert any(c.message.startswith("survey deployed: polish") for c in ws.vault.repo.iter_commits(max_count=10))


def test_add_and_index_deployments_run_through_a_worker(tmp_path, corpus_dir, model_dir, worker):
    import pymupdf

    from papervault.index.store import PaperIndex

    ws = init_workspace(tmp_path / "deploy-ws", model_dir)
    (tmp_path / "in").mkdir()
    with pymupdf.open(corpus_dir / PDF) as doc:      # its first two pages: a paper's length is not the point
        doc.select(range(2))
        doc.save(tmp_path / "in" / PDF)
    run_deployment("add/add", {"inputs": [str(tmp_path / "in")], "workspace": str(ws.root)}, worker)
    # no model variable for the worker: the index flow reads the model from papervault.toml
    run_deployment("index/index", {"workspace": str(ws.root)}, worker)
    ids = ws.vault.paper_ids()
    assert len(ids) == 1 and ws.vault.read_meta(ids[0]).status != "metadata"
    assert next(ws.vault.repo.iter_commits(max_count=1)).message.startswith("add: 1 new")
    stats = PaperIndex(ws).stats()
    assert stats["papers"] == 1 and stats["chunks"] > 5 and stats["health"] == "ok"


def test_sync_deployment_on_an_interval_schedule_runs_twice_through_the_worker(tmp_path, model_dir, worker,
                                                                                prefect_api):
    """prefect.yaml's `sync` deployment as its header says (`prefect deploy --name sync --param workspace=...`),
    here with a 20-second interval: the server makes its scheduled runs from the deployment's schedules (the
    scheduler service's own call, as the test server runs without that service), the worker picks both up; the
    first pass adds the folder's paper, the second (after the first: concurrency 1) changes nothing. Both are
    read back through the Prefect API: their states and each run's `papervault-sync` table artifact."""
    import asyncio
    import datetime as dt
    import time

    import httpx
    from prefect.client.orchestration import get_client
    from prefect.client.schemas.filters import ArtifactFilter, ArtifactFilterFlowRunId, DeploymentFilter, \
        DeploymentFilterId, FlowRunFilter, FlowRunFilterId

    from support_arxiv import make_pdf

    ws = init_workspace(tmp_path / "sync-ws", model_dir)
    folder = tmp_path / "Papers"
    folder.mkdir()
    (folder / "clocks.pdf").write_bytes(make_pdf("Time Clocks and the Ordering of Events", authors="Leslie Lamport",
                                                 body="A happened-before relation orders the events."))
    with open(ws.config_path, "a", encoding="utf-8") as fh:
        fh.write(f'\n[sync]\nfolders = ["{folder}"]\n')
    env = {k: v for k, v in os.environ.items() if not k.startswith("PAPERVAULT_EMBED_") or k in RUN_SPEED_VARS}
    env.pop("PAPERVAULT_WORKSPACE", None)
    env.update(PREFECT_API_URL=prefect_api, HOME=str(tmp_path / "deploy-home"))
    (tmp_path / "deploy-home").mkdir()
    _run([PREFECT, "--no-prompt", "deploy", "--name", "sync", "--param", f"workspace={ws.root}",
          "--interval", "20"], env, 300)

    async def scheduled_runs() -> tuple[object, list]:
        async with get_client() as client:
            dep = await client.read_deployment_by_name("sync/sync")
            assert dep.parameters["workspace"] == str(ws.root)
            intervals = {s.schedule.interval.total_seconds(): s for s in dep.schedules}
            assert 20 in intervals and intervals[20].active, intervals
            for seconds, s in intervals.items():      # prefect.yaml's hourly one paused: the test waits seconds
                if seconds != 20:
                    await client.update_deployment_schedule(dep.id, s.id, active=False)
            start = dt.datetime.now(dt.timezone.utc)
            # The server answers 503 while its SQLite database is busy (the worker and the deploy write to it);
            # scheduled runs carry idempotency keys per time, so asking again never makes a run twice.
            for _ in range(6):
                r = httpx.post(f"{prefect_api}/deployments/{dep.id}/schedule", timeout=30,
                               json={"start_time": start.isoformat(),
                                     "end_time": (start + dt.timedelta(seconds=45)).isoformat(),
                                     "min_runs": 2, "max_runs": 2})
                if r.status_code != 503:
                    break
                await asyncio.sleep(2)
            assert r.status_code < 300, r.text
            runs = await client.read_flow_runs(deployment_filter=DeploymentFilter(id=DeploymentFilterId(any_=[dep.id])))
            return dep, runs

    dep, runs = asyncio.run(scheduled_runs())
    assert len(runs) == 2 and all(r.auto_scheduled for r in runs), runs
    ids = [r.id for r in sorted(runs, key=lambda r: r.expected_start_time)]
    gap = abs((runs[0].expected_start_time - runs[1].expected_start_time).total_seconds())
    assert gap == 20, gap

    async def states() -> dict:
        async with get_client() as client:
            got = await client.read_flow_runs(flow_run_filter=FlowRunFilter(id=FlowRunFilterId(any_=ids)))
            return {r.id: r for r in got}

    deadline = time.monotonic() + 420
    while True:
        now = asyncio.run(states())
        if all(r.state and r.state.is_final() for r in now.values()):
            break
        assert time.monotonic() < deadline, ({i: r.state for i, r in now.items()},
                                             worker.read_text(errors="replace")[-3000:])
        time.sleep(2)
    assert all(now[i].state.is_completed() for i in ids), (
        {i: now[i].state for i in ids}, worker.read_text(errors="replace")[-3000:])
    first, second = sorted((now[i] for i in ids), key=lambda r: r.start_time)
    assert second.start_time >= first.end_time          # one pass at a time

    async def artifact(run_id) -> object:
        async with get_client() as client:
            (a,) = await client.read_artifacts(artifact_filter=ArtifactFilter(
                flow_run_id=ArtifactFilterFlowRunId(any_=[run_id])))
            return a

    a1, a2 = asyncio.run(artifact(first.id)), asyncio.run(artifact(second.id))
    assert a1.key == a2.key == "papervault-sync" and a1.type == "table"
    assert a1.description.startswith("added 1, updated 0, marked 0"), a1.description
    assert a2.description.startswith("added 0, updated 0, marked 0"), a2.description
    assert "clocks.pdf" in str(a1.data) and "nothing new" in str(a2.data)
    (pid,) = ws.vault.paper_ids()
    assert ws.vault.read_meta(pid).title == "Time Clocks and the Ordering of Events"
