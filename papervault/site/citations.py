"""Pandoc citations (`[@id]`, `[@id, p. 4]`, `[@a; @b]`) found in Markdown and rendered as links to paper pages."""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Callable

from papervault.site.sanitize import md_text
from papervault.vault.markdown import split_code

# A bracketed group with at least one `@key`; keys follow the vault's id pattern. The group may hold a
# prefix and a locator per item (`[see @a, p. 4; @b]`), as in Pandoc.
# not a Markdown link's text (`[text](url)`, `[text][ref]`), but a citation right before another one is a citation:
# `[@a, p. 1][@b]` would otherwise leave the first as the text of a link whose target is the second's rendering
BRACKET = re.compile(r"\[([^\[\]]*?@[A-Za-z0-9][A-Za-z0-9_.:-]*[^\[\]]*)\](?!\(|\[(?!-?@))")
ITEM_KEY = re.compile(r"(-?)@([A-Za-z0-9][A-Za-z0-9_.:-]*[A-Za-z0-9_]|[A-Za-z0-9])")
# Narrative citations (`@lamport2001paxos shows ...`) are only taken for keys the vault knows, so an e-mail
# address or a decorator in prose is never turned into a link.
NARRATIVE = re.compile(r"(?<![\w@/.\[])@([A-Za-z0-9][A-Za-z0-9_.:-]*[A-Za-z0-9_])")
PAGE_LOCATOR = re.compile(r"^(?:p|pp|page|pages)\.?\s*(\d+)", re.I)


@dataclass
class Cite:
    key: str
    locator: str = ""      # "p. 4"
    prefix: str = ""       # "see"
    suppress_author: bool = False

    @property
    def page(self) -> int | None:
        m = PAGE_LOCATOR.match(self.locator.strip())
        return int(m.group(1)) if m else None


@dataclass
class CitationReport:
    """Keys cited by one page, in order of first use, and the ones that are not in the vault."""

    cited: list[str] = field(default_factory=list)
    missing: list[str] = field(default_factory=list)

    def add(self, key: str, known: bool) -> None:
        target = self.cited if known else self.missing
        if key not in target:
            target.append(key)


def parse_group(inner: str) -> list[Cite] | None:
    """The items of one bracketed group, or None when it is not a citation (e.g. `[email me @home]`)."""
    cites = []
    for part in inner.split(";"):
        part = part.strip()
        m = ITEM_KEY.search(part)
        if not m:
            return None
        prefix = part[:m.start()].strip()
        locator = part[m.end():].strip().lstrip(",").strip()
        cites.append(Cite(key=m.group(2), locator=locator, prefix=prefix, suppress_author=bool(m.group(1))))
    return cites


def cited_keys(markdown: str) -> list[str]:
    """Every `[@key]` key in a Markdown text (code excluded), in order of first use."""
    out: list[str] = []
    for chunk, is_code in split_code(markdown):
        if is_code:
            continue
        for m in BRACKET.finditer(chunk):
            for c in parse_group(m.group(1)) or []:
                if c.key not in out:
                    out.append(c.key)
    return out


def render_citations(markdown: str, label: Callable[[str], str | None], link: Callable[[str, int | None], str],
                     *, narrative: bool = True) -> tuple[str, CitationReport]:
    """Replace citations by Markdown links. `label(key)` gives "Lamport 2001" or None for an unknown key;
    `link(key, page)` gives the relative link to the paper page (or its full text at `page`)."""
    report = CitationReport()

    def group(m: re.Match) -> str:
        cites = parse_group(m.group(1))
        if cites is None:
            return m.group(0)
        parts = []
        for c in cites:
            text = label(c.key)
            report.add(c.key, text is not None)
            if text is None:
                # Unknown keys stay visible and are marked, never silently dropped.
                parts.append(f'<span class="pv-cite-missing" title="not in the vault">@{c.key}</span>')
                continue
            if c.suppress_author:
                text = text.rsplit(" ", 1)[-1]
            item = f"{c.prefix + ' ' if c.prefix else ''}[{_escape(text)}]({link(c.key, None)})"
            if c.locator:
                page = c.page
                loc = _escape(c.locator)
                item += f", [{loc}]({link(c.key, page)})" if page else f", {loc}"
            parts.append(item)
        return "(" + "; ".join(parts) + ")"

    def narr(m: re.Match) -> str:
        key = m.group(1)
        text = label(key)
        if text is None:
            return m.group(0)
        report.add(key, True)
        name, _, year = text.rpartition(" ")
        return f"[{_escape(name or text)}]({link(key, None)}) ({year})" if name else f"[{_escape(text)}]({link(key, None)})"

    out = []
    for chunk, is_code in split_code(markdown):
        if not is_code:
            chunk = BRACKET.sub(group, chunk)
            if narrative:
                chunk = NARRATIVE.sub(narr, chunk)
        out.append(chunk)
    return "".join(out), report


def _escape(text: str) -> str:
    """A label or locator as Markdown text (brackets, asterisks, angle brackets and `&` shown as written)."""
    return md_text(text)
