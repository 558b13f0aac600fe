"""Searchable first, paragraphs behind: `papervault index` with [index] background_fill returns once every paper is
searchable, a detached `papervault index --fill` process embeds the paragraphs, and the index it leaves is the one
a foreground `index` builds. The suite indexes in the foreground elsewhere (conftest); this file turns it on."""

from __future__ import annotations

import json
import os
import signal
import time

import lancedb
import numpy as np
import pytest

from papervault.index.store import PaperIndex
from papervault.vault.lock import WriteLock
from papervault.workspace import Workspace

from support_index import add_paper, synthetic_paper

# A sentence only one paragraph holds: the full-text ranking finds it at once, its vector comes later.
NEEDLE = "the quorum lease renewal piggybacks on heartbeat acknowledgements"


def _vault(root, n: int = 8) -> Workspace:
    ws, _ = Workspace.init(root)
    for i in range(n):
        title, md = synthetic_paper(i, pages=3, paragraphs=4)
        if i == 3:
            md = md.replace("Paragraph 2 on page 2 of paper 3", f"Paragraph 2 on page 2 of paper 3: {NEEDLE}.")
        add_paper(ws.vault, f"paper{i}", title=title, fulltext=md, status="parsed")
    return Workspace(root)


def _vectors(ws: Workspace) -> dict[str, dict[str, np.ndarray]]:
    db = lancedb.connect(str(ws.state_dir / "index"))
    out = {}
    names = ["chunks", "papers"] + (["chunks_ml"] if "chunks_ml" in db.table_names() else [])
    for name in names:
        key = "paper_id" if name == "papers" else "id"
        tab = db.open_table(name).to_arrow()
        out[name] = dict(zip(tab[key].to_pylist(), (np.asarray(v, dtype=np.float32)
                                                    for v in tab["vector"].to_pylist())))
    return out


def _wait_filled(cli_run, ws: Workspace, timeout: float = 240) -> dict:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        st = json.loads(cli_run(["status", "--json", "--workspace", str(ws.root)]).output)
        if not st["fill"]["pending"] and not st["fill"]["running"]:
            return st
        time.sleep(1)
    raise AssertionError(f"the background fill did not finish in {timeout} s: {st['fill']}")


def _ranked(cli_run, root, query: str) -> list[tuple[float, str]]:
    hits = json.loads(cli_run(["search", query, "--json", "--workspace", str(root)]).output)
    return [(round(h["score"], 6), h["chunk_id"]) for h in hits]


@pytest.fixture
def background(monkeypatch):
    monkeypatch.setenv("PAPERVAULT_INDEX_BACKGROUND_FILL", "true")


def test_index_is_searchable_at_once_and_the_fill_ends_with_the_foreground_index(tmp_path, cli_run, background,
                                                                                   monkeypatch):
    ws = _vault(tmp_path / "bg")
    report = json.loads(cli_run(["index", "--json", "--workspace", str(ws.root)]).output)
    assert report["chunks_pending"] > 0 and report["fill"]["pending"] == report["chunks_pending"]
    assert report["chunks_embedded"] > 0   # papers, sections, figures, tables, notes: embedded by `index` itself

    # searchable now: the paragraph is found by its words, whether or not its vector has been made yet
    hits = json.loads(cli_run(["search", NEEDLE, "--json", "--workspace", str(ws.root)]).output)
    hits = hits["hits"] if isinstance(hits, dict) else hits
    assert hits[0]["paper_id"] == "paper3" and NEEDLE in hits[0]["text"]

    st = _wait_filled(cli_run, ws)
    assert st["fill"]["pending"] == 0 and st["fill"]["last"]["filled"] == report["chunks_pending"]
    text = cli_run(["status", "--workspace", str(ws.root)]).output
    assert "have their vectors" in text

    # the same vectors as an index built in the foreground
    fg = _vault(tmp_path / "fg")
    monkeypatch.setenv("PAPERVAULT_INDEX_BACKGROUND_FILL", "false")
    plain = json.loads(cli_run(["index", "--json", "--workspace", str(fg.root)]).output)
    assert plain["chunks_pending"] == 0 and not plain.get("fill")
    a, b = _vectors(ws), _vectors(fg)
    for table in ("chunks", "papers"):
        assert a[table].keys() == b[table].keys()
        assert all(np.array_equal(a[table][k], b[table][k]) for k in a[table]), table
    if "chunks_ml" in a or "chunks_ml" in b:
        # the multilingual space takes the fill's batches: the same rows, the same vectors to float rounding (its
        # encoder batches differently from a foreground sync)
        assert a["chunks_ml"].keys() == b["chunks_ml"].keys()
        assert all(np.allclose(a["chunks_ml"][k], b["chunks_ml"][k], atol=1e-5) for k in a["chunks_ml"])
    # and the same answers: the same scores, and the same chunks at each score. The generated papers repeat their
    # sentences, so equal scores are common: a full-text or vector ranking cut at its 50 candidates may keep
    # another of several rows of equal score, which moves the lower fused scores; the first five are compared.
    for q in (NEEDLE, "consensus latency", "type inference for workload 3 improvement"):
        got, want = (_ranked(cli_run, root, q)[:5] for root in (ws.root, fg.root))
        assert [s for s, _ in got] == [s for s, _ in want], q
        last = got[-1][0]   # the lowest score shown may be one of several rows of that score, cut by the limit
        assert {x for x in got if x[0] > last} == {x for x in want if x[0] > last}, q


