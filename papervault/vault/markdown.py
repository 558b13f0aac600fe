"""Markdown as the vault holds it, split into prose and code, and made safe to hand to an agent.

A leaf shared by the site (citations, sanitising) and the MCP server: code must stay verbatim wherever prose is
rewritten, and `agent_markdown` is what every MCP answer's text goes through.
"""

from __future__ import annotations

import re
from typing import Iterator

from papervault.vault.paper import ANCHOR_HTML

# Fenced and inline code must stay verbatim.
CODE = re.compile(r"(^```.*?^```[ \t]*$|^~~~.*?^~~~[ \t]*$|`[^`\n]+`)", re.S | re.M)


def split_code(text: str) -> Iterator[tuple[str, bool]]:
    """`text` as (piece, is_code) pairs, in order: fenced blocks and inline code spans are the code pieces."""
    pos = 0
    for m in CODE.finditer(text):
        yield text[pos:m.start()], False
        yield m.group(0), True
        pos = m.end()
    yield text[pos:], False


# The HTML papervault itself writes into paper.md: page anchors and tables (colspan/rowspan as HTML).
_AGENT_TAG = re.compile(
    r'(?P<own></?(?:table|thead|tbody|tfoot|tr|br|sup|sub)\s*/?>|<t[dh](?:\s+(?:colspan|rowspan)="\d+")*\s*>'
    r'|</t[dh]>|' + ANCHOR_HTML + ')'
    r'|<(?P<close>/?)(?P<name>[A-Za-z][A-Za-z0-9-]*)(?=[\s/>])', re.I)


def agent_markdown(markdown: str) -> str:
    """Markdown for an MCP client: every HTML tag but the anchors and tables papervault writes is shown as
    text (`&lt;script>`), code left verbatim, so a client that renders the answer runs nothing from a paper."""

    def tag(m: re.Match) -> str:
        return m.group("own") or "&lt;" + m.group("close") + m.group("name")

    return "".join(chunk if is_code else _AGENT_TAG.sub(tag, chunk) for chunk, is_code in split_code(markdown))
