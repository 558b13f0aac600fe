"""`index` streams the vault through windows of chunks: the result does not depend on the window, and the
memory a sync holds does not grow with the number of papers (abstract-only papers, as a CSL import makes)."""

from __future__ import annotations

import tracemalloc

import numpy as np

from papervault.workspace import Workspace

from conftest import without_multilingual
from support_index import add_paper


def _abstract_vault(root, n: int, multilingual: bool = True) -> Workspace:
    ws, _ = Workspace.init(root)
    if not multilingual:
        without_multilingual(ws.root)
        ws = Workspace(ws.root)
    for i in range(n):
        add_paper(ws.vault, f"paper{i:05d}", title=f"Replicated log variant {i} for storage tier {i % 13}",
                  abstract=f"We study consensus variant {i} with quorum size {i % 7 + 3} and lease {i % 11} ms.",
                  year=2000 + i % 25)
    return ws


def _sync(ws: Workspace) -> dict:
    from papervault.index.store import PaperIndex

    with ws.write_lock("index"):
        return PaperIndex(ws).sync()


def _rows(ws: Workspace):
    from papervault.index.store import CHUNKS, open_db

    tab = open_db(ws).open_table(CHUNKS).to_arrow().select(["id", "vector"]).sort_by("id")
    return tab["id"].to_pylist(), tab["vector"].combine_chunks().flatten().to_numpy().reshape(len(tab), -1)


def test_windows_give_the_one_window_index(tmp_path, model_dir, monkeypatch):
    import papervault.index.syncing as syncing

    monkeypatch.setenv("PAPERVAULT_EMBED_VECTOR_CACHE", "")    # each index computes its own vectors

    # 30 papers of two chunks: one window of 60 chunks against eight of at most 8 (the English space only: its
    # rows and vectors are what is compared)
    one = _abstract_vault(tmp_path / "one", 30, multilingual=False)
    whole = _sync(one)
    monkeypatch.setattr(syncing, "WINDOW_CHUNKS", 8)
    many = _abstract_vault(tmp_path / "many", 30, multilingual=False)
    seen: list[tuple[int, int]] = []
    from papervault.index.store import PaperIndex

    with many.write_lock("index"):
        windowed = PaperIndex(many).sync(progress=lambda d, t: seen.append((d, t)))
    assert windowed["chunks_embedded"] == whole["chunks_embedded"] == len(_rows(one)[0])
    assert sorted(windowed["added"]) == sorted(whole["added"]) and len(windowed["added"]) == 30
    ids_one, v_one = _rows(one)
    ids_many, v_many = _rows(many)
    assert ids_many == ids_one
    np.testing.assert_allclose(v_many, v_one, rtol=0, atol=1e-6)
    # the progress total grew window by window and ended at the whole count
    assert len({t for _, t in seen}) > 2 and seen[-1] == (whole["chunks_embedded"], whole["chunks_embedded"])
    # a second sync finds nothing to do
    again = _sync(many)
    assert again["unchanged"] == 30 and again["chunks_embedded"] == 0


def test_sync_memory_stays_flat_as_the_vault_grows(tmp_path, model_dir, monkeypatch):
    import papervault.index.syncing as syncing

    monkeypatch.setattr(syncing, "WINDOW_CHUNKS", 96)    # 3 windows of the smaller vault, 7 of the larger
    peaks = {}
    for n in (100, 300):
        ws = _abstract_vault(tmp_path / f"v{n}", n)
        # the model is loaded and the tables exist before measuring; the first 100 papers of both vaults are
        # the same, so the second vault's first sync takes their vectors from a cache of this test's own
        monkeypatch.setenv("PAPERVAULT_EMBED_VECTOR_CACHE", str(tmp_path / "warm-vectors"))
        _sync(Workspace(ws.root))    # (a new Workspace reads its settings, with the variable, again)
        monkeypatch.setenv("PAPERVAULT_EMBED_VECTOR_CACHE", "")   # the measured sync really embeds
        ws = Workspace(ws.root)
        for i in range(n):           # every title changes: the measured sync embeds all n papers again
            ws.vault.update_meta(f"paper{i:05d}", title=f"Revised replicated log variant {i}", tags=["changed"])
        tracemalloc.start()
        report = _sync(ws)
        peaks[n] = tracemalloc.get_traced_memory()[1]
        tracemalloc.stop()
        assert len(report["updated"]) == n and report["chunks_embedded"] >= n, report
    # three times the papers: well under twice the peak (the window, not the vault, bounds what is held), and
    # under 6 KB more per added paper: ids and counts only (measured 3.6 KB; a sync that held every chunk of
    # the vault instead of a window grew by 9.8 KB per paper here)
    assert peaks[300] < 1.6 * peaks[100], peaks
    assert (peaks[300] - peaks[100]) / 200 < 6_000, peaks


