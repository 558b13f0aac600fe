"""Interrupted git states in the vault, through the CLI: the next `add` recovers, `doctor` names each state
with the command that fixes it, and `doctor --fix` fixes it.

A kill between `git add` and `git commit` is made for real: `add` runs with GitPython pointed at a `git` that
SIGKILLs its caller when asked to commit (optionally leaving the `index.lock` a killed git leaves).
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import git
import pytest

from support_faults import run


def cli(args: list[str]) -> subprocess.CompletedProcess:
    """Run a command in-process (CliRunner) in the test's workspace, where no process behaviour is tested."""
    from click.testing import CliRunner

    from papervault.cli import cli as group

    res = CliRunner().invoke(group, args, catch_exceptions=False)
    return subprocess.CompletedProcess(args, res.exit_code, res.stdout, res.stderr)


def papervault(args: list[str], ws: Path, env: dict | None = None) -> subprocess.CompletedProcess:
    e = dict(os.environ, PAPERVAULT_WORKSPACE=str(ws), **(env or {}))
    return subprocess.run([sys.executable, "-m", "papervault", *args], capture_output=True, text=True, env=e,
                          timeout=300)


@pytest.fixture
def ws(workspace_env) -> Path:
    """The test's workspace (PAPERVAULT_WORKSPACE, set by conftest), created."""
    assert cli(["init", str(workspace_env)]).returncode == 0
    return workspace_env


@pytest.fixture
def bibs(tmp_path) -> dict[str, Path]:
    a = tmp_path / "a.bib"
    a.write_text("@article{doe2020first, title={The First Paper of the Vault}, author={Doe, Jane}, year={2020}}\n",
                 encoding="utf-8")
    b = tmp_path / "b.bib"
    b.write_text("@article{roe2021second, title={A Second Paper Added Later}, author={Roe, Ann}, year={2021}}\n",
                 encoding="utf-8")
    merge = tmp_path / "merge.bib"   # the first paper again, from another file: a merge changes its note
    merge.write_text("@article{Doe2020, title={The first paper of the vault}, author={Jane Doe}, year={2020},"
                     " doi={10.1234/first.2020}}\n", encoding="utf-8")
    return {"a": a, "b": b, "merge": merge}


def killing_git(tmp_path: Path, *, leave_lock: bool | tuple[str, ...], on: str = "commit") -> dict:
    """Environment for a `papervault` whose git kills it (SIGKILL) on `git commit` (or the git command `on`),
    after `git add` ran, leaving the lock files named (`leave_lock=True`: the index's), as a git killed in the
    middle of its commit does."""
    real = shutil.which("git")
    script = tmp_path / "git-killer"
    names = ("index.lock",) if leave_lock is True else (leave_lock or ())
    lock = "".join(f'mkdir -p "$(dirname "$(pwd)/.git/{n}")"; touch "$(pwd)/.git/{n}"\n    ' for n in names)
    script.write_text("#!/bin/sh\n"
                      "for a in \"$@\"; do\n"
                      f"  if [ \"$a\" = {on} ]; then\n"
                      f"    {lock}"
                      "    kill -9 $PPID\n"
                      "    exit 137\n"
                      "  fi\n"
                      "done\n"
                      f"exec {real} \"$@\"\n", encoding="utf-8")
    script.chmod(0o755)
    return {"GIT_PYTHON_GIT_EXECUTABLE": str(script)}


def staged(ws: Path) -> list[str]:
    return git.Repo(ws / "vault").git.diff("--cached", "--name-only", "HEAD").splitlines()


def assert_clean(ws: Path) -> None:
    repo = git.Repo(ws / "vault")
    assert not repo.is_dirty(untracked_files=True), repo.git.status("--porcelain")
    assert not (ws / "vault" / ".git" / "index.lock").exists()


def interrupt_add(ws: Path, tmp_path: Path, inputs: list[Path], *, leave_lock: bool) -> None:
    res = papervault(["add", *map(str, inputs)], ws, env=killing_git(tmp_path, leave_lock=leave_lock))
    assert res.returncode == -9, (res.returncode, res.stderr[-1000:])
    assert staged(ws), "the add was killed before it staged anything"


def test_kill_between_git_add_and_commit_is_recovered_by_the_next_add(ws, tmp_path, bibs):
    assert cli(["add", str(bibs["a"])]).returncode == 0
    interrupt_add(ws, tmp_path, [bibs["b"], bibs["merge"]], leave_lock=False)
    assert "papers/roe2021second/note.md" in staged(ws)

    doc = cli(["doctor"])
    assert doc.returncode == 1
    assert "[FAIL] interrupted add: an interrupted `papervault add` left 2 paper folders uncommitted" in doc.stdout
    assert "fix: run `papervault doctor --fix` to roll them back" in doc.stdout

    res = cli(["add", str(bibs["b"]), str(bibs["merge"])])
    assert "Traceback" not in res.stderr and "GitCommandError" not in res.stderr, res.stderr
    assert res.returncode == 0, res.stderr
    assert "Added 1 paper, merged 1" in res.stdout
    assert_clean(ws)
    log = git.Repo(ws / "vault").git.log("--format=%s").splitlines()
    assert len(log) == 3 and log[0].startswith("add: 1 new (roe2021second); 1 merged")
    note = (ws / "vault" / "papers" / "doe2020first" / "note.md").read_text(encoding="utf-8")
    assert "10.1234/first.2020" in note and note.count(str(bibs["merge"])) == 1
    assert cli(["doctor"]).returncode == 0


