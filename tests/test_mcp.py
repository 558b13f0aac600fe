"""The MCP server through real `mcp` SDK clients: over stdio (`python -m papervault mcp`) and over streamable
HTTP with a bearer token, against a workspace indexed from real corpus PDFs."""

from __future__ import annotations

import base64
import json
import shutil
import subprocess
import tomllib

import anyio
import httpx
import pytest
from mcp import Client, StdioServerParameters
from mcp.client.streamable_http import streamable_http_client

from support_mcp import free_port, papervault_cmd, paxos_harvest, server_env, wait_port

READ_TOOLS = {"search", "search_code", "get_paper", "read", "get_figure", "list_papers", "status", "locate",
              "changes", "citations", "survey_selection"}
WRITE_TOOLS = {"add_paper", "add_repo", "delete_paper"}
PAXOS, HARVEST = "vanrenesse2015paxos", "fox1999harvest"


@pytest.fixture(scope="module")
def indexed(tmp_path_factory, corpus_dir, model_dir):
    """Two real papers, parsed, written to the vault and indexed (built once per session)."""
    return paxos_harvest(tmp_path_factory, corpus_dir)


def stdio(root, *extra: str) -> StdioServerParameters:
    cmd = papervault_cmd()
    return StdioServerParameters(command=cmd[0], args=[*cmd[1:], "mcp", "--workspace", str(root), *extra],
                                 env=server_env())


def data(result) -> dict:
    assert not result.is_error, result.content
    return result.structured_content


def run(fn):
    return anyio.run(fn)


# --- stdio: every read tool, resources and the prompt ---------------------------------------------