def test_indexes_are_built_once_then_follow_each_window(tmp_path, model_dir, monkeypatch):
    """The full-text and vector indexes are made once, within a window of the rows that call for them, and then
    take new rows in (`optimize()`): no sync builds them over the whole table, which held every row's vector or
    postings in memory at once."""
    import lancedb.table

    from papervault.index import store, tables
    import papervault.index.syncing as syncing
    from papervault.index.search import search

    monkeypatch.setattr(syncing, "WINDOW_CHUNKS", 32)
    monkeypatch.setattr(tables, "VECTOR_INDEX_MIN_ROWS", 150)
    made: list[tuple[str, int]] = []
    real = lancedb.table.LanceTable.create_index

    def watched(self, *args, **kwargs):
        made.append((type(kwargs.get("config")).__name__, self.count_rows()))
        return real(self, *args, **kwargs)

    monkeypatch.setattr(lancedb.table.LanceTable, "create_index", watched)
    ws = _abstract_vault(tmp_path / "v", 150, multilingual=False)      # 300 chunks: ten windows
    first = _sync(ws)
    assert first["chunks"] == 300
    fts = [rows for kind, rows in made if kind == "FTS"]
    ivf = [rows for kind, rows in made if kind == "IvfPq"]
    # the full-text indexes (chunks, papers) with the first window, the vector index when the table first held
    # 150 rows: each once, over at most a window more than called for
    assert len(fts) + len(ivf) == len(made) and len(fts) == 2 and max(fts) <= 32 + 2, made
    assert len(ivf) == 1 and 150 <= ivf[0] < 150 + 32 + 2, made
    table = store.open_db(ws).open_table(store.CHUNKS)
    for ix in table.list_indices():
        stats = table.index_stats(ix.name)
        assert stats.num_unindexed_rows == 0 and stats.num_indexed_rows == 300, (ix.name, stats)

    # a paper added later joins both indexes without either being made again, and is found by its own words
    made.clear()
    add_paper(ws.vault, "zpaper", title="Quorum leases for geo-replicated reads",
              abstract="A xylophonic lease protocol lets any replica answer reads locally.", year=2024)
    assert _sync(ws)["added"] == ["zpaper"]
    assert made == []
    hits = search(ws, "xylophonic lease protocol", limit=3)
    assert hits and hits[0].paper_id == "zpaper"
    for ix in table.list_indices():
        table.checkout_latest()
        assert table.index_stats(ix.name).num_unindexed_rows == 0, ix.name


def test_new_papers_are_appended_and_leftovers_of_a_killed_sync_replaced(tmp_path, model_dir, monkeypatch):
    """Papers new to the index are appended, not merged (a merge joins every row of the table); the chunk rows
    that a sync killed between its chunks and papers writes left are replaced, never doubled. Papers that
    changed still go through the one-commit merge."""
    import lancedb.table

    from papervault.index import store

    merges: list[str] = []
    real = lancedb.table.LanceTable.merge_insert

    def watched(self, on):
        merges.append(self.name)
        return real(self, on)

    monkeypatch.setattr(lancedb.table.LanceTable, "merge_insert", watched)
    ws = _abstract_vault(tmp_path / "v", 12, multilingual=False)
    first = _sync(ws)
    assert len(first["added"]) == 12 and merges == []
    ids, _ = _rows(ws)
    # a sync killed after writing paper00003's chunks and before its papers row: the chunks are there, the
    # paper is not, so the next sync takes it as new
    papers = store.open_db(ws).open_table(store.PAPERS)
    papers.delete("paper_id = 'paper00003'")
    again = _sync(Workspace(ws.root))
    assert again["added"] == ["paper00003"] and merges == []
    assert _rows(ws)[0] == ids          # the same chunk ids, each once
    # a changed paper is merged (its old and new rows swap in one commit)
    ws.vault.update_meta("paper00005", title="Leases for replicated logs, revised")
    changed = _sync(Workspace(ws.root))
    assert changed["updated"] == ["paper00005"] and store.CHUNKS in merges and len(_rows(ws)[0]) == len(ids)


def test_old_table_versions_are_pruned(tmp_path, model_dir, monkeypatch):
    """Superseded table versions older than KEEP_VERSIONS lose their files after each index update (LanceDB
    keeps them a week by default: 6.4 GB for 1.1 GB of latest versions at 90,000 abstracts); the latest stays."""
    from datetime import timedelta

    from papervault.index import store, tables

    ws = _abstract_vault(tmp_path / "v", 20, multilingual=False)
    _sync(ws)
    table = store.open_db(ws).open_table(store.CHUNKS)
    kept = len(table.list_versions())
    assert kept > 1      # within KEEP_VERSIONS: a reader on a version of a moment ago still finds its files
    monkeypatch.setattr(tables, "KEEP_VERSIONS", timedelta(0))
    add_paper(ws.vault, "zpaper", title="Quorum leases", abstract="Leases let a replica answer reads.", year=2024)
    assert _sync(Workspace(ws.root))["added"] == ["zpaper"]
    table.checkout_latest()
    assert len(table.list_versions()) == 1 and table.count_rows() == 42


def test_the_allocator_arenas_are_bounded_unless_the_user_set_them():
    """index/malloc.py: two arenas for the process on glibc; a MALLOC_ARENA_MAX in the environment stands."""
    import os
    import subprocess
    import sys

    code = "from papervault.index.malloc import limit_arenas, trim; print(limit_arenas()); trim()"
    env = {k: v for k, v in os.environ.items() if k != "MALLOC_ARENA_MAX"}
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env, check=True).stdout
    glibc = sys.platform.startswith("linux") and os.confstr("CS_GNU_LIBC_VERSION") is not None
    assert out.strip() == str(glibc)
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True,
                         env={**env, "MALLOC_ARENA_MAX": "4"}).stdout
    assert out.strip() == "False"