def test_kill_that_leaves_index_lock_is_recovered_by_the_next_add(ws, tmp_path, bibs):
    assert cli(["add", str(bibs["a"])]).returncode == 0
    interrupt_add(ws, tmp_path, [bibs["b"]], leave_lock=True)
    assert (ws / "vault" / ".git" / "index.lock").exists()
    res = cli(["add", str(bibs["b"])])
    assert res.returncode == 0 and "Traceback" not in res.stderr, res.stderr
    assert "Added 1 paper" in res.stdout
    assert_clean(ws)


def test_kill_in_the_middle_of_a_commit_leaves_head_and_branch_locks_that_the_next_add_clears(ws, tmp_path, bibs):
    assert cli(["add", str(bibs["a"])]).returncode == 0
    branch = git.Repo(ws / "vault").active_branch.name
    left = ("index.lock", "HEAD.lock", f"refs/heads/{branch}.lock")
    interrupt_add(ws, tmp_path, [bibs["b"]], leave_lock=left)
    assert all((ws / "vault" / ".git" / n).exists() for n in left)
    doc = cli(["doctor"])
    assert "[FAIL] vault git lock: vault/.git/index.lock, vault/.git/HEAD.lock" in doc.stdout, doc.stdout
    res = cli(["add", str(bibs["b"])])
    assert res.returncode == 0 and "Traceback" not in res.stderr, res.stderr
    assert "Added 1 paper" in res.stdout
    assert_clean(ws)
    assert not any((ws / "vault" / ".git" / n).exists() for n in left)
    assert cli(["doctor"]).returncode == 0


def test_stale_index_lock_is_one_line_and_doctor_fixes_it(ws, bibs):
    lock = ws / "vault" / ".git" / "index.lock"
    lock.write_bytes(b"")   # what a git killed outside papervault leaves
    res = run(["add", str(bibs["a"])], ws)     # as the console script runs it: a typed error is one line
    assert res.returncode == 1
    lines = res.stderr.strip().splitlines()
    assert len(lines) == 1 and "Traceback" not in res.stderr, res.stderr
    assert "index.lock exists: a git command in the vault is running, or was killed" in lines[0]
    assert "run `papervault doctor --fix`" in lines[0]

    doc = cli(["doctor"])
    assert doc.returncode == 1 and "[FAIL] vault git lock: vault/.git/index.lock exists" in doc.stdout
    assert "fix: if no git command is running in vault/, run `papervault doctor --fix`" in doc.stdout

    fixed = cli(["doctor", "--fix"])
    assert "[fixed] deleted vault/.git/index.lock" in fixed.stdout
    assert fixed.returncode == 0 and "All checks passed." in fixed.stdout, fixed.stdout
    assert cli(["add", str(bibs["a"])]).returncode == 0
    assert_clean(ws)


def test_doctor_fix_rolls_back_an_interrupted_add(ws, tmp_path, bibs):
    assert cli(["add", str(bibs["a"])]).returncode == 0
    interrupt_add(ws, tmp_path, [bibs["b"], bibs["merge"]], leave_lock=True)
    fixed = cli(["doctor", "--fix"])
    assert "[fixed] deleted vault/.git/index.lock" in fixed.stdout
    assert "[fixed] rolled back the interrupted add" in fixed.stdout
    assert fixed.returncode == 0, fixed.stdout
    assert_clean(ws)
    assert not (ws / "vault" / "papers" / "roe2021second").exists()


