"""Helpers for the fault-injection suite: run the CLI, kill it with SIGKILL, and compare workspace states."""

from __future__ import annotations

import hashlib
import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import git

ROOT = Path(__file__).resolve().parent.parent
TALLY = ROOT / "test-artifacts" / "fault-tally.json"


# Fault runs parse for real in every workspace (no shared parse cache), so kill points land in real work.
OWN_CACHE = {"PAPERVAULT_PARSE_CACHE_DIR": ""}


def cli(args: list[str], ws: Path, *, timeout: float = 600, env: dict | None = None) -> subprocess.CompletedProcess:
    e = dict(os.environ, PAPERVAULT_WORKSPACE=str(ws), **OWN_CACHE, **(env or {}))
    return subprocess.run([sys.executable, "-m", "papervault", *args], capture_output=True, text=True,
                          env=e, timeout=timeout)


def start(args: list[str], ws: Path, env: dict | None = None) -> subprocess.Popen:
    e = dict(os.environ, PAPERVAULT_WORKSPACE=str(ws), **OWN_CACHE, **(env or {}))
    return subprocess.Popen([sys.executable, "-m", "papervault", *args], stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True, env=e, start_new_session=True)


def kill_after(proc: subprocess.Popen, seconds: float) -> bool:
    """SIGKILL the process (and its children) after `seconds`; False if it had already finished."""
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            return False
        time.sleep(0.05)
    if proc.poll() is not None:
        return False
    os.killpg(proc.pid, signal.SIGKILL)
    proc.wait(timeout=30)
    return True


def _body(note: str) -> str:
    from papervault.vault.frontmatter import split

    meta, body = split(note)
    return body


def vault_state(ws: Path) -> dict[str, dict]:
    """What an add leaves, per paper: its full text, figures, note body and sources (timestamps ignored)."""
    papers = ws / "vault" / "papers"
    out = {}
    for d in sorted(p for p in papers.iterdir() if p.is_dir()):
        note = (d / "note.md").read_text(encoding="utf-8") if (d / "note.md").exists() else ""
        from papervault.vault.frontmatter import split

        meta, body = split(note) if note else ({}, "")
        out[d.name] = {
            "paper": hashlib.sha256((d / "paper.md").read_bytes()).hexdigest() if (d / "paper.md").exists() else None,
            "figures": sorted(p.name for p in (d / "figures").glob("*.png")) if (d / "figures").is_dir() else [],
            "note": hashlib.sha256(body.encode()).hexdigest(),
            "sha256": meta.get("sha256"),
            "sources": sorted(meta.get("sources") or []),
        }
    return out


def vault_problems(ws: Path) -> list[str]:
    """Leftovers a crash could cause: uncommitted changes, temp files, a pending journal."""
    problems = []
    repo = git.Repo(ws / "vault")
    if repo.is_dirty(untracked_files=True):
        problems.append(f"vault not clean: {repo.git.status('--short')[:500]}")
    tmp = [str(p) for p in (ws / "vault").rglob(".*.tmp") if ".git" not in p.parts]
    if tmp:
        problems.append(f"temp files left: {tmp[:3]}")
    journal = ws / ".papervault" / "journal" / "add"
    if journal.exists():
        problems.append("journal left behind")
    return problems


def record(entry: dict) -> None:
    """Append one fault's outcome to the tally printed at the end of the test run."""
    TALLY.parent.mkdir(parents=True, exist_ok=True)
    data = json.loads(TALLY.read_text()) if TALLY.exists() else []
    data.append(entry)
    TALLY.write_text(json.dumps(data, indent=1))
