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


# Only the runs that are killed (or watched) parse and embed for real, the parse in the workspace's own cache
# (`.papervault/cache/parse`): the kill points are read from that cache and from the work's measured length, and
# land in real work. Every other run (references' adds, reruns) uses the session's shared parse and vector caches,
# so the same PDFs are not parsed and embedded again and again.
OWN_CACHE = {"PAPERVAULT_PARSE_CACHE_DIR": "", "PAPERVAULT_EMBED_VECTOR_CACHE": ""}


def run(args: list[str], ws: Path, *, env: dict | None = None) -> subprocess.CompletedProcess:
    """The command in this process, as the console script runs it (`papervault.cli.main`: a typed error is one
    line on stderr and an exit status), with `env` set for the call: for the runs that are neither killed nor
    watched (references, reruns, what a command prints or writes). Saves a Python start and a model load each."""
    from click.testing import CliRunner

    from papervault.cli import main

    argv = [str(a) for a in args]
    with CliRunner().isolation(env={"PAPERVAULT_WORKSPACE": str(ws), **(env or {})}) as (out, err, _):
        try:
            main(argv)
            code = 0
        except SystemExit as exc:
            code = exc.code if isinstance(exc.code, int) else (0 if exc.code is None else 1)
        return subprocess.CompletedProcess(argv, code, out.getvalue().decode("utf-8", "replace"),
                                           err.getvalue().decode("utf-8", "replace"))


def start(args: list[str], ws: Path, env: dict | None = None, *, own_cache: bool = True) -> subprocess.Popen:
    """A run that will be killed (or watched while it works), in its own process group; with `own_cache` its own
    parse cache and no vector cache, so that it does the work for real."""
    e = {**os.environ, "PAPERVAULT_WORKSPACE": str(ws), **(OWN_CACHE if own_cache else {}), **(env or {})}
    return subprocess.Popen([sys.executable, "-m", "papervault", *args], stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True, env=e, start_new_session=True)


def cpu_seconds(pid: int) -> float:
    """CPU time (user + system, all threads) process `pid` has used so far, from /proc: the length of its work
    whatever else the machine runs at the same time."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def kill(proc: subprocess.Popen) -> bool:
    """SIGKILL the process and its children now; False if it had already finished."""
    if proc.poll() is not None:
        return False
    os.killpg(proc.pid, signal.SIGKILL)
    proc.wait(timeout=30)
    return True


def kill_when(proc: subprocess.Popen, ready, *, timeout: float = 600) -> bool:
    """SIGKILL the process as soon as `ready()` is true (polled every 5 ms); False if it finished first."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            return False
        if ready():
            return kill(proc)
        time.sleep(0.005)
    kill(proc)
    raise AssertionError(f"the kill point was not reached within {timeout} s")


def wait_for(proc: subprocess.Popen, ready, *, timeout: float = 600) -> float:
    """Wait until `ready()` (the process still running), and return the CPU seconds the process had used then."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if ready():
            return cpu_seconds(proc.pid)
        if proc.poll() is not None:
            raise AssertionError("the process finished before the awaited point")
        time.sleep(0.005)
    raise AssertionError(f"the awaited point was not reached within {timeout} s")


def parsed_count(ws: Path) -> int:
    """PDFs a running add has parsed so far (its own parse cache)."""
    return len(list((ws / ".papervault" / "cache" / "parse").rglob("*.pickle")))


def journal_lines(ws: Path) -> int:
    """Paper folders a running add has started writing (its write-ahead journal), or -1 without a journal."""
    j = ws / ".papervault" / "journal" / "add"
    try:
        return len([ln for ln in j.read_text(encoding="utf-8").splitlines() if ln.strip()])
    except OSError:
        return -1


def add_commits(ws: Path) -> int:
    """How many `add:` commits the vault has (a finished add makes exactly one)."""
    repo = git.Repo(ws / "vault")
    if not repo.head.is_valid():
        return 0
    return sum(1 for c in repo.iter_commits() if c.message.startswith("add:"))


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
    from filelock import FileLock

    TALLY.parent.mkdir(parents=True, exist_ok=True)
    with FileLock(str(TALLY.with_suffix(".lock"))):   # parallel test processes append to one tally
        data = json.loads(TALLY.read_text()) if TALLY.exists() else []
        data.append(entry)
        tmp = TALLY.with_suffix(f".tmp{os.getpid()}")
        tmp.write_text(json.dumps(data, indent=1))
        tmp.replace(TALLY)   # a run stopped mid-write leaves the previous tally, never half of one
