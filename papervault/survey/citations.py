"""Which vault papers cite which: the reference lists of the papers with full text, matched against the vault.

A reference list names a vault paper by its DOI, its arXiv id or its normalised title (three words or more; a
title of one or two words, "Soft typing", only with its first author's family name and its year in the same
entry), the rule of `correlate.find_lineages` and of the selection's citation links; here it is applied to the whole vault at
once: the vault's titles are indexed by their first three words, so a reference list is read in one pass whatever
the size of the library. Topic selection uses the graph for citation evidence (papervault.survey.topic): a paper
that the selected papers cite, weighed against how often the rest of the vault cites it.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Iterable

from papervault import doi as DOI
from papervault.errors import PapervaultError
from papervault.ids import last_name, normalize_title
from papervault.parse.text import dehyphen, one_line
from papervault.vault import paper as paper_md

_ARXIV = re.compile(r"(?<![\d.])(\d{4}\.\d{4,5})(?:v\d+)?(?![\d])")


@dataclass
class CitationGraph:
    """`cites[a]` = the vault papers a's reference list names; `cited_by[b]` = the vault papers that name b.
    `with_refs` = the papers whose reference list could be read (the ones that can cite at all)."""

    cites: dict[str, set[str]] = field(default_factory=dict)
    cited_by: dict[str, set[str]] = field(default_factory=dict)
    with_refs: set[str] = field(default_factory=set)
    how: dict[tuple[str, str], str] = field(default_factory=dict)   # (citing, cited) -> the rule that matched
    matcher: "Matcher | None" = field(default=None, repr=False, compare=False)   # what matched the lists (build_graph)

    def citers(self, pid: str, among: Iterable[str] | None = None) -> set[str]:
        got = self.cited_by.get(pid, set())
        return got & set(among) if among is not None else set(got)


def reference_list(fulltext: str) -> str:
    """A paper's reference list as one line, line-break hyphenation joined ("dis- tributed")."""
    # deferred: the agents package (tenacity, pydantic models, ~0.1 s), not at the MCP server's start-up
    from papervault.agents.cited_work import references_text

    return dehyphen(one_line(references_text(fulltext)))


# A title of one or two words ("Soft typing") names a paper only with its first author's family name among the
# words just before it and its year near it: a reference entry is "Authors. Title. Venue, year." or
# "Authors (year). Title. Venue."; alone, two words match too much to mean a citation.
SHORT_BEFORE = 25       # the family name within this many words before the title
SHORT_AFTER = 30        # the year within SHORT_BEFORE words before or this many after
_ENTRY = re.compile(r"\[[^\]\s]{1,12}\]|(?:^|\s)-\s")    # where a reference entry starts: "[12]", "[CF91]", "- "


class Matcher:
    """Finds the vault papers a reference list names, by DOI, arXiv id or title (a title of one or two words
    only with its first author and year, when `authors` and `years` are given)."""

    def __init__(self, ids: list[str], titles: list[str], dois: list[str], arxivs: list[str],
                 authors: list[list[str]] | None = None, years: list[int | None] | None = None):
        self.by_doi = {d.lower().rstrip("."): pid for pid, d in zip(ids, dois) if d}
        self.by_arxiv = {a.split("v")[0]: pid for pid, a in zip(ids, arxivs) if a and _ARXIV.fullmatch(a.split("v")[0])}
        self.by_start: dict[tuple[str, str, str], list[tuple[tuple[str, ...], str]]] = {}
        self.short: dict[str, list[tuple[tuple[str, ...], str, str, str]]] = {}
        for k, (pid, t) in enumerate(zip(ids, titles)):
            words = tuple(normalize_title(t).split())
            if len(words) >= 3:
                self.by_start.setdefault(words[:3], []).append((words, pid))
            elif words and authors is not None and years is not None:
                first = (authors[k] or [""])[0] if k < len(authors) else ""
                family = normalize_title(last_name(first or "")).split()
                year = years[k] if k < len(years) else None
                if family and isinstance(year, int):
                    self.short.setdefault(words[0], []).append((words, family[-1], str(year), pid))

    def named(self, refs: str) -> set[str]:
        return set(self.named_how(refs))

    def named_how(self, refs: str) -> dict[str, str]:
        """The vault papers `refs` names, each with the first rule that named it: "DOI", "arXiv id", "title",
        or "title, first author and year" (a title of one or two words)."""
        if not refs.strip():
            return {}
        low = refs.lower()
        out: dict[str, str] = {}
        for d in DOI.IN_LIST.findall(low):
            if d.rstrip(".") in self.by_doi:
                out.setdefault(self.by_doi[d.rstrip(".")], "DOI")
        for a in _ARXIV.findall(low):
            if a in self.by_arxiv:
                out.setdefault(self.by_arxiv[a], "arXiv id")
        words = normalize_title(refs).split()
        for j in range(len(words) - 2):
            for title, pid in self.by_start.get((words[j], words[j + 1], words[j + 2]), ()):
                if tuple(words[j:j + len(title)]) == title:
                    out.setdefault(pid, "title")
        if self.short:
            for pid in self.short_named(refs):
                out.setdefault(pid, "title, first author and year")
        return out

    def short_named(self, refs: str) -> set[str]:
        """The short titles named in `refs`, entry by entry (split at `[n]` markers and list bullets): the family
        name and the year must belong to the same entry as the title."""
        out: set[str] = set()
        for entry in _ENTRY.split(refs):
            words = normalize_title(entry).split()
            for j, w in enumerate(words):
                for title, family, year, pid in self.short.get(w, ()):
                    if pid in out or tuple(words[j:j + len(title)]) != title:
                        continue
                    before = words[max(0, j - SHORT_BEFORE):j]
                    after = words[j + len(title):j + len(title) + SHORT_AFTER]
                    if family in before and (year in before or year in after):
                        out.add(pid)
        return out


