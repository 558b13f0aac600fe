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