def test_stdio_server_answers_every_read_tool(indexed):
    async def main():
        async with Client(stdio(indexed), read_timeout_seconds=120) as c:
            names = {t.name for t in (await c.list_tools()).tools}
            assert names == READ_TOOLS        # no write tools without --allow-write
            tools = {t.name: t for t in (await c.list_tools()).tools}
            assert "chunk_id" in tools["read"].input_schema["properties"]
            assert tools["search"].input_schema["properties"]["limit"]["maximum"] == 50

            # search: the hit fields of `papervault search --json`
            found = data(await c.call_tool("search", {"query": "Paxos ballots acceptors leader", "limit": 5}))
            assert found["count"] >= 1
            hit = found["hits"][0]
            for key in ("paper_id", "title", "level", "section", "page", "text", "score", "source", "page_end",
                        "chunk_id", "anchor", "context"):
                assert key in hit
            assert hit["paper_id"] == PAXOS and hit["anchor"].startswith(f"papers/{PAXOS}/")
            # the same hits as JSON text, for clients that ignore structured content
            assert json.loads(found_text := (await c.call_tool("search", {"query": "harvest yield"})).content[0].text)
            assert json.loads(found_text)["hits"][0]["paper_id"] == HARVEST

            filtered = data(await c.call_tool("search", {"query": "availability", "paper": HARVEST, "level": "paragraph"}))
            assert filtered["hits"] and {h["paper_id"] for h in filtered["hits"]} == {HARVEST}
            assert {h["level"] for h in filtered["hits"]} == {"paragraph"}
            budgeted = data(await c.call_tool("search", {"query": "Paxos replicas slots", "limit": 3, "budget": 800}))
            assert any(h["context"] for h in budgeted["hits"])
            bad = await c.call_tool("search", {"query": "x", "limit": 500})
            assert bad.is_error

            # get_paper: metadata, sections with pages, figures, note
            paper = data(await c.call_tool("get_paper", {"paper_id": PAXOS}))
            assert paper["meta"]["title"] == "Paxos Made Moderately Complex" and paper["meta"]["year"] == 2015
            assert any(s["path"] == "1 Introduction" and s["page"] == 1 for s in paper["sections"])
            assert len(paper["figures"]) >= 3 and paper["figures"][0]["path"].startswith("figures/")
            assert "Summary" in paper["note"] and paper["cite"] == f"[@{PAXOS}]"
            missing = await c.call_tool("get_paper", {"paper_id": "nobody2020none"})
            assert missing.is_error and "no paper 'nobody2020none'" in missing.content[0].text
            evil = await c.call_tool("get_paper", {"paper_id": "../../etc/passwd"})
            assert evil.is_error and "invalid paper id" in evil.content[0].text

            # read: a section, a page range, a chunk with its neighbours, windows
            sec = data(await c.call_tool("read", {"paper_id": PAXOS, "section": "Introduction"}))
            assert sec["section"] == "1 Introduction" and sec["page_start"] == 1
            assert sec["text"].lstrip().startswith("## 1 Introduction")
            pages = data(await c.call_tool("read", {"paper_id": PAXOS, "pages": "3-4"}))
            assert (pages["page_start"], pages["page_end"]) == (3, 4) and '<a id="page-3">' in pages["text"]
            assert '<a id="page-5">' not in pages["text"]
            window = data(await c.call_tool("read", {"paper_id": PAXOS, "max_chars": 1000}))
            assert len(window["text"]) == 1000 and window["next_offset"] == 1000
            more = data(await c.call_tool("read", {"paper_id": PAXOS, "max_chars": 1000, "offset": 1000}))
            assert more["offset"] == 1000 and more["text"] != window["text"]
            chunk = data(await c.call_tool("read", {"paper_id": hit["paper_id"], "chunk_id": hit["chunk_id"],
                                                    "neighbours": 1}))
            targets = [x for x in chunk["chunks"] if x["target"]]
            assert len(targets) == 1 and targets[0]["text"][:200] == hit["text"][:200]
            assert 2 <= len(chunk["chunks"]) <= 3
            too_many = await c.call_tool("read", {"paper_id": PAXOS, "pages": "1-40"})
            assert too_many.is_error and "at most 20 pages" in too_many.content[0].text
            no_page = await c.call_tool("read", {"paper_id": PAXOS, "pages": "90"})
            assert no_page.is_error and "1-15" in no_page.content[0].text

            # get_figure: the PNG as image content, with its caption
            fig = await c.call_tool("get_figure", {"paper_id": PAXOS, "figure": paper["figures"][0]["number"] or paper["figures"][0]["path"]})
            assert not fig.is_error, fig.content
            image = next(b for b in fig.content if b.type == "image")
            assert image.mime_type == "image/png" and base64.b64decode(image.data)[:8] == b"\x89PNG\r\n\x1a\n"
            info = json.loads(next(b for b in fig.content if b.type == "text").text)
            assert info["caption"] == paper["figures"][0]["caption"] and info["page"] == paper["figures"][0]["page"]
            outside = await c.call_tool("get_figure", {"paper_id": PAXOS, "figure": "../../fox1999harvest/note.md"})
            assert outside.is_error

            # list_papers: filters and paging
            listed = data(await c.call_tool("list_papers", {"limit": 1}))
            assert listed["total"] == 2 and listed["count"] == 1 and listed["next_offset"] == 1
            second = data(await c.call_tool("list_papers", {"limit": 1, "offset": 1}))
            assert {listed["papers"][0]["id"], second["papers"][0]["id"]} == {PAXOS, HARVEST}
            assert [p["id"] for p in data(await c.call_tool("list_papers", {"year": "1990-2000"}))["papers"]] == [HARVEST]
            assert data(await c.call_tool("list_papers", {"title": "paxos"}))["papers"][0]["id"] == PAXOS

            st = data(await c.call_tool("status", {}))
            assert st["papers"] == 2 and st["chunks"] > 20 and st["index_health"] == "ok"

            code = await c.call_tool("search_code", {"query": "replica"})
            # no repository is indexed: a typed, one-line error that says what to run
            assert code.is_error and "papervault add-repo" in code.content[0].text

            # resources and the prompt
            templates = {t.uri_template for t in (await c.list_resource_templates()).resource_templates}
            assert "papervault://paper/{paper_id}" in templates
            note = (await c.read_resource(f"papervault://paper/{HARVEST}")).contents[0].text
            assert note.startswith("---") and f"id: {HARVEST}" in note
            full = (await c.read_resource(f"papervault://paper/{HARVEST}/fulltext")).contents[0].text
            assert '<a id="page-1"></a>' in full
            prompt = await c.get_prompt("literature_review", {"topic": "consensus protocols"})
            text = prompt.messages[0].content.text
            assert "consensus protocols" in text and "[@" in text and "search" in text

    run(main)


