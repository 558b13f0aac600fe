"""Sources that change under `papervault sync` the way no person changes them: a Zotero database read while a
writer holds an uncommitted change, a source that suddenly empties, files swapped or truncated in a watched
folder. Each is stopped or read as SQLite and the files' content say, and nothing a person has is lost."""

from __future__ import annotations

import json
import shutil
import sqlite3
from pathlib import Path

import pytest

from support_arxiv import make_pdf
from support_zotero import SHARED_ZOTERO, ZoteroBuilder

needs_zotero = pytest.mark.skipif(not (SHARED_ZOTERO / "userdata.sql").is_file(), reason="needs ../shared/zotero")


def _follow(ws: Path, **sync) -> None:
    lines = ["", "[sync]"] + [f"{k} = {json.dumps(v)}" for k, v in sync.items()]
    with open(ws / "papervault.toml", "a", encoding="utf-8") as fh:
        fh.write("\n".join(lines) + "\n")


def _sync(cli_run, *extra, check=True) -> dict:
    return json.loads(cli_run(["sync", "--json", "--no-index", *extra], check=check).output)


def _left(ws: Path, pid: str):
    from papervault.vault.store import Vault

    return getattr(Vault(ws / "vault").read_meta(pid), "left_source", None)


def _library(path: Path, n: int = 4) -> ZoteroBuilder:
    z = ZoteroBuilder(path)
    for i, (title, last) in enumerate([("Time Clocks and the Ordering of Events", "Lamport"),
                                       ("Distributed Snapshots Determining Global States", "Chandy"),
                                       ("Impossibility of Distributed Consensus with One Faulty Process", "Fischer"),
                                       ("Viewstamped Replication Revisited", "Liskov")][:n]):
        z.item(title=title, authors=[("A", last)], date=str(1978 + i))
    z.db.commit()
    return z


@needs_zotero
def test_a_zotero_writer_s_uncommitted_delete_is_never_read(tmp_path, workspace_env, cli_run):
    """Zotero in rollback-journal mode, a writer in the middle of deleting every item (its pages already in
    zotero.sqlite, the committed ones in zotero.sqlite-journal): the pass reads the committed library, as SQLite
    would after rolling back, and marks nothing."""
    ws = workspace_env
    cli_run(["init"])
    z = _library(tmp_path / "Zotero")
    _follow(ws, zotero=str(tmp_path / "Zotero"))
    papers = [x["paper"] for x in _sync(cli_run)["added"]]
    assert len(papers) == 4

    writer = sqlite3.connect(tmp_path / "Zotero" / "zotero.sqlite", isolation_level=None)
    writer.execute("PRAGMA cache_size = 1")         # spill: the uncommitted pages reach the database file
    writer.execute("BEGIN")
    writer.execute("DELETE FROM items")
    writer.executemany("INSERT INTO itemDataValues (valueID, value) VALUES (?, ?)",
                       [(10_000 + i, f"{i:04d}" + "y" * 1000) for i in range(200)])
    journal = tmp_path / "Zotero" / "zotero.sqlite-journal"
    assert journal.is_file()
    raw = tmp_path / "raw"          # the scenario is real: the file alone holds the uncommitted delete
    raw.mkdir()
    shutil.copyfile(tmp_path / "Zotero" / "zotero.sqlite", raw / "zotero.sqlite")
    assert sqlite3.connect(raw / "zotero.sqlite").execute("SELECT COUNT(*) FROM items").fetchone()[0] == 0

    out = _sync(cli_run)
    assert out["sources"][0]["status"] != "failed"      # read, not stopped: the committed library is all there
    assert out["marked"] == [] and out["added"] == []
    assert all(_left(ws, pid) is None for pid in papers)
    assert journal.is_file()        # the user's files untouched: the writer's journal is still there
    writer.execute("ROLLBACK")
    writer.close()
    assert _sync(cli_run)["marked"] == []
    z.close()


