"""The MCP tools' own logic on a small vault, without the index: outline, read windows, figures, paging, and
every input check (ids, paths, ranges) the server relies on."""

from __future__ import annotations

import json
import os
import re

import anyio
import pytest
from mcp import Client

from mcp_server.tools import ToolInputError, VaultTools, outline, page_spans
from papervault.errors import NotFoundError
from papervault.workspace import Workspace
from support_llm import SAMPLE_PAPER, make_paper_vault

PID = "doe2020widgets"


@pytest.fixture
def tools(workspace_env) -> VaultTools:
    ws, _ = Workspace.init(workspace_env)
    make_paper_vault(ws.root, PID, tags=["scheduling"], venue="OSDI")
    make_paper_vault(ws.root, "roe2012sprocket", title="Sprocket", year=2012, authors=["Rob Roe"],
                     text="# Sprocket\n\n## 1 Intro\n\nNo anchors here.\n")
    make_paper_vault(ws.root, "kim2016gears", title="Gears", year=2016, authors=["Ann Kim"], tags=["scheduling"])
    return VaultTools(ws)


def test_outline_finds_sections_pages_and_figures():
    sections, figures = outline(SAMPLE_PAPER)
    assert [(s.path, s.page) for s in sections][:4] == [("Abstract", 1), ("1 Introduction", 1), ("2 Design", 2),
                                                       ("3 Evaluation", 2)]
    assert [(f.number, f.page, f.path) for f in figures] == [("1", 2, "figures/fig-1.png"), ("2", 2, "figures/fig-2.png")]
    spans = page_spans(SAMPLE_PAPER)
    assert sorted(spans) == [1, 2, 3] and SAMPLE_PAPER[spans[3][0]:].startswith('<a id="page-3">')


def test_read_by_section_pages_and_windows(tools):
    sec = tools.read(PID, section="design")
    assert sec["section"] == "2 Design" and sec["page_start"] == 2 and "sorted index" in sec["text"]
    assert "Evaluation" not in sec["text"]
    assert tools.read(PID, section="3")["section"] == "3 Evaluation"   # a section number alone
    p = tools.read(PID, pages="3-2")
    assert p["pages"] == "2-3" and (p["page_start"], p["page_end"]) == (2, 3) and "Gizmo does not support" in p["text"]
    # a window that starts inside page 2 says so, though its first anchor is page 3's
    full = tools.read(PID)
    cut = full["text"].index("We compare Gizmo")
    w = tools.read(PID, offset=cut, max_chars=300)
    assert w["page_start"] == 2 and w["next_offset"] == cut + 300
    with pytest.raises(NotFoundError, match="sections are: Abstract"):
        tools.read(PID, section="Related work")
    with pytest.raises(ToolInputError, match="only one of"):
        tools.read(PID, section="Design", pages="2")
    with pytest.raises(ToolInputError, match="invalid pages"):
        tools.read(PID, pages="two")
    with pytest.raises(NotFoundError, match="pages are 1-3"):
        tools.read(PID, pages="7")
    with pytest.raises(ToolInputError, match="max_chars"):
        tools.read(PID, max_chars=10**6)


def test_read_chunk_with_neighbours(tools):
    from papervault.chunking.paper import chunk_paper

    meta, body = tools.vault.read_note(PID)
    chunks = [c for c in chunk_paper(meta, SAMPLE_PAPER, body, tools.ws.settings.index) if c.level == "paragraph"]
    target = chunks[1]
    got = tools.read(PID, chunk_id=target.id, neighbours=1)
    ids = [c["chunk_id"] for c in got["chunks"]]
    assert target.id in ids and len(ids) == 3 and [c["target"] for c in got["chunks"]].count(True) == 1
    assert tools.read(PID, chunk_id=target.id, neighbours=0)["chunks"][0]["text"] == target.text
    with pytest.raises(NotFoundError, match="search again"):
        tools.read(PID, chunk_id="0" * 24)
    with pytest.raises(ToolInputError, match="invalid chunk id"):
        tools.read(PID, chunk_id="'; drop table chunks; --")