def test_half_written_temp_file_is_reported_and_fixed(ws, bibs):
    assert cli(["add", str(bibs["a"])]).returncode == 0
    folder = ws / "vault" / "papers" / "doe2020first"
    note = (folder / "note.md").read_text(encoding="utf-8")
    tmp = folder / ".note.md.k3j2h1.tmp"   # an atomic write killed before its rename
    tmp.write_text(note[: len(note) // 2], encoding="utf-8")
    doc = cli(["doctor"])
    assert doc.returncode == 1
    assert "[FAIL] vault temp files: 1 unfinished write from an interrupted command: " \
           "papers/doe2020first/.note.md.k3j2h1.tmp" in doc.stdout
    assert "fix: run `papervault doctor --fix`" in doc.stdout
    fixed = cli(["doctor", "--fix"])
    assert "[fixed] deleted 1 temporary file" in fixed.stdout and fixed.returncode == 0, fixed.stdout
    assert not tmp.exists() and (folder / "note.md").read_text(encoding="utf-8") == note
    assert_clean(ws)


def test_doctor_fix_unstages_what_papervault_staged_and_keeps_what_a_person_staged(ws, tmp_path, bibs):
    """A person's own `git add` (an edit of a note, a new file) is theirs to commit: `doctor` does not call it a
    failure and `doctor --fix` leaves it staged. What an `edit` killed between staging and committing staged is
    papervault's: reported, and unstaged by `doctor --fix` (the file keeps what `edit` wrote)."""
    assert cli(["add", str(bibs["a"]), str(bibs["b"])]).returncode == 0
    vault = ws / "vault"
    note = vault / "papers" / "doe2020first" / "note.md"
    edited = note.read_text(encoding="utf-8") + "\nMy own remark.\n"
    note.write_text(edited, encoding="utf-8")
    (vault / "papers" / "mine.md").write_text("staged by the person\n", encoding="utf-8")
    git.Repo(vault).git.add("--", "papers/doe2020first/note.md", "papers/mine.md")
    doc = cli(["doctor"])
    assert doc.returncode == 0, doc.stdout
    assert "[ok  ] vault git staged: 2 changes staged with git, not by papervault" in doc.stdout, doc.stdout

    killed = papervault(["edit", "roe2021second", "--venue", "JACM"], ws,
                        env=killing_git(tmp_path, leave_lock=False))
    assert killed.returncode == -9, killed.stderr[-1000:]
    ours = "papers/roe2021second/note.md"
    assert sorted(staged(ws)) == ["papers/doe2020first/note.md", "papers/mine.md", ours]
    doc = cli(["doctor"])
    assert doc.returncode == 1
    assert f"[FAIL] vault git staged: 1 change papervault staged but never committed (a command killed before its " \
           f"commit): {ours}" in doc.stdout, doc.stdout

    fixed = cli(["doctor", "--fix", "--json"])
    assert fixed.returncode == 0, fixed.stdout
    said = json.loads(fixed.stdout)["fixed"]
    assert f"unstaged 1 change papervault staged: {ours}" in said
    assert "kept 2 changes staged as you left them: papers/doe2020first/note.md, papers/mine.md" in said
    assert sorted(staged(ws)) == ["papers/doe2020first/note.md", "papers/mine.md"]       # staged stays staged
    assert note.read_text(encoding="utf-8") == edited
    assert "JACM" in (vault / ours).read_text(encoding="utf-8")         # unstaged, not undone
    status = git.Repo(vault).git.status("--porcelain").splitlines()
    assert {"M  papers/doe2020first/note.md", "A  papers/mine.md", f" M {ours}"} == set(status), status
    assert cli(["doctor"]).returncode == 0


def test_recovery_keeps_what_a_person_staged_in_a_file_it_gives_back(ws, tmp_path, bibs):
    """A person staged an edit of a note; an `add` merging into that note wrote it and was killed before it
    staged anything. `doctor --fix` gives the note back what the person had, and their staged entry stays."""
    assert cli(["add", str(bibs["a"])]).returncode == 0
    note = ws / "vault" / "papers" / "doe2020first" / "note.md"
    edited = note.read_text(encoding="utf-8") + "\nMy own remark, staged.\n"
    note.write_text(edited, encoding="utf-8")
    git.Repo(ws / "vault").git.add("--", "papers/doe2020first/note.md")
    killed = papervault(["add", str(bibs["merge"])], ws, env=killing_git(tmp_path, leave_lock=False,
                                                                         on="update-index"))
    assert killed.returncode == -9, killed.stderr[-1000:]
    assert note.read_text(encoding="utf-8") != edited            # the merge wrote it

    fixed = cli(["doctor", "--fix"])
    assert fixed.returncode == 0, fixed.stdout
    assert "[fixed] rolled back the interrupted add (1 path papervault wrote: papers/doe2020first/note.md)" \
        in fixed.stdout, fixed.stdout
    assert note.read_text(encoding="utf-8") == edited
    status = git.Repo(ws / "vault").git.status("--porcelain").splitlines()
    assert status == ["M  papers/doe2020first/note.md"], status          # staged, as the person left it


def test_doctor_leaves_a_running_writer_alone(ws, tmp_path, bibs):
    from papervault.workspace import Workspace

    assert cli(["add", str(bibs["a"])]).returncode == 0
    interrupt_add(ws, tmp_path, [bibs["b"]], leave_lock=True)
    with Workspace(ws).write_lock("add"):   # as if the add were still running: its journal and lock are its own
        doc = cli(["doctor"])
        assert "interrupted add" not in doc.stdout and "vault git lock" not in doc.stdout, doc.stdout
        assert "[ok  ] interrupted commands: not checked:" in doc.stdout
    assert "[FAIL] interrupted add" in cli(["doctor"]).stdout
