"""End to end with a real MCP client: the Claude Code CLI bundled with claude-agent-sdk starts `papervault mcp`
from an MCP config, and a scripted loopback Messages API makes it call `mcp__papervault__search`; the next
request must carry the search results as the tool_result."""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path

import pytest

from support_llm import MessagesServer, Turn, last_user_blocks, tool_names
from support_mcp import papervault_cmd, paxos_harvest, server_env

TOOL = "mcp__papervault__search"


def claude_cli() -> Path:
    import claude_agent_sdk

    path = Path(claude_agent_sdk.__file__).parent / "_bundled" / "claude"
    if not path.is_file():
        pytest.skip(f"the bundled claude CLI is not at {path}")
    return path


class SearchScript(MessagesServer):
    """Answers the session's first request with a search tool_use, and the one carrying its result with end_turn.

    Side requests of the CLI (titles, probes) do not offer our MCP tools and get a short text, like the base class.
    """

    def __init__(self, query: dict):
        super().__init__(lambda req: Turn.say("unused"))
        self.query = query
        self.tool_use_id: str | None = None
        self.offered: list[str] = []
        self.results: list[dict] = []

    def handle_post(self, h, req: dict):
        path = req.get("_path", "")
        if "/messages" not in path or "count_tokens" in path or TOOL not in tool_names(req):
            return super().handle_post(h, req)
        self._enter(req)
        try:
            self.offered = tool_names(req)
            results = [b for b in last_user_blocks(req) if b.get("type") == "tool_result"]
            if results:
                self.results.extend(results)
                turn = Turn.say("The vault answers: see the hits.")
            else:
                turn = Turn.tool_use(TOOL, self.query)
            self._reply(h, req, turn)
        finally:
            self._leave()


def _text(block: dict) -> str:
    content = block.get("content")
    if isinstance(content, str):
        return content
    return "\n".join(c.get("text", "") for c in content or [] if isinstance(c, dict))


def test_claude_code_calls_search_and_reads_the_results(tmp_path_factory, tmp_path, corpus_dir, model_dir):
    root = paxos_harvest(tmp_path_factory, corpus_dir)
    cli = claude_cli()
    cmd = papervault_cmd()
    config = tmp_path / "mcp.json"
    config.write_text(json.dumps({"mcpServers": {"papervault": {
        "type": "stdio", "command": cmd[0], "args": [*cmd[1:], "mcp", "--workspace", str(root)],
        "env": server_env()}}}))
    home = Path(os.environ["HOME"])
    with SearchScript({"query": "Paxos ballots acceptors leader", "limit": 3}) as api:
        env = {**server_env(), **api.claude_env(), "ENABLE_TOOL_SEARCH": "false", "HOME": str(home),
               "CLAUDE_CONFIG_DIR": str(home / ".claude")}
        proc = subprocess.run(
            [str(cli), "-p", "Which vault passages discuss Paxos ballots? Use the papervault search tool.",
             "--mcp-config", str(config), "--strict-mcp-config", "--allowedTools", TOOL,
             "--output-format", "json"],
            env=env, cwd=tmp_path, capture_output=True, text=True, timeout=240)
        assert proc.returncode == 0, proc.stderr[-2000:] + proc.stdout[-2000:]

    # the model was offered every read tool of the server, with schemas (not deferred behind ToolSearch)
    for name in ("search", "get_paper", "read", "get_figure", "list_papers", "status", "search_code"):
        assert f"mcp__papervault__{name}" in api.offered
    assert "mcp__papervault__delete_paper" not in api.offered
    assert len(api.results) == 1, "the tool_result of the search reached the model"
    result = api.results[0]
    assert not result.get("is_error"), _text(result)
    found = json.loads(_text(result))
    assert found["count"] >= 1
    hit = found["hits"][0]
    assert hit["paper_id"] == "vanrenesse2015paxos"
    assert hit["anchor"].startswith("papers/vanrenesse2015paxos/paper.md#page-") and hit["chunk_id"]
    assert "ballot" in " ".join(h["text"].lower() for h in found["hits"])
    assert json.loads(proc.stdout)["result"] == "The vault answers: see the hits."