def test_figures_are_found_by_number_or_path_and_never_outside_the_paper(tools, tmp_path):
    data, info = tools.figure(PID, "Figure 2")
    assert data.startswith(b"\x89PNG") and info["page"] == 2 and info["caption"].startswith("Figure 2: Latency")
    assert tools.figure(PID, "figures/fig-1.png")[1]["number"] == "1"
    with pytest.raises(NotFoundError, match="its figures are: 1, 2"):
        tools.figure(PID, "../note.md")
    # a figure link in paper.md that points out of the paper folder, or a symlink out of the vault, is refused
    secret = tmp_path / "secret.png"
    secret.write_bytes(b"\x89PNG secret")
    figs = tools.vault.paper_dir(PID) / "figures"
    os.symlink(secret, figs / "fig-9.png")
    text = SAMPLE_PAPER + "\n![Figure 9: escape](figures/fig-9.png)\n![Figure 8: up](../kim2016gears/figures/fig-1.png)\n"
    tools.vault.fulltext_path(PID).write_text(text)
    with pytest.raises(NotFoundError, match="outside"):
        tools.figure(PID, "9")
    with pytest.raises(NotFoundError, match="outside the paper"):
        tools.figure(PID, "8")


def test_ids_are_checked_everywhere(tools):
    for bad in ("../etc", "a/b", "", "x" * 200, ".hidden"):
        for call in (lambda: tools.get_paper(bad), lambda: tools.read(bad), lambda: tools.figure(bad, "1"),
                     lambda: tools.delete_paper(bad)):
            with pytest.raises(NotFoundError):
                call()
    with pytest.raises(ToolInputError, match="limit"):
        tools.search("gizmo", limit=51)
    with pytest.raises(ToolInputError, match="budget"):
        tools.search("gizmo", budget=10**6)
    with pytest.raises(ToolInputError, match="unknown level"):
        tools.search("gizmo", level="chapter")
    with pytest.raises(ToolInputError, match="empty query"):
        tools.search("   ")


def test_list_papers_filters_and_pages(tools):
    everything = tools.list_papers()
    assert everything["total"] == 3 and everything["next_offset"] is None
    assert [p["id"] for p in tools.list_papers(year="2013..")["papers"]] == [PID, "kim2016gears"]
    assert [p["id"] for p in tools.list_papers(year="2010-2015")["papers"]] == ["roe2012sprocket"]
    assert [p["id"] for p in tools.list_papers(tag="scheduling", author="kim")["papers"]] == ["kim2016gears"]
    assert [p["id"] for p in tools.list_papers(venue="osdi")["papers"]] == [PID]
    page = tools.list_papers(limit=2, offset=1)
    assert page["count"] == 2 and page["next_offset"] is None and page["offset"] == 1
    with pytest.raises(ToolInputError, match="invalid year"):
        tools.list_papers(year="last year")


def test_get_paper_overview(tools):
    p = tools.get_paper(PID)
    assert p["meta"]["authors"] == ["Jane Doe", "Rob Roe"] and p["meta"]["venue"] == "OSDI"
    assert {"path": "4 Conclusion", "title": "4 Conclusion", "level": 2, "page": 3} in p["sections"]
    assert [f["number"] for f in p["figures"]] == ["1", "2"] and p["has_fulltext"]


def test_delete_paper_commits_and_reports(tools):
    out = tools.delete_paper("roe2012sprocket")
    assert out["deleted"] == "roe2012sprocket" and len(out["commit"]) == 40
    assert out["index"] == {"chunks_removed": 0}          # nothing was indexed, nothing re-embedded
    assert "roe2012sprocket" not in tools.vault.paper_ids() and tools.vault.is_clean()


def test_schema_limits_and_write_tools_through_the_sdk(tools):
    from mcp_server.server import build_server

    async def main():
        async with Client(build_server(tools.ws)) as c:
            listed = {t.name: t for t in (await c.list_tools()).tools}
            assert "delete_paper" not in listed and listed["search"].annotations.read_only_hint
            assert listed["get_paper"].output_schema is not None
            r = await c.call_tool("list_papers", {"limit": 1000})
            assert r.is_error          # refused by the schema before the tool runs
            r = await c.call_tool("read", {"paper_id": PID, "pages": "1-30"})
            assert r.is_error and "at most 20 pages" in r.content[0].text
        async with Client(build_server(tools.ws, allow_write=True)) as c:
            listed = {t.name: t for t in (await c.list_tools()).tools}
            assert {"add_paper", "add_repo", "delete_paper"} <= set(listed)
            assert listed["delete_paper"].annotations.destructive_hint

    anyio.run(main)


