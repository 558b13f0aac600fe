"""`papervault add` ends searchable: the papers it adds are found by `search` (and by MCP) when it returns, with no
`papervault index` in between; a paper the index could not take is said so, never silently left out."""

from __future__ import annotations

import json
import os
import time

from conftest import pv

# Short real papers, and a passage of each a reader remembers.
PAPERS = {
    "distributed_systems_harvest-yield-and-scalable-tolerant-systems.pdf":
        "fraction of the data reflected in a query answer when some nodes are down",
    "time_series_ts-asap.pdf": "smoothing time series plots for visualization by preserving kurtosis",
}


def _inputs(tmp_path, corpus_dir):
    folder = tmp_path / "in"
    folder.mkdir()
    for name in PAPERS:
        (folder / name).symlink_to(corpus_dir / name)
    return folder


def _found(ws, query: str, cli_run) -> list[str]:
    hits = json.loads(cli_run(["search", query, "--limit", "3", "--json", "--workspace", ws]).stdout)
    from papervault.workspace import Workspace

    vault = Workspace(ws).vault
    return [name for h in hits for name in vault.read_meta(h["paper_id"]).sources + vault.read_meta(h["paper_id"]).files]


def test_add_dir_then_search_finds_every_paper_with_no_index_between(tmp_path, corpus_dir, cli_run, monkeypatch):
    """Searchable first, as `papervault index`: rows and sections now, paragraphs filled behind (a process)."""
    monkeypatch.setenv("PAPERVAULT_INDEX_BACKGROUND_FILL", "true")
    ws = tmp_path / "ws"
    cli_run(["init", ws])
    out = json.loads(pv("add", str(_inputs(tmp_path, corpus_dir)), "--json", ws=ws).stdout)  # its own process
    assert len(out["added"]) == 2 and not out["problems"], out
    index = out["index"]
    assert sorted(index["added"]) == sorted(out["added"]) and not index["errors"] and index["chunks_embedded"] > 0
    assert index["line"].startswith("indexed 2 of 2 papers")
    for name, query in PAPERS.items():
        assert any(n.endswith(name) for n in _found(ws, query, cli_run)), query
    st = json.loads(cli_run(["status", "--json", "--workspace", ws]).stdout)
    assert st["indexed_papers"] == 2 and st["not_indexed"] == [] and st["index_health"] == "ok", st
    deadline = time.monotonic() + 240          # the fill it started ends (no process outlives the test)
    while (st["fill"]["pending"] or st["fill"]["running"]) and time.monotonic() < deadline:
        time.sleep(1)
        st = json.loads(cli_run(["status", "--json", "--workspace", ws]).stdout)
    assert not st["fill"]["pending"] and not st["fill"]["running"], st["fill"]


def test_mcp_add_paper_is_searchable_when_it_answers(tmp_path, corpus_dir, workspace_env):
    from mcp_server.tools import VaultTools
    from papervault.workspace import Workspace

    ws, _ = Workspace.init(workspace_env)
    tools = VaultTools(ws)
    name, query = next(iter(PAPERS.items()))
    out = tools.add_paper([str(corpus_dir / name)])
    [pid] = out["added"]
    assert out["index"]["added"] == [pid] and out["index"]["chunks_pending"] == 0 and not out["index"]["errors"]
    hits = tools.search(query, limit=3)
    assert hits["hits"][0]["paper_id"] == pid, hits


def test_a_paper_the_index_cannot_take_is_said_so(tmp_path, corpus_dir, cli_run, monkeypatch):
    ws = tmp_path / "ws"
    cli_run(["init", ws])
    name = next(iter(PAPERS))
    model = os.environ["PAPERVAULT_EMBED_MODEL_PATH"]
    monkeypatch.setenv("PAPERVAULT_EMBED_MODEL_PATH", str(tmp_path / "no-model"))   # the model is gone
    res = cli_run(["add", corpus_dir / name, "--workspace", ws], check=False)
    assert res.exit_code == 1, res.output
    assert "Added 1 paper" in res.stdout
    assert "index: not updated" in res.stderr and "run `papervault index`" in res.stderr, res.stderr
    assert "added, but not searchable" in res.stderr
    monkeypatch.setenv("PAPERVAULT_EMBED_MODEL_PATH", model)
    st = json.loads(cli_run(["status", "--json", "--workspace", ws]).stdout)
    assert st["papers"] == 1 and st["index_health"].startswith("stale"), st
    # --no-index says what it leaves, and exits 0
    again = cli_run(["add", corpus_dir / list(PAPERS)[1], "--no-index", "--workspace", ws])
    assert "not indexed (--no-index)" in again.stdout
