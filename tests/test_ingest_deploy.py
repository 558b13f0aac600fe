"""The deployments `add` and `index` of prefect.yaml run for real: a Prefect server on 127.0.0.1, a process worker,
one run of each. The same steps as the survey deployment's test (its helpers are reused).

Slow (a server start, a deploy, a worker and two flow runs): one test, every step bounded by a timeout.
"""

from __future__ import annotations

import json
import os
import shutil
import time
from pathlib import Path

import httpx
import pytest

from papervault.workspace import Workspace

from test_survey_deploy import PREFECT, ROOT, _free_port, _run, _start, _stop

PDF = "distributed_systems_harvest-yield-and-scalable-tolerant-systems.pdf"


def test_add_and_index_deployments_run_through_a_worker(tmp_path, corpus_dir, model_dir):
    if not Path(PREFECT).exists():
        pytest.skip("the prefect CLI is not installed beside this Python")
    from papervault.index.store import PaperIndex

    ws, _ = Workspace.init(tmp_path / "deploy-ws")
    (tmp_path / "in").mkdir()
    shutil.copy(corpus_dir / PDF, tmp_path / "in" / PDF)
    port = _free_port()
    env = dict(os.environ)
    env.update(PREFECT_HOME=str(tmp_path / "prefect-server-home"), PREFECT_API_URL=f"http://127.0.0.1:{port}/api",
               PREFECT_SERVER_ANALYTICS_ENABLED="false", PREFECT_UI_ENABLED="false",
               PAPERVAULT_WORKSPACE=str(ws.root), PYTHONPATH=str(ROOT))
    server_env = {k: v for k, v in env.items() if k != "PREFECT_API_URL"}
    server = _start([PREFECT, "server", "start", "--host", "127.0.0.1", "--port", str(port)], server_env,
                    tmp_path / "server.log", ROOT)
    worker = None
    try:
        deadline = time.monotonic() + 240
        while True:
            try:
                if httpx.get(f"http://127.0.0.1:{port}/api/health", timeout=5).status_code == 200:
                    break
            except httpx.HTTPError:
                pass
            assert server.poll() is None, (tmp_path / "server.log").read_text(errors="replace")[-3000:]
            assert time.monotonic() < deadline, "the Prefect server did not become healthy within 240 s"
            time.sleep(1)
        _run([PREFECT, "work-pool", "create", "papervault", "--type", "process"], env, 120)
        for name in ("add", "index"):
            _run([PREFECT, "--no-prompt", "deploy", "--name", name], env, 300)
        worker = _start([PREFECT, "worker", "start", "--pool", "papervault", "--limit", "1"], env,
                        tmp_path / "worker.log", ROOT)
        for deployment, params in (("add/add", {"inputs": [str(tmp_path / "in")], "workspace": str(ws.root)}),
                                   ("index/index", {"workspace": str(ws.root)})):
            r = _run([PREFECT, "deployment", "run", deployment, "--params", json.dumps(params),
                      "--watch", "--watch-timeout", "600"], env, 660)
            out = r.stdout + r.stderr
            assert "Completed" in out, out[-3000:] + (tmp_path / "worker.log").read_text(errors="replace")[-3000:]
    finally:
        if worker is not None:
            _stop(worker)
        _stop(server)
    ids = ws.vault.paper_ids()
    assert len(ids) == 1 and ws.vault.read_meta(ids[0]).status != "metadata"
    assert next(ws.vault.repo.iter_commits(max_count=1)).message.startswith("add: 1 new")
    stats = PaperIndex(ws).stats()
    assert stats["papers"] == 1 and stats["chunks"] > 5 and stats["health"] == "ok"