def test_bearer_check_and_loopback_only():
    import httpx

    from mcp_server.http import BearerAuth, serve_http
    from papervault.errors import PapervaultError

    async def app(scope, receive, send):
        await send({"type": "http.response.start", "status": 200, "headers": []})
        await send({"type": "http.response.body", "body": b"inside"})

    async def main():
        transport = httpx.ASGITransport(app=BearerAuth(app, "tok-123"))
        async with httpx.AsyncClient(transport=transport, base_url="http://127.0.0.1") as c:
            for headers in ({}, {"Authorization": "Bearer tok-12"}, {"Authorization": "Basic tok-123"},
                            {"Authorization": "Bearer tok-1234"}):
                r = await c.post("/mcp", headers=headers)
                assert r.status_code == 401 and r.json()["error"] == "unauthorized"
            r = await c.post("/mcp", headers={"Authorization": "Bearer tok-123"})
            assert r.status_code == 200 and r.text == "inside"

    anyio.run(main)
    with pytest.raises(ValueError):
        BearerAuth(app, "")
    with pytest.raises(PapervaultError, match="refusing to listen on 0.0.0.0"):
        serve_http(object(), token="t", host="0.0.0.0")


def test_changes_since_lists_added_updated_and_marked(tools):
    from papervault.app.sync import now_iso

    vault = tools.vault
    vault.commit("add: the fixture's papers")
    vault.update_meta("kim2016gears", title="Gears <script>alert(1)</script>")
    vault.update_meta("roe2012sprocket", left_source={"source": "zotero", "reason": "moved to Zotero's trash",
                                                      "since": now_iso()})
    vault.commit("sync: zotero")
    out = tools.changes("1d")
    assert {p["id"] for p in out["added"]} == {PID, "roe2012sprocket", "kim2016gears"}
    assert out["updated"] == []          # changed in the same window they were added in: said as added
    gears = next(p for p in out["added"] if p["id"] == "kim2016gears")
    assert "<script>" not in gears["title"] and "&lt;script>" in gears["title"]
    assert next(p for p in out["added"] if p["id"] == "roe2012sprocket")["left_source"]["reason"] \
        == "moved to Zotero's trash"
    assert tools.changes("1d", limit=1)["added_more"] == 2
    with pytest.raises(ToolInputError):
        tools.changes("last tuesday")

    async def main():
        async with Client(__import__("mcp_server.server", fromlist=["build_server"]).build_server(tools.ws)) as c:
            r = await c.call_tool("changes", {"since": "2d"})
            assert not r.is_error and len(r.structured_content["added"]) == 3
            r = await c.call_tool("changes", {"since": "whenever"})
            assert r.is_error and "--since" in r.content[0].text

    anyio.run(main)


def test_search_answers_like_the_command_line_without_a_section_twice(tools, cli_run):
    """A section ranked above its own paragraph is the same passage twice: MCP `search` and `papervault search`
    both drop it, the paragraph taking the section's rank, and answer the same hits in the same order."""
    from papervault.index.search import Searcher

    cli_run(["index", "--workspace", tools.ws.root])
    raw = [(h.level, h.paper_id, h.section) for h in Searcher(tools.ws).search("design", limit=10)]
    twice = [(p, s) for i, (level, p, s) in enumerate(raw)
             if level == "section" and ("paragraph", p, s) in raw[i + 1:]]
    assert twice, raw                                          # the index ranks a section above its paragraph
    mcp = tools.search("design", limit=10)
    cli = json.loads(cli_run(["search", "design", "--json", "--workspace", tools.ws.root]).stdout)
    assert [h["chunk_id"] for h in mcp["hits"]] == [h["chunk_id"] for h in cli]
    hits = [(h["level"], h["paper_id"], h["section"]) for h in mcp["hits"]]
    assert len(hits) == len(raw) - len(twice)
    p, s = twice[0]
    assert ("section", p, s) not in hits
    assert hits.index(("paragraph", p, s)) == raw.index(("section", p, s))   # the paragraph took its rank
    text = cli_run(["search", "design", "--workspace", tools.ws.root]).stdout
    listed = re.findall(r"^\s*\d+\. \[([^\]]+)\]", text, flags=re.M)   # the text listing: the same hits
    assert listed == [h["paper_id"] for h in cli]
