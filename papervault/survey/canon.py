"""The canon the vault lacks: papers the selected papers cite that are not in the vault.

A survey cannot cite a paper the vault does not hold, and a person cannot tell what is missing from what was
chosen. The reference list of every selected paper with full text is read once (the citation graph's entries,
`citations.reference_lines`); an entry that names no vault paper (the graph's matcher: DOI, arXiv id, title) is
a reference outside the vault. Entries of different papers are the same work when they share a DOI, an arXiv id
or a title (normalised; a near-identical title, rapidfuzz ratio >= 93, joins too). A work cited by at least two
selected papers (and by at least a quarter of those with a reference list) is listed, most cited first:

    cited by 5 of the 8 selected papers, not in the vault: Lamport, The Part-Time Parliament, 1998

with the DOI or arXiv id its entries print (what `papervault inbox accept` can fetch), else only its title.
Entries are text from papers: every field is bounded and read as data.
"""

from __future__ import annotations

import hashlib
import re
from dataclasses import asdict, dataclass, field
from typing import Any, Iterable

from papervault.errors import PapervaultError
from papervault.ids import normalize_title
from papervault.survey.citations import reference_lines

MIN_CITERS = 2          # cited by at least this many selected papers
MIN_SHARE = 0.25        # ... and by at least this share of the selected papers with a reference list
MAX_LISTED = 25         # a survey lists at most this many
SAME_TITLE = 93         # rapidfuzz ratio at which two titles are the same work
_AUTHOR = re.compile(r"^\s*(?:\[[^\]]{1,20}\]\s*|\d{1,3}\.\s+)?([A-Z][^\s,.;:]{1,40}(?:[-' ][A-Z][^\s,.;:]{1,30})?)")
_INITIAL_FIRST = re.compile(r"^\s*(?:\[[^\]]{1,20}\]\s*|\d{1,3}\.\s+)?(?:[A-Z]\.\s*){1,3}([A-Z][^\s,.;:]{1,40})")


@dataclass
class MissingWork:
    """A work the selected papers cite that the vault does not hold."""

    key: str                                   # "doi:...", "arxiv:..." or "title:<hash>": the inbox's key
    title: str = ""
    author: str = ""                           # the first author's family name, as the entries print it
    year: int | None = None
    doi: str | None = None
    arxiv: str | None = None
    cited_by: list[str] = field(default_factory=list)    # the selected papers that cite it
    entry: str = ""                            # one reference entry that names it, as printed
    page: int | None = None                    # the page of that entry in the first citing paper

    def line(self, selected: int) -> str:
        """`cited by 3 of the 4 selected papers, not in the vault: Lamport, The Part-Time Parliament, 1998`."""
        who = ", ".join(x for x in (self.author, self.title or self.entry[:160], str(self.year or "")) if x)
        ident = f" (doi:{self.doi})" if self.doi else f" (arXiv:{self.arxiv})" if self.arxiv else ""
        return f"cited by {len(self.cited_by)} of the {selected} selected papers, not in the vault: {who}{ident}"

    def as_dict(self) -> dict[str, Any]:
        return asdict(self)


_SPLIT = re.compile(r"(?<![A-Z])(?<!\b[A-Z][a-z])(?<!et al)(?<!\bvs)\.\s+(?=[A-Z0-9“\"])")
_VENUE = re.compile(r"^(in\b|proc|proceedings|acm\b|ieee\b|usenix|journal|trans|arxiv|tech|technical|phd|ph\.d|"
                    r"master|springer|lncs|vol\b|pp\b|pages|available|http|doi|isbn|sigmod|vldb|sosp|osdi|nsdi)", re.I)
_NAMES = re.compile(r"^(?:(?:[A-Z]\.\s*)+[A-Z][\w'-]+|[A-Z][\w'-]+,\s*(?:[A-Z]\.\s*)+|[A-Z][a-z]+ [A-Z][\w'-]+)"
                    r"(?:\s*(?:,|and|&)\s*(?:(?:[A-Z]\.\s*)+[A-Z][\w'-]+|[A-Z][\w'-]+,\s*(?:[A-Z]\.\s*)+|"
                    r"[A-Z][a-z]+ [A-Z][\w'-]+|et al\.?))*\s*$")