def test_a_killed_fill_leaves_the_rest_pending_and_index_finishes_it(tmp_path, cli_run, background):
    ws = _vault(tmp_path / "ws", n=4)
    # a writer holds the workspace: the fill embeds its first batch and waits to write it
    report = PaperIndex(ws).sync(defer=True)
    with WriteLock(ws.lock_path, command="add"):
        from papervault.index import fill

        pid = fill.start(ws)
        assert pid
        deadline = time.monotonic() + 120
        while fill.running(ws) is None and time.monotonic() < deadline:
            time.sleep(0.2)
        assert fill.running(ws) == pid
        st = json.loads(cli_run(["status", "--json", "--workspace", str(ws.root)]).output)
        assert st["fill"]["running"] == pid and st["fill"]["pending"] == report["chunks_pending"]
        os.kill(pid, signal.SIGKILL)
        os.waitpid(pid, 0)
    assert PaperIndex(ws).pending() == report["chunks_pending"]     # nothing half-written
    st = json.loads(cli_run(["status", "--json", "--workspace", str(ws.root)]).output)
    assert st["fill"]["running"] is None and "index" in st["fill"]["hint"]
    doc = json.loads(cli_run(["doctor", "--json", "--workspace", str(ws.root)], check=False).output)
    check = next(c for c in (doc["checks"] if isinstance(doc, dict) else doc) if c["name"] == "index")
    assert "no fill running" in check["detail"] and "--wait" in check["fix"]
    # a foreground `index` finishes what the fill left
    done = json.loads(cli_run(["index", "--wait", "--json", "--workspace", str(ws.root)]).output)
    assert done["chunks_embedded"] == report["chunks_pending"] and PaperIndex(ws).pending() == 0
    assert not done.get("fill")


def test_a_plain_sync_fills_what_a_deferred_one_left(tmp_path):
    """The survey, MCP and the flows sync without deferring: they get an index whose every row has its vector."""
    ws = _vault(tmp_path / "ws", n=3)
    first = PaperIndex(ws).sync(defer=True)
    assert first["chunks_pending"] > 0 and PaperIndex(ws).pending() == first["chunks_pending"]
    second = PaperIndex(ws).sync()
    assert second["chunks_embedded"] == first["chunks_pending"] and PaperIndex(ws).pending() == 0
    # an edited paper: only its new paragraph is left to the fill; its other paragraphs keep their own vectors
    path = ws.vault.fulltext_path("paper0")
    path.write_text(path.read_text().replace("## 2 Section 2 of paper 0\n", "## 2 Section 2 of paper 0\n\n"
                                             "A new paragraph about lease renewal written after the first index.\n"))
    again = PaperIndex(ws).sync(defer=True)
    assert again["updated"] == ["paper0"] and again["unchanged"] == 2
    assert again["chunks_pending"] == 1 and again["chunks_reused"] > 0
    assert PaperIndex(ws).pending() == 1
