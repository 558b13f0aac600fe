"""The deployment `survey` of prefect.yaml run for real: the session's Prefect server on 127.0.0.1, a process
worker, one run.

Slow (a deploy, a worker and one flow run): one test, every step bounded by a timeout.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tomllib
from pathlib import Path

import pytest

from papervault.workspace import Workspace

from conftest import start_process, stop_process
from support_survey import build_corpus_vault

ROOT = Path(__file__).resolve().parent.parent
PREFECT = str(Path(sys.executable).with_name("prefect"))
POOL = "papervault-survey-test"


def worker_env(ws: Workspace, prefect_api: str) -> dict[str, str]:
    """The environment of the Prefect CLI and worker: the test's, less every PAPERVAULT_EMBED_* variable, as a
    worker started in a fresh shell has it. The workspace's papervault.toml names the model (issue 18, trap 1)."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("PAPERVAULT_EMBED_")}
    return dict(env, PREFECT_API_URL=prefect_api, PAPERVAULT_WORKSPACE=str(ws.root))


def init_workspace(root: Path, model_dir: Path) -> Workspace:
    """A workspace that records its embedding model in papervault.toml, as `init --embed-model` does."""
    ws, _ = Workspace.init(root, embed_model=os.environ["PAPERVAULT_EMBED_MODEL"], embed_model_path=str(model_dir))
    recorded = tomllib.loads((ws.config_path).read_text())["embed"]
    assert recorded["model_path"] == str(model_dir.resolve()), recorded
    return ws


def _run(cmd: list[str], env: dict, timeout: float) -> subprocess.CompletedProcess:
    r = subprocess.run(cmd, env=env, cwd=ROOT, capture_output=True, text=True, timeout=timeout)
    assert r.returncode == 0, f"{' '.join(cmd[:4])} failed:\n{r.stdout[-2000:]}\n{r.stderr[-2000:]}"
    return r


def run_deployment(deployment: str, params: dict, env: dict, worker_log: Path) -> None:
    """Run a deployment through the started worker and wait for it: it must complete (else the CLI's and the
    worker's last output are shown)."""
    r = _run([PREFECT, "deployment", "run", deployment, "--params", json.dumps(params),
              "--watch", "--watch-timeout", "600"], env, 660)
    out = r.stdout + r.stderr
    assert "Completed" in out, out[-3000:] + worker_log.read_text(errors="replace")[-3000:]


def test_deployment_runs_through_server_and_worker(tmp_path, corpus_dir, model_dir, prefect_api):
    if not Path(PREFECT).exists():
        pytest.skip("the prefect CLI is not installed beside this Python")
    ws = init_workspace(tmp_path / "deploy-ws", model_dir)
    ids = build_corpus_vault(ws, corpus_dir, max_pages=2, only=["harvest", "paxos"])
    # The session's Prefect server (conftest `prefect_api`): the CLI, the worker and the flow run all use it.
    # The worker has no PAPERVAULT_EMBED_* variable: the flow finds the model in the workspace's settings.
    env = worker_env(ws, prefect_api)
    worker = None
    try:
        # prefect.yaml's deployment, on a pool of this test's own: the run's server is shared by the parallel
        # test processes, and the ingest deployments' test may have its worker polling at the same time
        _run([PREFECT, "work-pool", "create", POOL, "--type", "process", "--overwrite"], env, 120)
        _run([PREFECT, "--no-prompt", "deploy", "--name", "survey", "--pool", POOL], env, 300)
        worker = start_process([PREFECT, "worker", "start", "--pool", POOL, "--limit", "1"], env,
                        tmp_path / "worker.log", ROOT)
        params = {"topic": "fault tolerance", "slug": "deployed", "workspace": str(ws.root), "papers": ["all"]}
        run_deployment("survey/survey", params, env, tmp_path / "worker.log")
    finally:
        if worker is not None:
            stop_process(worker)
    sdir = ws.vault.survey_dir("deployed")
    for name in ("correlation.md", "outline.md", "survey.md", "references.bib", "references.json", "polish-report.md"):
        assert (sdir / name).is_file(), name
    survey_md = (sdir / "survey.md").read_text()
    assert all(f"[@{pid}" in survey_md for pid in ids)
    assert any(c.message.startswith("survey deployed: polish") for c in ws.vault.repo.iter_commits(max_count=10))