def guess_title(entry: str, parsed: str | None = None) -> str:
    """The title of a reference entry in the common styles ("Authors. Title. Venue, year.", "Authors. Year.
    Title. Venue.", "Author, I.: Title. Venue (year)", a quoted title): the first segment after the markers
    that is neither a list of names, nor a year, nor a venue."""
    quoted = re.search(r"[“\"]([^”\"]{8,300}?)[,.]?[”\"]", entry)
    if quoted:
        return quoted.group(1).strip(" ,.")
    text = re.sub(r"^\s*(?:\[[^\]]{1,20}\]|\d{1,3}\.)\s*", "", entry)
    text = re.sub(r"\(\s*(?:19|20)\d{2}[a-z]?\s*\)", ".", text)
    parts = [p.strip(" ,.;") for p in _SPLIT.split(text) if p.strip(" ,.;")]
    if parts and ": " in parts[0]:
        names, _, rest = parts[0].partition(": ")      # "Lamport, L.: The Part-Time Parliament"
        if re.search(r"\b[A-Z]\.", names) and rest:
            parts[0:1] = [names, rest]
    for i, part in enumerate(parts):
        words = part.split()
        if i == 0 and (len(parts) > 1 and (_NAMES.match(part) or "," in part or " and " in part)):
            continue            # the authors
        if re.fullmatch(r"(?:19|20)\d{2}[a-z]?", part) or _VENUE.match(part) or len(words) < 2:
            continue
        if re.search(r"\d+\s*\(\d+\)|\d+\s*[-–]\s*\d+", part) and len(words) < 8:
            continue            # "16(2):133-169": a venue's volume and pages
        return part[:300]
    return (parsed or "").strip()


def _first_author(entry: str) -> str:
    """The first author's family name: "L. Lamport", "Lamport, L.", "Leslie Lamport" -> "Lamport"."""
    m = _INITIAL_FIRST.match(entry)
    if m:
        return m.group(1).strip(".,")
    m = _AUTHOR.match(entry)
    if not m:
        return ""
    name = m.group(1).strip(".,")
    return name.split()[-1] if " " in name else name


def _key(doi: str | None, arxiv: str | None, title: str) -> str:
    if doi:
        return f"doi:{doi.lower()}"
    if arxiv:
        return f"arxiv:{arxiv}"
    return "title:" + hashlib.sha256(title.encode()).hexdigest()[:16]


def missing_canon(entries: Iterable[tuple[str, list[Any]]], named, *, selected: int) -> list[MissingWork]:
    """The works cited by enough of the selected papers and absent from the vault.

    `entries`: (citing paper id, its reference entries: objects with `text` and `page`) for each selected paper
    with a reference list; `named(text)`: the vault papers an entry names (the citation graph's matcher);
    `selected`: how many papers the selection holds."""
    from rapidfuzz import fuzz  # deferred: only when a survey lists what it lacks

    from papervault.parse.references import parse_reference  # deferred: the parser's module loads PyMuPDF

    works: list[MissingWork] = []
    by_ident: dict[str, MissingWork] = {}
    by_start: dict[tuple[str, ...], list[tuple[str, MissingWork]]] = {}
    with_refs = 0
    for citing, refs in entries:
        if not refs:
            continue
        with_refs += 1
        for r in refs:
            text = " ".join(str(r.text or "").split())[:1000]
            if len(text) < 20 or named(text):
                continue
            ref = parse_reference(text)
            title = " ".join(guess_title(text, ref.title).split())[:300]
            norm = normalize_title(title)
            if not (ref.doi or ref.arxiv) and len(norm.split()) < 3:
                continue          # no identifier and no title worth matching: not a work we can name
            work = None
            for ident in (f"doi:{ref.doi.lower()}" if ref.doi else "", f"arxiv:{ref.arxiv}" if ref.arxiv else ""):
                if ident and ident in by_ident:
                    work = by_ident[ident]
                    break
            if work is None and norm:
                for other, w in by_start.get(tuple(norm.split()[:2]), []):
                    if other == norm or fuzz.ratio(other, norm) >= SAME_TITLE:
                        work = w
                        break
            if work is None:
                work = MissingWork(key=_key(ref.doi, ref.arxiv, norm), title=title, author=_first_author(text)[:60],
                                   year=ref.year, doi=ref.doi, arxiv=ref.arxiv, entry=text[:500],
                                   page=getattr(r, "page", None))
                works.append(work)
            if citing not in work.cited_by:
                work.cited_by.append(citing)
            work.doi = work.doi or ref.doi
            work.arxiv = work.arxiv or ref.arxiv
            work.year = work.year or ref.year
            work.title = work.title or title
            for ident in (f"doi:{work.doi.lower()}" if work.doi else "", f"arxiv:{work.arxiv}" if work.arxiv else ""):
                if ident:
                    by_ident.setdefault(ident, work)
            if norm:
                by_start.setdefault(tuple(norm.split()[:2]), []).append((norm, work))
    need = max(MIN_CITERS, -(-int(MIN_SHARE * 100) * with_refs // 100))
    out = [w for w in works if len(w.cited_by) >= need]
    for w in out:
        w.key = _key(w.doi, w.arxiv, normalize_title(w.title))
    out.sort(key=lambda w: (-len(w.cited_by), w.year or 9999, w.title.lower()))
    return out[:MAX_LISTED]


def for_selection(vault, ids: list[str], named) -> list[MissingWork]:
    """`missing_canon` over the selected papers `ids` of `vault` (those with a readable paper.md)."""
    def entries():
        for pid in ids:
            try:
                text = vault.read_fulltext(pid) if vault.fulltext_path(pid).is_file() else ""
            except PapervaultError:
                text = ""
            yield pid, reference_lines(text) if text else []

    return missing_canon(entries(), named, selected=len(ids))
