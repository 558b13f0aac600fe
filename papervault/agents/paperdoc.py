"""What the analyser reads of a `paper.md`: its sections' prose, list items, sentences, figures and tables.

The extractive backend and coverage both need it; they get it from the text in the vault, not from the
parser's objects, so a paper parsed long ago (or edited by hand) is read the same way. Sections, pages,
figures, tables and the reference list come from `papervault.vault.paper`, the one reader of the format;
this module adds the prose view (sentences and list items by section and page) and parses nothing itself.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

from papervault.vault import paper as paper_md

LIST_ITEM = re.compile(r"^\s*(?:[-*•●▪◦]|\(?\d{1,2}[.)]|\([a-z]\))\s+(?P<text>\S.*)$")
SECTION_NUMBER = re.compile(r"^(?P<num>(?:\d+|[A-Z])(?:\.\d+)*)\.?\s+(?P<title>\S.*)$")


@dataclass
class DocSection:
    title: str              # without its number: "Introduction"
    number: str             # "1", "3.2", "" when unnumbered
    level: int              # ATX level: 1 = the paper title, 2 = a top-level section ...
    page: int
    text: str = ""          # the section's own prose (no sub-sections, tables or image lines)
    page_end: int = 0
    blocks: list[tuple[int, str]] = field(default_factory=list, repr=False)   # (page, cleaned prose) in order
    items: list[tuple[int, str]] = field(default_factory=list, repr=False)    # (page, list item) in order

    @property
    def label(self) -> str:
        return f"{self.number} {self.title}".strip()


@dataclass
class DocFigure:
    number: str
    caption: str            # the caption without its "Figure N:" label
    page: int
    src: str = ""           # "figures/fig-3.png"
    section: str = ""       # label of the section it appears in


@dataclass
class DocTable:
    number: str
    caption: str
    page: int
    rows: list[list[str]] = field(default_factory=list)   # header first
    section: str = ""

    @property
    def header(self) -> list[str]:
        return self.rows[0] if self.rows else []


@dataclass
class Sentence:
    text: str
    page: int
    section: str            # the label of the section it belongs to


@dataclass
class PaperDoc:
    title: str = ""
    pages: int = 0
    sections: list[DocSection] = field(default_factory=list)
    figures: list[DocFigure] = field(default_factory=list)
    tables: list[DocTable] = field(default_factory=list)
    abstract: str = ""
    abstract_page: int = 1
    references: list[str] = field(default_factory=list)
    text: str = ""          # all prose, whitespace-normalised (for quotation checks)

    def section(self, *names: str) -> DocSection | None:
        """The first section whose title starts with one of `names` (case-insensitive)."""
        for s in self.sections:
            low = s.title.lower()
            if any(low.startswith(n.lower()) for n in names):
                return s
        return None

    @property
    def body_sections(self) -> list[DocSection]:
        """Sections a note should cover: not the title, abstract or references."""
        skip = ("abstract", "acknowledg")
        return [s for s in self.sections if s.level >= 2 and not s.title.lower().startswith(skip)
                and not paper_md.is_references(s.title)]


COMMON_SECTIONS = re.compile(r"^(?:introduction|background|motivation|related work|conclusions?|discussion|evaluation|"
                             r"experiments?|results|limitations|future work|appendix|summary|acknowledg\w*)", re.I)


def top_sections(doc: PaperDoc) -> list[DocSection]:
    """The paper's top-level sections, the unit of coverage (sub-sections count with their parent).

    When the paper numbers its sections, those numbered without a dot (and the usual unnumbered ones such
    as "Conclusion"); otherwise every section at the shallowest heading level below the title. The
    numbered rule also drops stray headings a parser made of author names or affiliations.
    """
    body = doc.body_sections
    numbered = [s for s in body if s.number and "." not in s.number]
    if len(numbered) >= 2:
        return [s for s in body if (s.number and "." not in s.number) or (not s.number and COMMON_SECTIONS.match(s.title))]
    if not body:
        return []
    level = min(s.level for s in body)
    return [s for s in body if s.level == level]


def normalise(text: str) -> str:
    """Collapse whitespace and undo line-break hyphenation, for comparing quotations with the paper."""
    text = text.replace("\u00ad", "")
    text = re.sub(r"(\w)-\s*\n\s*(\w)", r"\1\2", text)
    return re.sub(r"\s+", " ", text).strip()


_clean_inline = paper_md.inline_plain      # Markdown emphasis, links and images out: plain prose


_ABBREV = re.compile(r"\b(?:e\.g|i\.e|et al|etc|Fig|Figs|Eq|Eqs|Sec|Secs|vs|cf|resp|approx|No|Ref|Refs|Dr|Mr|Ms|al)\.$", re.I)


def sentences(text: str) -> list[str]:
    """Split prose into sentences without breaking at common abbreviations or decimals."""
    text = normalise(_clean_inline(text))
    if not text:
        return []
    # inline bullets ("... are: • ASAP, the first ... • Three optimizations ...") end a sentence too
    parts = [p for chunk in re.split(r"\s*[•●▪]\s+", text) for p in re.split(r"(?<=[.!?])\s+(?=[A-Z0-9\[(“\"])", chunk)]
    out: list[str] = []
    for part in parts:
        if out and (_ABBREV.search(out[-1]) or re.search(r"\b[A-Z]\.$", out[-1])):
            out[-1] = f"{out[-1]} {part}"
        else:
            out.append(part)
    return [s.strip() for s in out if s.strip()]


def _split_heading(raw: str) -> tuple[str, str]:
    raw = _clean_inline(raw).strip()
    m = SECTION_NUMBER.match(raw)
    if m and len(m.group("num")) <= 8:
        return m.group("num"), m.group("title").strip()
    return "", raw


# long: one walk over the reader's blocks with the section being built as its state; split, that state would
# travel between the parts
def read_paper(markdown: str) -> PaperDoc:
    """A `paper.md` body's prose view, from the blocks `papervault.vault.paper` reads; tolerant of anything the
    parser may emit."""
    structure = paper_md.read(markdown)
    doc = PaperDoc(pages=max(structure.pages, default=0))
    current: DocSection | None = None
    prose: dict[int, list[tuple[int, str]]] = {}          # id(section) -> (page, line)
    in_refs = False
    pre_title_lines: list[str] = []
    starts: list[tuple[int, str]] = []        # (line, section label) where each section starts

    for b in structure.blocks:
        if b.kind == "heading":
            number, title = _split_heading(b.title)
            if b.section is None:
                doc.title = title if not number else f"{number} {title}"
            current = DocSection(title=title, number=number, level=b.level, page=b.page_start or 1)
            starts.append((b.start, current.label))
            doc.sections.append(current)
            prose[id(current)] = []
            in_refs = paper_md.is_references(title)
            continue
        if b.kind == "table":
            continue                          # tables (and their captions) are read by the vault's reader
        item: list | None = None              # [page, lines] of the list item being read
        for line, p in zip(b.lines, b.pages):
            page = p or 1
            stripped = paper_md.without_images(line).strip()
            if in_refs:
                if stripped:
                    doc.references.append(stripped)
                continue
            if current is None:
                pre_title_lines.append(line)
                continue
            li = LIST_ITEM.match(stripped)
            if li:
                item = [page, [li.group("text")]]
                current.items.append(item)  # type: ignore[arg-type]
            elif item is not None and stripped and not stripped.startswith(("<", "|")):
                item[1].append(stripped)
            else:
                item = None
            prose[id(current)].append((page, line))

    def section_at(line: int) -> str:
        label = ""
        for start, name in starts:
            if start > line:
                break
            label = name
        return label

    doc.figures = [DocFigure(number=f.number, caption=normalise(f.caption), page=f.page or 1, src=f.src,
                             section=section_at(f.line)) for f in structure.figures]
    doc.tables = [DocTable(number=t.number, caption=normalise(t.caption), page=t.page or 1,
                           rows=[[normalise(c) for c in row] for row in t.rows], section=section_at(t.line))
                  for t in structure.tables if t.rows]

    for i, s in enumerate(doc.sections):
        by_page: dict[int, list[str]] = {}
        for p, ln in prose.get(id(s), []):
            by_page.setdefault(p, []).append(ln)
        s.blocks = [(p, normalise(_clean_inline("\n".join(lns)))) for p, lns in by_page.items()]
        s.blocks = [(p, t) for p, t in s.blocks if t]
        s.text = " ".join(t for _, t in s.blocks)
        s.items = [(it[0], normalise(_clean_inline(" ".join(it[1])))) for it in s.items]  # type: ignore[index]
        nxt = doc.sections[i + 1].page if i + 1 < len(doc.sections) else doc.pages or s.page
        s.page_end = max(s.page, nxt)
    doc.pages = doc.pages or 1

    abstract = doc.section("abstract")
    if abstract is not None and abstract.text:
        doc.abstract, doc.abstract_page = abstract.text, abstract.page
    else:
        # pymupdf-style output often puts "Abstract" as bold text inside the title block
        first = [ln for _, ln in prose.get(id(doc.sections[0]), [])] if doc.sections else []
        block = normalise(_clean_inline("\n".join(pre_title_lines + first)))
        m = re.search(r"\bAbstract\b[\s.:—-]*(.+)", block, re.I)
        if m:
            doc.abstract = m.group(1).strip()
            doc.abstract_page = 1
    doc.text = normalise(_clean_inline(markdown))
    return doc


def section_sentences(section: DocSection) -> list[Sentence]:
    """The sentences of one section, each with the page on which it starts."""
    starts, pos = [], 0
    for p, t in section.blocks:
        starts.append((pos, p))
        pos += len(t) + 1
    out, cursor = [], 0
    for t in sentences(section.text):
        at = section.text.find(t[:30], cursor)
        if at >= 0:
            cursor = at
        page = section.page
        for off, p in starts:
            if off <= cursor:
                page = p
        out.append(Sentence(text=t, page=page, section=section.label))
    return out


# --- a long paper in parts, for a backend that takes the text in its message ----------------------

@dataclass
class PaperPart:
    """One part of a paper read in parts: its text (page anchors kept) and the pages it holds."""

    index: int              # 1-based
    count: int
    first: int              # the first page it holds (a page cut in pieces counts in each of its pieces)
    last: int
    text: str

    @property
    def label(self) -> str:
        pages = f"page {self.first}" if self.first == self.last else f"pages {self.first}-{self.last}"
        return f"{pages} (part {self.index} of {self.count})"

    def as_dict(self) -> dict[str, int]:
        return {"index": self.index, "count": self.count, "first": self.first, "last": self.last}


def _pieces(text: str, budget: int, heads: list[int]) -> list[str]:
    """`text` in pieces of at most `budget` characters: cut before a heading (`heads`: offsets in `text`) where
    one falls in the second half of a piece, else at a paragraph break, else at a line break, else at a space
    (inside a word only when a 'word' is longer than the budget)."""
    out: list[str] = []
    start = 0
    while len(text) - start > budget:
        window = text[start:start + budget]
        cut = max((h - start for h in heads if start + budget // 2 <= h < start + budget), default=-1)
        for sep in ("\n\n", "\n", " "):
            if cut <= 0:
                at = window.rfind(sep)
                cut = at + len(sep) if at > 0 else -1
        if cut <= 0:
            cut = budget
        out.append(text[start:start + cut])
        start += cut
    if start < len(text):
        out.append(text[start:])
    return out


def split_paper(markdown: str, budget: int) -> list[PaperPart]:
    """A `paper.md` in parts of at most `budget` characters each, whole pages where they fit.

    Pages are packed in order while the part stays within the budget; a part ends before the page that would
    pass it, and a new part starts at a page that opens with a heading when the current one is already four
    fifths full (so a section is split less often). A page longer than the budget alone is cut in pieces (before
    a heading, else at a paragraph break). Nothing is left out: the parts joined give the text back.
    """
    budget = max(1000, int(budget))
    structure = paper_md.read(markdown)
    anchors = structure.anchors
    heads = paper_md.heading_offsets(markdown)
    units: list[tuple[int, int, int]] = []             # (page, start, end) in order
    if not anchors:
        units = [(1, 0, len(markdown))]
    else:
        for k, (page, start) in enumerate(anchors):
            end = anchors[k + 1][1] if k + 1 < len(anchors) else len(markdown)
            units.append((page, 0 if k == 0 else start, end))     # what precedes the first anchor goes with it
    pieces: list[tuple[int, int, str]] = []            # (page, offset, text)
    for page, start, end in units:
        offset = start
        for t in _pieces(markdown[start:end], budget, [h - start for h in heads if start < h < end]):
            pieces.append((page, offset, t))
            offset += len(t)
    parts: list[tuple[int, int, list[str]]] = []
    size = 0
    for page, offset, text in pieces:
        # a piece opens a section when a heading follows its start with nothing but a page anchor before it
        opens_section = any(offset <= h < offset + 200 and not paper_md.without_anchors(markdown[offset:h]).strip()
                            for h in heads)
        if parts and (size + len(text) > budget or (opens_section and size > budget * 0.8)):
            parts.append((page, page, [text]))
            size = len(text)
            continue
        if not parts:
            parts.append((page, page, []))
        first, _, texts = parts[-1]
        texts.append(text)
        parts[-1] = (first, page, texts)
        size += len(text)
    n = len(parts)
    return [PaperPart(i + 1, n, first, last, "".join(texts)) for i, (first, last, texts) in enumerate(parts)]
