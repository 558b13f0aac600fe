"""Helpers for the MCP tests: an indexed workspace built once per session from real corpus PDFs, server launch
parameters, and free loopback ports."""

from __future__ import annotations

import os
import socket
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
PAPERS = {
    # id: corpus file (paxos has five extracted figures; harvest is short)
    "vanrenesse2015paxos": "distributed_systems_paxos-made-moderately-complex.pdf",
    "fox1999harvest": "distributed_systems_harvest-yield-and-scalable-tolerant-systems.pdf",
}


def paxos_harvest(tmp_path_factory, corpus: Path) -> Path:
    """The PAPERS workspace, indexed (both vector spaces), built once per run for every test process that asks
    (conftest.build_once): the MCP, cross-lingual and index tests all read this one. Read-only: copy it to write."""
    from conftest import build_once, shared_tmp

    return build_once(shared_tmp(tmp_path_factory) / "paxos-harvest" / "ws", lambda root: _build(root, corpus))


def build_workspace(root: Path, corpus: Path) -> Path:
    """Parse the PAPERS with the project's parser, write them through the Vault, commit, index. Idempotent, and
    safe across parallel test processes: the first builds it (under a file lock), the others reuse it."""
    from filelock import FileLock

    root.parent.mkdir(parents=True, exist_ok=True)
    with FileLock(str(root.with_name(root.name + ".lock"))):
        if not (root / ".built").exists():
            _build(root, corpus)
    return root


def _build(root: Path, corpus: Path) -> None:
    from papervault.index.store import PaperIndex
    from papervault.models import PaperMeta
    from papervault.workspace import Workspace

    done = root / ".built"
    ws, _ = Workspace.init(root)
    years = {"vanrenesse2015paxos": 2015, "fox1999harvest": 1999}
    topics = {"vanrenesse2015paxos": "consensus", "fox1999harvest": "availability"}
    for pid, name in PAPERS.items():
        from conftest import parse_once

        parsed = parse_once(corpus / name)
        ws.vault.write_fulltext(pid, parsed)
        meta = PaperMeta(id=pid, title=parsed.title or pid, authors=parsed.authors, year=years[pid],
                         abstract=parsed.abstract or None, pages=parsed.pages, sha256=parsed.sha256,
                         parser=parsed.parser, tags=["distributed-systems", topics[pid]], sources=[str(corpus / name)],
                         venue="ACM Computing Surveys" if pid.endswith("paxos") else "HotOS")
        ws.vault.write_note(meta, f"# {meta.title}\n\n## Summary\n\n{(parsed.abstract or meta.title)[:800]}\n")
    ws.vault.commit("add: test papers")
    PaperIndex(ws).sync()
    done.write_text("ok")


def server_env(**extra: str) -> dict[str, str]:
    """The environment a server subprocess needs: the local model, offline, and the test's HOME; and the run's
    speed settings (conftest RUN_SPEED_VARS: one ONNX thread, the int8 model made once for the run)."""
    from conftest import run_speed_env

    env = {k: os.environ[k] for k in ("PAPERVAULT_EMBED_MODEL", "PAPERVAULT_EMBED_MODEL_PATH", "HF_HUB_OFFLINE",
                                      "HOME", "PATH", "DO_NOT_TRACK") if k in os.environ}
    env.update(run_speed_env())
    env.update(extra)
    return env


def papervault_cmd() -> list[str]:
    return [sys.executable, "-m", "papervault"]


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def wait_port(port: int, proc=None, timeout: float = 60.0) -> None:
    end = time.monotonic() + timeout
    while time.monotonic() < end:
        if proc is not None and proc.poll() is not None:
            raise RuntimeError(f"server exited with {proc.returncode}: {proc.stderr.read() if proc.stderr else ''}")
        try:
            with socket.create_connection(("127.0.0.1", port), timeout=0.5):
                return
        except OSError:
            time.sleep(0.1)
    raise TimeoutError(f"nothing listening on 127.0.0.1:{port} after {timeout} s")
