"""A sync killed at every commit step of a Zotero pass while a person works in the vault: their uncommitted
lines (in a note, in reader-notes.md, one typed at the very moment of the kill), their untracked file and the
file they staged with `git add` (staged it stays) are all intact after recovery, through `doctor --fix`, the
next `add` or the next `sync`, and the next pass ends where an uninterrupted one does, committing none of the
person's work but what papervault itself wrote into.

A commit step is a git command papervault runs to commit (`update-index` stages, `commit` commits). The pass runs
with GitPython pointed at a `git` that counts those commands and, at the one the run is about, SIGKILLs its caller
before the command runs (a `commit` killed leaves `.git/index.lock`, as a git killed in the middle does) or right
after it ran; at that moment the person types one more line into reader-notes.md.
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
from support_zotero import SHARED_ZOTERO, ZoteroBuilder

pytestmark = pytest.mark.skipif(not (SHARED_ZOTERO / "userdata.sql").is_file(), reason="needs ../shared/zotero")

TYPED = "typed at the very moment of the kill"


def killer(tmp_path: Path) -> Path:
    script = tmp_path / "git-killer"
    script.write_text(f"""#!/bin/sh
sub=""
for a in "$@"; do case "$a" in -*) ;; *) sub="$a"; break;; esac; done
case "$sub" in update-index|commit)
  n=$(( $(cat "$KILL_COUNT" 2>/dev/null || echo 0) + 1 )); echo $n > "$KILL_COUNT"; echo "$sub" >> "$KILL_COUNT.log"
  if [ "$n" = "$KILL_AT" ]; then
    if [ "$KILL_HOW" = after ]; then "{shutil.which('git')}" "$@"; fi
    if [ "$KILL_HOW" = before ] && [ "$sub" = commit ]; then touch "$(pwd)/.git/index.lock"; fi
    printf '%s\\n' "{TYPED}" >> "$KILL_TYPE_INTO"
    kill -9 $PPID
    exit 137
  fi;;
esac
exec "{shutil.which('git')}" "$@"
""", encoding="utf-8")
    script.chmod(0o755)
    return script


def sync_killed(ws: Path, script: Path, count: Path, at: int, how: str, type_into: Path) -> subprocess.CompletedProcess:
    env = dict(os.environ, PAPERVAULT_WORKSPACE=str(ws), GIT_PYTHON_GIT_EXECUTABLE=str(script),
               KILL_COUNT=str(count), KILL_AT=str(at), KILL_HOW=how, KILL_TYPE_INTO=str(type_into))
    return subprocess.run([sys.executable, "-m", "papervault", "sync", "--no-index", "--json"], capture_output=True,
                          text=True, env=env, timeout=300)


def _tree(ws: Path) -> set[str]:
    return set(git.Repo(ws / "vault").git.ls_tree("-r", "--name-only", "HEAD").splitlines())


@pytest.fixture(scope="module")
def template(tmp_path_factory) -> dict:
    """A workspace following a small Zotero library (metadata only: nothing to parse), synced once; then the
    person's work in it, and Zotero changed (a new note on the first item, a new item) for the next pass."""
    root = tmp_path_factory.mktemp("sync-recovery")
    ws = root / "ws"
    assert run(["init", str(ws)], ws).returncode == 0
    z = ZoteroBuilder(root / "Zotero")
    a, _ = z.item(title="Consensus in the Presence of Partial Synchrony", authors=[("Cynthia", "Dwork")], date="1988")
    z.note(a, "<p>First reading.</p>")
    z.db.commit()
    with open(ws / "papervault.toml", "a", encoding="utf-8") as fh:
        fh.write(f"\n[sync]\nzotero = {json.dumps(str(root / 'Zotero'))}\n")
    first = run(["sync", "--no-index", "--json"], ws)
    assert first.returncode == 0, first.stderr
    pid = json.loads(first.stdout)["added"][0]["paper"]
    paper = ws / "vault" / "papers" / pid
    person = {
        paper / "note.md": "\nMy own line in the note, not committed.\n",
        paper / "reader-notes.md": "\nMy own line in the reader notes, not committed.\n",
    }
    for path, line in person.items():
        path.write_text(path.read_text(encoding="utf-8") + line, encoding="utf-8")
    (paper / "my-scratch.md").write_text("my scratch notes, never committed\n", encoding="utf-8")
    (paper / "my-staged.md").write_text("staged by me with git add, for my own commit\n", encoding="utf-8")
    git.Repo(ws / "vault").git.add("--", f"papers/{pid}/my-staged.md")
    head = git.Repo(ws / "vault").head.commit.hexsha
    z.note(a, "<p>Second reading.</p>")
    z.item(title="Impossibility of Distributed Consensus with One Faulty Process", authors=[("Michael", "Fischer")],
           date="1985")
    z.close()
    extra = root / "c.bib"
    extra.write_text("@article{roe2021third, title={A Third Paper Added by Hand}, author={Roe, Ann}, year={2021}}\n",
                     encoding="utf-8")
    # the uninterrupted pass, on a copy: the end every interrupted one must reach
    ref = root / "reference"
    shutil.copytree(ws, ref, symlinks=True)
    done = run(["sync", "--no-index", "--json"], ref)
    assert done.returncode == 0, done.stderr
    assert {e["paper"] for e in json.loads(done.stdout)["added"]}, done.stdout
    return {"root": root, "ws": ws, "pid": pid, "head": head, "extra": extra, "tree": _tree(ref),
            "person": {p.relative_to(ws): line for p, line in person.items()}}


