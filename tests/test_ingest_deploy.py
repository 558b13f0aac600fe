"""The deployments `add` and `index` of prefect.yaml run for real: the session's Prefect server on 127.0.0.1
(conftest `prefect_api`), a process worker, one run of each. The same steps as the survey deployment's test (its
helpers are reused).

Slow (a deploy, a worker and two flow runs): one test, every step bounded by a timeout.
"""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest


from conftest import start_process, stop_process
from test_survey_deploy import PREFECT, ROOT, _run, init_workspace, run_deployment, worker_env

PDF = "distributed_systems_harvest-yield-and-scalable-tolerant-systems.pdf"


def test_add_and_index_deployments_run_through_a_worker(tmp_path, corpus_dir, model_dir, prefect_api):
    if not Path(PREFECT).exists():
        pytest.skip("the prefect CLI is not installed beside this Python")
    from papervault.index.store import PaperIndex

    ws = init_workspace(tmp_path / "deploy-ws", model_dir)
    (tmp_path / "in").mkdir()
    shutil.copy(corpus_dir / PDF, tmp_path / "in" / PDF)
    # no PAPERVAULT_EMBED_* variable for the worker: the index flow reads the model from papervault.toml
    env = worker_env(ws, prefect_api)
    worker = None
    try:
        # prefect.yaml's deployments on a pool of this test's own: the survey deployment's test may run beside it
        # on the run's shared server, with its own worker polling
        pool = "papervault-ingest-test"
        _run([PREFECT, "work-pool", "create", pool, "--type", "process", "--overwrite"], env, 120)
        for name in ("add", "index"):
            _run([PREFECT, "--no-prompt", "deploy", "--name", name, "--pool", pool], env, 300)
        worker = start_process([PREFECT, "worker", "start", "--pool", pool, "--limit", "1"], env,
                        tmp_path / "worker.log", ROOT)
        for deployment, params in (("add/add", {"inputs": [str(tmp_path / "in")], "workspace": str(ws.root)}),
                                   ("index/index", {"workspace": str(ws.root)})):
            run_deployment(deployment, params, env, tmp_path / "worker.log")
    finally:
        if worker is not None:
            stop_process(worker)
    ids = ws.vault.paper_ids()
    assert len(ids) == 1 and ws.vault.read_meta(ids[0]).status != "metadata"
    assert next(ws.vault.repo.iter_commits(max_count=1)).message.startswith("add: 1 new")
    stats = PaperIndex(ws).stats()
    assert stats["papers"] == 1 and stats["chunks"] > 5 and stats["health"] == "ok"