# --- streamable HTTP with a bearer token, write tools ----------------------------------------------

@pytest.fixture
def http_server(indexed, tmp_path):
    """`papervault mcp --http --allow-write` on a copy of the indexed workspace (the write tools change it)."""
    root = tmp_path / "ws-http"
    shutil.copytree(indexed, root)
    port, token = free_port(), "s3cret-token-for-tests"
    proc = subprocess.Popen([*papervault_cmd(), "mcp", "serve", "--http", "--port", str(port), "--allow-write",
                             "--workspace", str(root)], env=server_env(PAPERVAULT_MCP_TOKEN=token),
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        wait_port(port, proc)
        yield root, f"http://127.0.0.1:{port}/mcp", token
    finally:
        proc.terminate()
        try:
            proc.wait(10)
        except subprocess.TimeoutExpired:
            proc.kill()


def test_http_refuses_requests_without_the_token(http_server):
    _, url, token = http_server
    init = {"jsonrpc": "2.0", "id": 1, "method": "initialize",
            "params": {"protocolVersion": "2025-06-18", "capabilities": {},
                       "clientInfo": {"name": "t", "version": "1"}}}
    headers = {"Accept": "application/json, text/event-stream", "Content-Type": "application/json"}
    r = httpx.post(url, json=init, headers=headers, timeout=30)
    assert r.status_code == 401 and r.headers["www-authenticate"].startswith("Bearer")
    r = httpx.post(url, json=init, headers={**headers, "Authorization": "Bearer wrong"}, timeout=30)
    assert r.status_code == 401
    r = httpx.post(url, json=init, headers={**headers, "Authorization": f"Bearer {token}"}, timeout=30)
    assert r.status_code == 200


def test_http_client_calls_every_tool_including_writes(http_server, corpus_dir):
    import httpx2
    from papervault.workspace import Workspace

    root, url, token = http_server
    code = root.parent / "paxos-impl"
    code.mkdir()
    (code / "leader.py").write_text(
        '"""A Paxos leader."""\n\n\nclass Leader:\n    def __init__(self, ident):\n        self.ident = ident\n'
        '        self.round = 0\n\n    def next_ballot(self):\n        """Choose the next ballot number: '
        'a higher round, then our id."""\n        self.round += 1\n        return (self.round, self.ident)\n')
    progress: list[tuple[float, str | None]] = []

    async def on_progress(p, total, message):
        progress.append((p, message))

    async def main():
        async with httpx2.AsyncClient(headers={"Authorization": f"Bearer {token}"}, timeout=120) as http:
            async with Client(streamable_http_client(url, http_client=http), read_timeout_seconds=300) as c:
                assert {t.name for t in (await c.list_tools()).tools} == READ_TOOLS | WRITE_TOOLS
                hits = data(await c.call_tool("search", {"query": "harvest yield availability", "limit": 3}))["hits"]
                assert hits[0]["paper_id"] == HARVEST
                assert data(await c.call_tool("get_paper", {"paper_id": HARVEST}))["meta"]["year"] == 1999
                assert data(await c.call_tool("read", {"paper_id": HARVEST, "pages": "2"}))["page_start"] == 2
                assert data(await c.call_tool("list_papers", {}))["total"] == 2
                assert data(await c.call_tool("status", {}))["papers"] == 2
                await c.call_tool("search_code", {"query": "x"})
                fig = await c.call_tool("get_figure", {"paper_id": PAXOS, "figure": "1"})
                assert any(b.type == "image" for b in fig.content)

                added = await c.call_tool("add_paper", {"inputs": [str(corpus_dir / "nonexistent.pdf")]},
                                          progress_callback=on_progress)
                report = data(added)
                assert report["added"] == [] and report["problems"][0]["source"].endswith("nonexistent.pdf")

                missing = await c.call_tool("add_repo", {"source": str(root / "no-such-repo")})
                assert missing.is_error      # a missing repository is a one-line error, not a crash
                none = await c.call_tool("search_code", {"query": "ballot"})
                assert none.is_error and "no code is indexed" in none.content[0].text
                repo = data(await c.call_tool("add_repo", {"source": str(code), "paper": PAXOS},
                                              progress_callback=on_progress))
                assert repo["repo"] == "paxos-impl" and repo["chunks"] >= 2
                assert [p["paper_id"] for p in repo["papers"]] == [PAXOS]
                code_hits = data(await c.call_tool("search_code", {"query": "choose the next ballot number",
                                                                   "language": "python"}))["hits"]
                assert code_hits[0]["symbol"].endswith("next_ballot") and code_hits[0]["repo"] == "paxos-impl"
                assert code_hits[0]["location"].startswith("leader.py:")

                gone = data(await c.call_tool("delete_paper", {"paper_id": HARVEST}, progress_callback=on_progress))
                assert gone["deleted"] == HARVEST and gone["commit"]
                assert gone["index"]["chunks_removed"] > 5
                assert data(await c.call_tool("list_papers", {}))["total"] == 1
                after = data(await c.call_tool("search", {"query": "harvest yield availability", "limit": 5}))
                assert HARVEST not in {h["paper_id"] for h in after["hits"]}
                again = await c.call_tool("delete_paper", {"paper_id": HARVEST})
                assert again.is_error and "no paper" in again.content[0].text

    run(main)
    assert progress, "long work reports MCP progress notifications"
    ws = Workspace(root)
    assert ws.vault.history(limit=1)[0]["message"].startswith(f"delete: {HARVEST}")


# --- install ---------------------------------------------------------------------------------------

def test_install_merges_client_configs_without_clobbering(indexed, tmp_path):
    from click.testing import CliRunner

    from papervault.cli import cli

    root = tmp_path / "ws-install"
    shutil.copytree(indexed, root)
    (root / ".mcp.json").write_text(json.dumps({"mcpServers": {"other": {"command": "other-server"}}}))
    codex = tmp_path / "home" / ".codex" / "config.toml"
    codex.parent.mkdir(parents=True)
    codex.write_text('model = "o3"  # keep me\n\n[mcp_servers.other]\ncommand = "x"\n\n'
                     '[mcp_servers.papervault]\ncommand = "old"\n\n[mcp_servers.papervault.env]\nA = "1"\n\n'
                     '[profiles.fast]\nmodel = "mini"\n')
    runner = CliRunner()
    out = runner.invoke(cli, ["mcp", "install", "claude-code", "--workspace", str(root), "--json"])
    assert out.exit_code == 0, out.output
    wrote = json.loads(out.output)
    cfg = json.loads((root / ".mcp.json").read_text())
    assert cfg["mcpServers"]["other"] == {"command": "other-server"}
    entry = cfg["mcpServers"]["papervault"]
    assert entry == wrote["server"] and entry["args"][-3:] == ["serve", "--workspace", str(root)]

    out = runner.invoke(cli, ["mcp", "install", "codex", "--workspace", str(root), "--allow-write", "--json"])
    assert out.exit_code == 0, out.output
    assert json.loads(out.output)["replaced"] is True
    text = codex.read_text()
    conf = tomllib.loads(text)
    assert conf["model"] == "o3" and "# keep me" in text and conf["profiles"]["fast"]["model"] == "mini"
    assert conf["mcp_servers"]["other"] == {"command": "x"}
    assert conf["mcp_servers"]["papervault"]["args"][-1] == "--allow-write"
    assert "env" not in conf["mcp_servers"]["papervault"]      # the old table went, sub-tables included

    # the registered command really starts a server for this workspace
    s = conf["mcp_servers"]["papervault"]

    async def main():
        async with Client(StdioServerParameters(command=s["command"], args=s["args"], env=server_env()),
                          read_timeout_seconds=60) as c:
            assert "delete_paper" in {t.name for t in (await c.list_tools()).tools}

    run(main)

    bad = tmp_path / "bad"
    bad.mkdir()
    shutil.copytree(indexed, bad / "ws")
    (bad / "ws" / ".mcp.json").write_text("{not json")
    out = runner.invoke(cli, ["mcp", "install", "claude-code", "--workspace", str(bad / "ws")])
    assert out.exit_code != 0 and (bad / "ws" / ".mcp.json").read_text() == "{not json"