def build_graph(vault, ids: list[str], titles: list[str], dois: list[str], arxivs: list[str],
                with_text: Iterable[str], authors: list[list[str]] | None = None,
                years: list[int | None] | None = None) -> CitationGraph:
    """The citation graph of the vault: the reference list of every paper of `with_text` (the papers with a
    paper.md) matched against all of `ids`. A paper whose full text cannot be read cites nothing."""
    matcher = Matcher(ids, titles, dois, arxivs, authors, years)
    g = CitationGraph(matcher=matcher)
    for pid in with_text:
        try:
            refs = reference_list(vault.read_fulltext(pid))
        except (OSError, PapervaultError):
            continue
        if not refs.strip():
            continue
        g.with_refs.add(pid)
        named = matcher.named_how(refs)
        named.pop(pid, None)
        if named:
            g.cites[pid] = set(named)
            for c, how in named.items():
                g.cited_by.setdefault(c, set()).add(pid)
                g.how[(pid, c)] = how
    return g


# --- the evidence of an edge: the reference line and its page --------------------------------------

_MARK = re.compile(r"(?:^|\s)\[(\d{1,3})\]\s")
_PARAGRAPH = re.compile(r"\S(?:[^\n]|\n(?![ \t]*\n))*")


@dataclass
class Reference:
    """One entry of a paper's reference list, as one line, with the PDF page it is printed on."""

    text: str
    page: int | None


def reference_lines(fulltext: str) -> list[Reference]:
    """The entries of a paper's reference list with their pages: each paragraph after the references heading,
    split at `[n]` markers when it holds several, line-break hyphenation joined."""
    doc = paper_md.read(fulltext)
    start = doc.references_start
    if start is None:
        return []
    out: list[Reference] = []
    for m in _PARAGRAPH.finditer(fulltext, start):
        para = m.group(0)
        if para.startswith("#") or paper_md.without_anchors(para).strip() == "":
            continue
        at = m.start()
        marks = list(_MARK.finditer(para))
        spans = [(a.start(), b.start() if b else len(para)) for a, b in zip(marks, marks[1:] + [None])] \
            if len(marks) > 1 else [(0, len(para))]
        for a, b in spans:
            text = dehyphen(one_line(paper_md.without_anchors(para[a:b])))
            if text:
                out.append(Reference(text[:1000], doc.page_at(at + a + 1)))
    return out


def cited_with_evidence(matcher: Matcher, fulltext: str) -> dict[str, Reference]:
    """The vault papers a paper's reference list names, each with the entry that names it (the first). A
    paper named only across two entries (a title broken by a page) gets the two joined."""
    lines = reference_lines(fulltext)
    out: dict[str, Reference] = {}
    for r in lines:
        for pid in sorted(matcher.named(r.text)):
            out.setdefault(pid, r)
    whole = matcher.named(reference_list(fulltext)) - set(out)
    for a, b in zip(lines, lines[1:]):
        if not whole:
            break
        for pid in sorted(matcher.named(a.text + " " + b.text) & whole):
            out[pid] = Reference(a.text + " " + b.text, a.page)
            whole.discard(pid)
    for pid in whole:
        out[pid] = Reference("", None)
    return out