@needs_zotero
def test_a_zotero_library_that_empties_stops_until_it_is_back_or_accepted(tmp_path, workspace_env, cli_run):
    """`DELETE FROM items`: the pass would mark every paper; it stops the source with one line and changes
    nothing. When the items come back nothing was marked; a person who did remove them says so with
    `--accept-removals zotero`, and marks are cleared again when items return."""
    ws = workspace_env
    cli_run(["init"])
    z = _library(tmp_path / "Zotero")
    _follow(ws, zotero=str(tmp_path / "Zotero"))
    papers = {x["item"]: x["paper"] for x in _sync(cli_run)["added"]}
    saved = tmp_path / "saved.sqlite"
    z.db.commit()
    z.db.execute(f"VACUUM INTO '{saved}'")

    z.db.execute("DELETE FROM items")
    z.db.commit()
    out = _sync(cli_run, check=False)
    (src,) = out["sources"]
    assert src["status"] == "failed" and "4 of its 4 papers" in src["error"]
    assert "--accept-removals zotero" in src["error"] and "\n" not in src["error"]
    assert out["marked"] == [] and all(_left(ws, p) is None for p in papers.values())
    text = cli_run(["sync", "--no-index"], check=False)
    assert text.exit_code == 1 and "--accept-removals zotero" in text.output

    z.db.close()                    # the library comes back as it was
    shutil.copyfile(saved, tmp_path / "Zotero" / "zotero.sqlite")
    back = _sync(cli_run)
    assert back["sources"][0]["status"] != "failed" and back["marked"] == []

    z.db = sqlite3.connect(tmp_path / "Zotero" / "zotero.sqlite")
    z.db.execute("DELETE FROM items")
    z.db.commit()
    accepted = _sync(cli_run, "--accept-removals", "zotero")
    assert {m["paper"] for m in accepted["marked"]} == set(papers.values())
    assert all(_left(ws, p) for p in papers.values())
    assert len(json.loads(cli_run(["changes", "--since", "1d", "--json"]).output)["marked"]) == 4

    z.db.close()                    # ... and return: the marks are cleared, `changes` no longer lists them
    shutil.copyfile(saved, tmp_path / "Zotero" / "zotero.sqlite")
    returned = _sync(cli_run)
    assert returned["marked"] == []
    assert {u["paper"] for u in returned["updated"] if "back in the source" in u["reason"]} == set(papers.values())
    assert all(_left(ws, p) is None for p in papers.values())
    assert json.loads(cli_run(["changes", "--since", "1d", "--json"]).output)["marked"] == []


def test_watched_files_swapped_truncated_or_all_gone(tmp_path, workspace_env, cli_run):
    """Two PDFs exchanged keep their papers (known by content); a PDF cut to 500 bytes leaves its paper as it
    was with one line; a folder emptied stops with one line until the person accepts it, and the files' return
    clears the marks."""
    ws = workspace_env
    cli_run(["init"])
    folder = tmp_path / "Papers"
    folder.mkdir()
    texts = {"a.pdf": ("Chain Replication for Supporting High Throughput", "Servers are arranged in a chain."),
             "b.pdf": ("Dynamo Amazons Highly Available Key-value Store", "Dynamo uses consistent hashing."),
             "c.pdf": ("The Chubby Lock Service for Loosely-coupled Systems", "Chubby is a coarse lock service.")}
    for name, (title, body) in texts.items():
        (folder / name).write_bytes(make_pdf(title, authors="Ada Lovelace", body=body))
    _follow(ws, folders=[str(folder)])
    papers = {x["item"]: x["paper"] for x in _sync(cli_run)["added"]}
    pdir = {name: ws / "vault" / "papers" / pid for name, pid in papers.items()}
    before = {name: ((d / "paper.md").read_text(encoding="utf-8"), (d / "note.md").read_text(encoding="utf-8"))
              for name, d in pdir.items()}

    a, b, c = ((folder / n).read_bytes() for n in ("a.pdf", "b.pdf", "c.pdf"))
    (folder / "a.pdf").write_bytes(b)
    (folder / "b.pdf").write_bytes(a)
    (folder / "c.pdf").write_bytes(c[:500])
    out = _sync(cli_run)
    assert (out["added"], out["updated"], out["marked"]) == ([], [], [])
    said = {e["item"]: e for e in out["skipped"]}
    assert said["a.pdf"]["paper"] == papers["b.pdf"] and said["b.pdf"]["paper"] == papers["a.pdf"]
    assert "the same file as b.pdf was" in said["a.pdf"]["reason"]
    assert said["c.pdf"]["paper"] == papers["c.pdf"] and "kept as it was" in said["c.pdf"]["reason"]
    for name, d in pdir.items():        # nothing overwritten
        assert ((d / "paper.md").read_text(encoding="utf-8"), (d / "note.md").read_text(encoding="utf-8")) \
            == before[name]
    again = _sync(cli_run)              # the cut file is said again, not parsed again
    assert again["updated"] == [] and "kept as it was" in {e["item"]: e for e in again["skipped"]}["c.pdf"]["reason"]

    kept = {"a.pdf": b, "b.pdf": a, "c.pdf": c}
    for p in folder.iterdir():
        p.unlink()
    out = _sync(cli_run, check=False)
    (src,) = out["sources"]
    assert src["status"] == "failed" and "3 of its 3 papers" in src["error"] and out["marked"] == []
    accepted = _sync(cli_run, "--accept-removals", str(folder))
    assert {m["paper"] for m in accepted["marked"]} == set(papers.values())
    for name, data in kept.items():
        (folder / name).write_bytes(data)
    back = _sync(cli_run)
    assert {u["paper"] for u in back["updated"] if "back in the source" in u["reason"]} == set(papers.values())
    assert all(_left(ws, p) is None for p in papers.values())
