"""The bibliography: split into entries with their DOI, arXiv id, year and (best guess) title."""

from __future__ import annotations

import re

from papervault import doi as DOI
from papervault.models import Reference
from papervault.parse.layout import Line
from papervault.parse.text import join_lines

REFERENCES_HEADING = re.compile(r"^(\d+\.?\s+|[IVX]+\.?\s+|§\s*\d+\.?\s*)?"
                                r"(references|bibliography|literature cited|works cited|"
                                r"references and notes)\s*$", re.I)
DOI_RE = DOI.IN_TEXT
ARXIV_RE = re.compile(r"(?:arxiv(?:\.org/(?:abs|pdf)/|:\s*|\s+(?:preprint\s+)?(?:arxiv:)?\s*)|abs/)"
                      r"((?:\d{4}\.\d{4,5})|(?:[a-z-]+(?:\.[A-Z]{2})?/\d{7}))(v\d+)?", re.I)
_BRACKET = re.compile(r"^\s*\[([^\]]{1,20})\]\s*")
_NUMBERED = re.compile(r"^\s*(\d{1,3})\.\s+(?=\S)")
_YEAR = re.compile(r"(?<!\d)((?:19|20)\d{2})(?!\d)")


def clean_doi(doi: str) -> str:
    doi = doi.rstrip(".,;:)]}>'\"")
    # A line-break inside a DOI leaves a hyphen or nothing; we cannot tell, so keep what is there.
    return doi.lower() if doi.lower().startswith("10.") else doi


def find_doi(text: str) -> str | None:
    m = DOI_RE.search(text.replace("doi: ", "doi:").replace("DOI ", "DOI:"))
    return clean_doi(m.group(1)) if m else None


def find_arxiv(text: str) -> str | None:
    m = ARXIV_RE.search(text)
    return m.group(1) if m else None


def split_references(lines: list[Line]) -> list[str]:
    """The raw text of each entry, from the lines of the bibliography in reading order."""
    return [raw for raw, _ in split_reference_lines(lines)]


def split_reference_lines(lines: list[Line]) -> list[tuple[str, int]]:
    """(raw text, index in `lines` of its first line) of each entry, from the bibliography's lines in reading
    order; the index tells on which page an entry starts."""
    texts = [ln.text for ln in lines]
    if not texts:
        return []
    n_bracket = sum(1 for t in texts if _BRACKET.match(t))
    n_numbered = sum(1 for t in texts if _NUMBERED.match(t))
    starts: list[bool]
    if n_bracket >= 3 and n_bracket >= 0.15 * len(texts):
        labels = [m.group(1).strip() for t in texts if (m := _BRACKET.match(t))]
        # Numbered labels: a line that starts with "[Online]" or "[Accessed ...]" continues its entry.
        numeric = sum(lb.isdigit() for lb in labels) >= 0.8 * len(labels)
        starts = [bool(m) and (not numeric or m.group(1).strip().isdigit())
                  for m in (_BRACKET.match(t) for t in texts)]
    elif n_numbered >= 3 and n_numbered >= 0.15 * len(texts):
        starts = _numbered_starts(texts)
    else:
        starts = _hanging_starts(lines)
    entries: list[list[str]] = []
    first: list[int] = []
    for i, (t, s) in enumerate(zip(texts, starts)):
        if s or not entries:
            entries.append([t])
            first.append(i)
        else:
            entries[-1].append(t)
    out = []
    for e, i in zip(entries, first):
        raw = join_lines(e)
        # Joining a URL or DOI broken across lines leaves a space inside it.
        raw = re.sub(rf"(https?://\S+|{DOI.PREFIX}\S+)-? (?=[\w/.-]*[/.][\w/.-]*)(\S+)",
                     lambda m: m.group(1) + m.group(2) if m.group(1).endswith(("/", ".", "-", "_")) else m.group(0), raw)
        if len(raw) > 8:
            out.append((raw, i))
    return out


def _numbered_starts(texts: list[str]) -> list[bool]:
    # Accept "12. " only when it continues the count, so "3. ACM Press" inside an entry is not a start.
    starts, expect = [], None
    for t in texts:
        m = _NUMBERED.match(t)
        ok = bool(m) and (expect is None or int(m.group(1)) == expect)
        if ok:
            expect = int(m.group(1)) + 1
        starts.append(ok)
    return starts


def _hanging_starts(lines: list[Line]) -> list[bool]:
    """Entries set with a hanging indent start at the column's left edge; the rest of each is indented.

    Without an indent, MuPDF's blocks (one per entry in most layouts) decide."""
    starts = []
    for i, ln in enumerate(lines):
        # Left edge of this line's column: the smallest x0 among lines that overlap it horizontally.
        left = min(o.bbox[0] for o in lines if o.bbox[0] < ln.bbox[2] and o.bbox[2] > ln.bbox[0])
        indented = ln.bbox[0] - left > 4
        prev = lines[i - 1] if i else None
        new_block = prev is None or prev.block != ln.block
        has_indent = any(o.bbox[0] - left > 4 for o in lines)
        starts.append((not indented) if has_indent else new_block)
    return starts


def parse_reference(raw: str) -> Reference:
    """A Reference with the identifiers and year found in its text, and a best-effort title."""
    text = _BRACKET.sub("", raw, count=1)
    text = _NUMBERED.sub("", text, count=1)
    years = [int(y) for y in _YEAR.findall(text) if 1900 <= int(y) <= 2100]
    return Reference(raw=raw, doi=find_doi(text), arxiv=find_arxiv(text), title=_guess_title(text),
                     year=years[-1] if years else None)


_QUOTED = re.compile(r"[“\"]([^”\"]{8,300}?)[,.]?[”\"]")


def _guess_title(text: str) -> str | None:
    m = _QUOTED.search(text)
    if m:
        return m.group(1).strip(" ,.")
    # "Authors. Title. Venue..." / "Authors (2001). Title. Venue": split into sentences, not at initials.
    text = re.sub(r"\(\s*(?:19|20)\d{2}[a-z]?\s*\)\.?", ".", text)
    parts = [p.strip() for p in re.split(r"(?<![A-Z])(?<!\b[A-Z][a-z])(?<!et al)\.\s+(?=[A-Z0-9“\"])", text) if p.strip()]
    if len(parts) >= 2:
        title = parts[1].strip(" .,")
        if 8 <= len(title) <= 300 and not _YEAR.fullmatch(title):
            return title
    return None
