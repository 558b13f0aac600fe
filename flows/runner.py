"""Running a flow in this process on the task runner the command line chose, for every flow (`add`, `index`,
`survey`): threads, a local Dask cluster of `--workers` processes, or an existing one at `--dask-address`.

Dask workers are other processes and must reach the Prefect API the flow reports to; with no server
configured, `api_for_workers` starts Prefect's temporary local server for the run (the in-process ephemeral API
would be private to this process).
"""

from __future__ import annotations

import logging
import os
from contextlib import contextmanager
from typing import Any

os.environ.setdefault("PREFECT_SERVER_EPHEMERAL_STARTUP_TIMEOUT_SECONDS", "180")

from prefect.settings import PREFECT_API_URL, temporary_settings  # noqa: E402
from prefect.task_runners import ThreadPoolTaskRunner  # noqa: E402

from papervault.errors import PapervaultError  # noqa: E402


def task_runner(kind: str = "thread", workers: int | None = None, address: str | None = None, *,
                threads_per_worker: int = 1):
    """The task runner for `--task-runner thread|dask`, `--workers N` and `--dask-address`; a local cluster
    runs `threads_per_worker` threads in each of its processes."""
    if kind == "thread":
        return ThreadPoolTaskRunner(max_workers=workers or 4)
    if kind != "dask":
        raise PapervaultError(f"unknown task runner {kind!r}", fix="use --task-runner thread or dask")
    try:
        from prefect_dask import DaskTaskRunner  # deferred: Dask is optional and heavy, only for --task-runner dask
    except ImportError:
        raise PapervaultError("the dask task runner needs prefect-dask", fix="pip install prefect-dask") from None
    if address:
        return DaskTaskRunner(address=address)
    return DaskTaskRunner(cluster_kwargs={"n_workers": workers or 2, "threads_per_worker": threads_per_worker,
                                          "processes": True, "dashboard_address": None,
                                          "silence_logs": logging.WARNING})


@contextmanager
def api_for_workers():
    """While open, a Prefect API that Dask worker processes can reach: the configured server, or a temporary
    local one started here, which the workers find through the environment they inherit."""
    if PREFECT_API_URL.value():
        yield
        return
    from prefect.server.api.server import SubprocessASGIServer  # deferred: Prefect's server takes ~1 s to import

    server = SubprocessASGIServer()
    server.start(timeout=int(os.environ.get("PREFECT_SERVER_EPHEMERAL_STARTUP_TIMEOUT_SECONDS", "180")))
    previous = os.environ.get("PREFECT_API_URL")
    os.environ["PREFECT_API_URL"] = server.api_url
    try:
        with temporary_settings({PREFECT_API_URL: server.api_url}):
            yield
    finally:
        if previous is None:
            os.environ.pop("PREFECT_API_URL", None)
        else:
            os.environ["PREFECT_API_URL"] = previous


def run(flow_fn, *, kind: str = "thread", workers: int | None = None, address: str | None = None,
        threads_per_worker: int = 1, **params: Any) -> Any:
    """`flow_fn(**params)` in this process on the chosen task runner (with a reachable API for Dask)."""
    call = flow_fn.with_options(task_runner=task_runner(kind, workers, address,
                                                        threads_per_worker=threads_per_worker))
    if kind != "dask":
        return call(**params)
    with api_for_workers():
        return call(**params)