def _steps(template: dict, tmp_path: Path) -> list[str]:
    """The commit steps of the pass, in order (`update-index` or `commit`), from a run killed nowhere."""
    ws = tmp_path / "count"
    shutil.copytree(template["ws"], ws, symlinks=True)
    count = tmp_path / "count.n"
    res = sync_killed(ws, killer(tmp_path), count, 0, "never", tmp_path / "typed")
    assert res.returncode == 0, res.stderr[-2000:]
    shutil.rmtree(ws)
    return Path(f"{count}.log").read_text().split()


def test_sync_killed_at_every_commit_step_loses_nothing_of_the_persons(template, tmp_path):
    names = _steps(template, tmp_path)
    assert names.count("commit") == 2, f"a pass with a new paper and new reader notes makes two commits: {names}"
    steps = len(names)
    script = killer(tmp_path)
    pid, rn = template["pid"], f"papers/{template['pid']}/reader-notes.md"
    # before each step, and just after each commit (after staging is the state before the next step already)
    points = [(n, "before") for n in range(1, steps + 1)] + \
        [(n, "after") for n, name in enumerate(names, 1) if name == "commit"]
    kept_by: set[tuple[str, bool]] = set()      # (way, --json) that named the kept notes
    for i, (n, how) in enumerate(points):
        ws = tmp_path / f"ws-{n}-{how}"
        shutil.copytree(template["ws"], ws, symlinks=True)
        notes = ws / "vault" / rn
        res = sync_killed(ws, script, tmp_path / f"n-{n}-{how}", n, how, notes)
        assert res.returncode == -9, (n, how, res.returncode, res.stderr[-1000:])
        papervault_wrote_notes = "Second reading" in notes.read_text(encoding="utf-8")

        # recovery through the user's entry points, by turns: `doctor --fix`, the next `add`, the next `sync`,
        # shifted by one each round so that each meets a kill after papervault wrote the notes; text and --json
        way = ("doctor", "add", "sync")[(i + i // 3) % 3]
        as_json = (i % 2 == 0) != (way == "add" and i >= 3)
        if way == "doctor":
            fixed = run(["doctor", "--fix", *(["--json"] if as_json else [])], ws)
            said = json.loads(fixed.stdout)["fixed"] if as_json else \
                [ln.removeprefix("[fixed] ") for ln in fixed.stdout.splitlines() if ln.startswith("[fixed] ")]
        else:
            args = ["add", str(template["extra"])] if way == "add" else ["sync", "--no-index"]
            done = run([*args, *(["--json"] if as_json else [])], ws)
            assert done.returncode == 0, done.stderr
            said = [f"kept vault/{ln}" for ln in (json.loads(done.stdout).get("recovered") or {}).get("kept", [])] \
                if as_json else [" ".join(ln.split(" ", 1)[0:1] + ln.split(None, 1)[1:]) for ln in
                                 done.stdout.splitlines() if ln.startswith("kept ")]
        kept = [ln for ln in said if ln.startswith("kept vault/")]
        where = f"killed {how} commit step {n} of {steps}"
        if papervault_wrote_notes:      # the person typed into it after papervault wrote it: kept, and said so
            assert [k for k in kept if k.startswith(f"kept vault/{rn}:")], (where, kept)
            kept_by.add((way, as_json))
        assert all(k.startswith(f"kept vault/{rn}:") for k in kept), (where, kept)

        again = run(["sync", "--no-index", "--json"], ws)
        assert again.returncode == 0, (where, again.stderr)

        vault = ws / "vault"
        for rel, line in template["person"].items():
            assert line.strip() in (ws / rel).read_text(encoding="utf-8"), (where, rel)
        assert TYPED in notes.read_text(encoding="utf-8"), where
        assert "Second reading" in notes.read_text(encoding="utf-8"), where
        assert (vault / "papers" / pid / "my-scratch.md").read_text(encoding="utf-8") == \
            "my scratch notes, never committed\n", where
        changed = set(git.Repo(vault).git.log("--format=", "--name-only", f"{template['head']}..HEAD").split())
        assert not changed & {f"papers/{pid}/note.md", f"papers/{pid}/my-scratch.md", f"papers/{pid}/my-staged.md"}, \
            where
        assert _tree(ws) - {p for p in _tree(ws) if p.startswith("papers/roe2021third/")} == template["tree"], where
        status = git.Repo(vault).git.status("--porcelain", "--untracked-files=all").splitlines()
        assert f" M papers/{pid}/note.md" in status and f"?? papers/{pid}/my-scratch.md" in status, (where, status)
        assert f"A  papers/{pid}/my-staged.md" in status, (where, status)        # staged stays staged
        assert not [s for s in status if not s.startswith((f" M papers/{pid}/", f"?? papers/{pid}/",
                                                           f"A  papers/{pid}/my-staged.md"))], (where, status)
        assert not (ws / ".papervault" / "journal" / "add").exists(), where
        assert not (vault / ".git" / "index.lock").exists(), where
        shutil.rmtree(ws)
    assert {way for way, _ in kept_by} == {"doctor", "add", "sync"}, kept_by     # each said what it kept

