"""What papervault commits while a person works in the vault: only the files it wrote (a person's uncommitted
edits, untracked files and what they staged stay theirs, through `sync`, `add` and `edit`), and a commit id
read back from state is data, never a git option (`sync` with a crafted versions cursor, `add` with a crafted
catalog head)."""

from __future__ import annotations

import json
import sqlite3
from pathlib import Path

import git
import pytest

from support_zotero import SHARED_ZOTERO, ZoteroBuilder

needs_zotero = pytest.mark.skipif(not (SHARED_ZOTERO / "userdata.sql").is_file(), reason="needs ../shared/zotero")


def _follow(ws: Path, **sync) -> None:
    with open(ws / "papervault.toml", "a", encoding="utf-8") as fh:
        fh.write("\n[sync]\n" + "".join(f"{k} = {json.dumps(v)}\n" for k, v in sync.items()))


def _committed(ws: Path, since: str) -> set[str]:
    """Every path the vault's commits after `since` changed."""
    out = git.Repo(ws / "vault").git.log("--format=", "--name-only", f"{since}..HEAD")
    return {ln for ln in out.splitlines() if ln}


def _status(ws: Path) -> str:
    return git.Repo(ws / "vault").git.status("--porcelain", "--untracked-files=all")


def _bib(path: Path, key: str, title: str) -> Path:
    path.write_text(f"@article{{{key}, title={{{title}}}, author={{Doe, Jane}}, year={{2020}}}}\n", encoding="utf-8")
    return path


def _person_works_in(paper: Path) -> tuple[Path, Path]:
    """A line typed into the paper's note (not committed) and a file of their own beside it (untracked)."""
    note = paper / "note.md"
    note.write_text(note.read_text(encoding="utf-8") + "\nMy own line, not committed yet.\n", encoding="utf-8")
    scratch = paper / "my-scratch.md"
    scratch.write_text("my scratch notes\n", encoding="utf-8")
    return note, scratch


@needs_zotero
def test_a_sync_commits_only_the_files_it_wrote(tmp_path, workspace_env, cli_run):
    ws = workspace_env
    cli_run(["init"])
    z = ZoteroBuilder(tmp_path / "Zotero")
    a, _ = z.item(title="Consensus in the Presence of Partial Synchrony", authors=[("Cynthia", "Dwork")], date="1988")
    z.note(a, "<p>First reading.</p>")
    z.db.commit()
    _follow(ws, zotero=str(tmp_path / "Zotero"))
    first = json.loads(cli_run(["sync", "--json", "--no-index"]).output)
    pid = first["added"][0]["paper"]
    paper = ws / "vault" / "papers" / pid
    note, scratch = _person_works_in(paper)
    head = git.Repo(ws / "vault").head.commit.hexsha

    z.note(a, "<p>Second reading.</p>")                         # the pass appends to reader-notes.md
    z.item(title="Impossibility of Distributed Consensus with One Faulty Process", authors=[("Michael", "Fischer")],
           date="1985")                                         # and imports a new paper
    z.db.commit()
    second = json.loads(cli_run(["sync", "--json", "--no-index"]).output)
    assert second["updated"][0]["fields"] == ["reader notes"] and len(second["added"]) == 1
    new = second["added"][0]["paper"]

    committed = _committed(ws, head)
    assert f"papers/{pid}/reader-notes.md" in committed and f"papers/{new}/note.md" in committed
    assert f"papers/{pid}/note.md" not in committed and f"papers/{pid}/my-scratch.md" not in committed
    status = _status(ws)
    assert f" M papers/{pid}/note.md" in status and f"?? papers/{pid}/my-scratch.md" in status
    assert "My own line, not committed yet." in note.read_text(encoding="utf-8")
    assert scratch.read_text(encoding="utf-8") == "my scratch notes\n"
    z.close()


def test_add_commits_only_what_it_wrote(tmp_path, workspace_env, cli_run):
    ws = workspace_env
    cli_run(["init"])
    cli_run(["add", str(_bib(tmp_path / "a.bib", "doe2020first", "The First Paper of the Vault"))])
    note, scratch = _person_works_in(ws / "vault" / "papers" / "doe2020first")
    staged = ws / "vault" / "papers" / "mine.md"
    staged.write_text("staged by the person\n", encoding="utf-8")
    git.Repo(ws / "vault").git.add("papers/mine.md")
    head = git.Repo(ws / "vault").head.commit.hexsha

    cli_run(["add", str(_bib(tmp_path / "b.bib", "roe2021second", "A Second Paper Added Later"))])
    committed = _committed(ws, head)
    assert "papers/roe2021second/note.md" in committed
    assert not committed & {"papers/doe2020first/note.md", "papers/doe2020first/my-scratch.md", "papers/mine.md"}
    status = _status(ws)
    assert " M papers/doe2020first/note.md" in status and "?? papers/doe2020first/my-scratch.md" in status
    assert "A  papers/mine.md" in status          # what the person staged is still theirs to commit

    added = git.Repo(ws / "vault").head.commit.hexsha
    cli_run(["edit", "roe2021second", "--venue", "JACM"])      # another command, the same rule
    assert _committed(ws, added) == {"papers/roe2021second/note.md"}
    assert " M papers/doe2020first/note.md" in _status(ws)


def _victim(tmp_path: Path) -> Path:
    victim = tmp_path / "victim.txt"
    victim.write_text("precious\n", encoding="utf-8")
    return victim


def test_a_versions_cursor_head_is_never_a_git_option(tmp_path, workspace_env, cli_run, caplog):
    """`head` in `.papervault/sync/arxiv-versions.json` set to `--output=FILE`: treated as missing (one
    warning), and git neither truncates that file nor fails the pass."""
    ws = workspace_env
    cli_run(["init"])
    _follow(ws, arxiv_versions=True)
    cli_run(["add", str(_bib(tmp_path / "a.bib", "doe2020first", "The First Paper of the Vault"))])
    victim = _victim(tmp_path)
    cursor = ws / ".papervault" / "sync" / "arxiv-versions.json"
    cursor.parent.mkdir(parents=True, exist_ok=True)
    cursor.write_text(json.dumps({"head": f"--output={victim}", "arxiv": {}}), encoding="utf-8")
    out = json.loads(cli_run(["sync", "--json", "--no-index"]).output)
    assert [s["status"] for s in out["sources"]] == ["unchanged"], out["sources"]
    assert victim.read_text(encoding="utf-8") == "precious\n"
    assert "is not a commit id: treated as missing" in caplog.text


def test_a_catalog_head_is_never_a_git_option(tmp_path, workspace_env, cli_run, caplog):
    """`info.head` in `catalog.sqlite` set to `--output=FILE`: the catalog is rebuilt (one warning), no file
    is created or truncated, and the add goes on."""
    ws = workspace_env
    cli_run(["init"])
    cli_run(["add", str(_bib(tmp_path / "a.bib", "doe2020first", "The First Paper of the Vault"))])
    victim = _victim(tmp_path)
    db = sqlite3.connect(ws / ".papervault" / "catalog.sqlite")
    db.execute("UPDATE info SET v = ? WHERE k = 'head'", (f"--output={victim}",))
    db.commit()
    db.close()
    res = cli_run(["add", str(_bib(tmp_path / "b.bib", "roe2021second", "A Second Paper Added Later"))])
    assert "Added 1 paper" in res.output
    assert victim.read_text(encoding="utf-8") == "precious\n"
    assert "is not a commit id: treated as missing" in caplog.text
