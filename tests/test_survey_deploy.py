"""The deployment `survey` of prefect.yaml run for real: the session's Prefect server on 127.0.0.1, a process
worker, one run.

Slow (a deploy, a worker and one flow run): one test, every step bounded by a timeout.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from papervault.workspace import Workspace

from conftest import start_process, stop_process
from support_survey import build_corpus_vault

ROOT = Path(__file__).resolve().parent.parent
PREFECT = str(Path(sys.executable).with_name("prefect"))


def _run(cmd: list[str], env: dict, timeout: float) -> subprocess.CompletedProcess:
    r = subprocess.run(cmd, env=env, cwd=ROOT, capture_output=True, text=True, timeout=timeout)
    assert r.returncode == 0, f"{' '.join(cmd[:4])} failed:\n{r.stdout[-2000:]}\n{r.stderr[-2000:]}"
    return r


def test_deployment_runs_through_server_and_worker(tmp_path, corpus_dir, model_dir, prefect_api):
    if not Path(PREFECT).exists():
        pytest.skip("the prefect CLI is not installed beside this Python")
    ws, _ = Workspace.init(tmp_path / "deploy-ws")
    ids = build_corpus_vault(ws, corpus_dir, max_pages=2, only=["harvest", "paxos"])
    # The session's Prefect server (conftest `prefect_api`): the CLI, the worker and the flow run all use it.
    env = dict(os.environ, PREFECT_API_URL=prefect_api, PAPERVAULT_WORKSPACE=str(ws.root))
    worker = None
    try:
        _run([PREFECT, "work-pool", "create", "papervault", "--type", "process", "--overwrite"], env, 120)
        _run([PREFECT, "--no-prompt", "deploy", "--name", "survey"], env, 300)
        worker = start_process([PREFECT, "worker", "start", "--pool", "papervault", "--limit", "1"], env,
                        tmp_path / "worker.log", ROOT)
        params = {"topic": "fault tolerance", "slug": "deployed", "workspace": str(ws.root), "papers": ["all"]}
        r = _run([PREFECT, "deployment", "run", "survey/survey", "--params", json.dumps(params),
                  "--watch", "--watch-timeout", "600"], env, 660)
        out = r.stdout + r.stderr
        assert "Completed" in out, out[-3000:] + (tmp_path / "worker.log").read_text(errors="replace")[-3000:]
    finally:
        if worker is not None:
            stop_process(worker)
    sdir = ws.vault.survey_dir("deployed")
    for name in ("correlation.md", "outline.md", "survey.md", "references.bib", "references.json", "polish-report.md"):
        assert (sdir / name).is_file(), name
    survey_md = (sdir / "survey.md").read_text()
    assert all(f"[@{pid}" in survey_md for pid in ids)
    assert any(c.message.startswith("survey deployed: polish") for c in ws.vault.repo.iter_commits(max_count=10))
