"""`paper.md`, the contract every stage reads: how it is written, the one reader, and the links into it.

The writer's conventions: every page opens with an anchor line `<a id="page-N"></a>`; headings are ATX
(`## 1 Introduction`, the paper's title is the first `#`); a figure is an image line
`![Figure N: caption](figures/<file>.png)`; a table is a paragraph `Table N: caption` followed by a Markdown
table. A page is cited as `papers/<id>/paper.md#page-N` (`page_link`).

The reader walks markdown-it-py's token stream (not regular expressions over lines): headings are heading
tokens, figures are image tokens, tables are table tokens. A page anchor is only the exact line the writer
emits, as a paragraph of its own; the writer escapes every `<` of a paper's text that would open HTML
(`escape_html`). So a `#` or a `![...]` inside a code block, or an anchor a PDF's text spells out, in any
spacing or case, is never mistaken for structure.

This module is the only one that parses `paper.md` (tests/test_paper_md.py enforces it). Everything else asks
`read(text)` for the title, pages and their spans, sections, figures, tables, the reference list
(`references_text`) and the document as a list of blocks (headings, prose, figures, tables, each with its
lines and pages: what the chunker and the analyser's prose view walk), and builds links with `page_link`.
"""

from __future__ import annotations

import posixpath
import re
from bisect import bisect_right
from dataclasses import dataclass, field
from functools import lru_cache
from html.parser import HTMLParser

FIGURES_DIR = "figures"

# The one grammar of figure and table labels, shared by every reader. A figure label is read from an image's
# alt text ("Figure 3: ...", "Fig. 2", "**Figure 4.**"), so its separator is optional; a table label starts a
# paragraph of prose, so it needs its separator ("Table 2: ...", "Table IV. ...") or "Table 1 shows" would be
# taken for a caption. The writer always writes "Figure N: caption" and "Table N: caption".
_NUMBER = r"(?P<num>(?-i:[A-Z]?\.?\d+[a-z]?|[IVXLC]+))(?!\w)"     # 3, 3b, B.1, A2, IV (as the parser numbers)
FIGURE_LABEL = re.compile(r"^\s*(?:\*\*|_)?(?:Figure|Fig\.?)\s*" + _NUMBER + r"(?:\*\*|_)?\s*[:.]?(?:\*\*|_)?\s*", re.I)
TABLE_LABEL = re.compile(r"^\s*(?:\*\*|_)?(?:Table\s+|Tab\.\s*)" + _NUMBER + r"(?:\*\*|_)?\s*[:.](?:\*\*|_)?\s*", re.I)
# A mention of a figure or table in prose ("see Figure 3", "Fig. 2b", "Table IV"), with the labels' numbers.
MENTION = re.compile(r"\b(?P<kind>Fig(?:ure|\.)?|Tab(?:le|\.)?)\s*~?\s*" + _NUMBER, re.I)
# A page anchor: a whole line, exactly as `page_anchor` writes it (the reader also wants it a paragraph).
PAGE_ANCHOR = re.compile(r'^<a id="page-([1-9]\d*)"></a>\r?$')
# The anchor as the site marks it (`data-page`), for the sanitiser's list of the HTML papervault writes.
ANCHOR_HTML = r'<a id="page-\d+"(?: data-page="\d+")?></a>'
# What CommonMark reads as the start of raw HTML: a tag (`<a `, `</a>`, `<br/>`), a comment or declaration
# (`<!`), a processing instruction (`<?`). An autolink (`<https://...>`) or a comparison (`a < b`) is not.
_HTML_START = re.compile(r"<(?=[A-Za-z][A-Za-z0-9-]*(?:[\s/>]|$)|/[A-Za-z]|[!?])")
# The heading of a paper's reference list ("References", "7 Bibliography", "Works Cited").
REFERENCES_TITLE = re.compile(r"^(?:\d+\.?\s*)?(?:references|bibliography|works cited|literature cited)\b", re.I)
# A line that is only "References" (parsers that do not mark headings write it as a paragraph).
_REFERENCES_LINE = re.compile(r"^(?:\*\*)?(?:references|bibliography)(?:\*\*)?$", re.I)
_IMAGE = re.compile(r"!\[[^\]]*\]\([^)]*\)")
# A link citing a page of a paper's full text, as a note writes it: "[p. 3](paper.md#page-3)".
PAGE_CITATION = re.compile(r"\[p\. [^\]\n]+\]\((?:[^\s()]*/)?paper\.md#page-\d+\)")
_ANCHOR_TEXT = '<a id="page-{}"></a>'
# A line ending as CommonMark (and so markdown-it) reads one; `_read` splits lines with it.
_LINE_END = re.compile(r"\r\n?|\n")


# --- writing ---------------------------------------------------------------------------------------

def page_anchor(page: int) -> str:
    """The anchor line that opens page `page` in `paper.md`; links cite it as `paper.md#page-N`."""
    return _ANCHOR_TEXT.format(int(page))


# A line of a PDF's text that would open a fenced code block (up to three spaces, then ``` or ~~~, after any line
# end CommonMark reads): a fence never closed runs to the end of the document and swallows every page anchor.
_FENCE_START = re.compile(r"(^|\r\n|\r|\n)( {0,3})(`{3}|~{3})")


def escape_html(text: str) -> str:
    """A paper's text made safe as Markdown body text: each `<` that would open HTML is written `&lt;`
    (which every Markdown renders as `<`), so no text of a PDF can write a page anchor or any other markup, and
    a line that would open a code fence starts with a backslash (`\\```` renders as ```), so no text can hide
    the pages after it in a code block; everything else, Markdown included, is left as it is."""
    return _FENCE_START.sub(lambda m: f"{m.group(1)}{m.group(2)}\\{m.group(3)}", _HTML_START.sub("&lt;", text))


_FENCE_LINE = re.compile(r" {0,3}(`{3,}|~{3,})(.*)", re.S)


def escape_unclosed_fence(text: str) -> str:
    """`text` with the opener of a code fence that is never closed written as text (its first character turned
    into a backslash: "```" reads as "\\``", the same length, so every offset and line stays): a fence left open
    runs to the end of the document and hides every page anchor after it. The writer escapes such lines
    (`escape_html`); a `paper.md` written before it did may hold one. A closed fence is left as it is."""
    if "```" not in text and "~~~" not in text:
        return text
    for _ in range(16):     # a line the open fence held may open another when it is undone
        starts = [0] + [m.end() for m in _LINE_END.finditer(text)]
        ends = [m.start() for m in _LINE_END.finditer(text)] + [len(text)]
        opener: tuple[int, str, int] | None = None     # (offset of the fence's first character, char, length)
        for a, b in zip(starts, ends):
            m = _FENCE_LINE.fullmatch(text, a, b)
            if m is None:
                continue
            fence, rest = m.group(1), m.group(2)
            if opener is None:
                if not (fence[0] == "`" and "`" in rest):      # an info string never holds a backtick
                    opener = (m.start(1), fence[0], len(fence))
            elif fence[0] == opener[1] and len(fence) >= opener[2] and not rest.strip(" \t"):
                opener = None
        if opener is None:
            return text
        text = text[:opener[0]] + "\\" + text[opener[0] + 1:]
    return text


def alt_text(text: str) -> str:
    """Text made safe inside an image's `[...]`: one line, backslashes and brackets escaped (read back as is)."""
    return " ".join(str(text or "").split()).replace("\\", "\\\\").replace("[", "\\[").replace("]", "\\]")


def figure_line(filename: str, number: str | None = None, caption: str | None = None) -> str:
    """The image line of a figure: `![Figure N: caption](figures/<file>)`, or `![Figure](…)` for an image the
    parser found no caption for."""
    alt = "Figure" if number is None and caption is None else f"Figure {number}: {alt_text(caption or '')}"
    return f"![{alt}]({FIGURES_DIR}/{filename})"


def table_caption(number: str | None, caption: str) -> str:
    """The paragraph before a table: `Table N: caption`."""
    return " ".join(f"Table {number}: {caption}".split())


def page_link(paper_id: str | None = None, page: int | None = None, *, prefix: str = "papers/",
              relative_to: str | None = None) -> str:
    """`papers/<id>/paper.md#page-N` (no fragment without a page); `prefix` places it relative to the reader
    (a survey in `surveys/<slug>/` links with `../../papers/`). With `relative_to` (a page's path from the
    vault's or site's root, `papers/x/note.md`), the link is relative to that page (`../<id>/paper.md#page-N`,
    `paper.md#page-N` from the paper's own page). Without `paper_id` the link is from a page in the paper's
    own folder (its note, in the vault and on the site): `paper.md#page-N`. Templates call it as the Jinja
    global `page_link` (`papervault.templating`)."""
    if paper_id is None:
        return "paper.md" + (f"#page-{int(page)}" if page else "")
    target = f"{prefix}{paper_id}/paper.md"
    if relative_to is not None:
        target = posixpath.relpath(target, posixpath.dirname(relative_to) or ".")
    return target + (f"#page-{int(page)}" if page else "")


# A link `page_link` writes (to a paper's full text, or to its note), with any number of `../` before it.
_PAGE_LINK = re.compile(r"(?:\.\./)*papers/([A-Za-z0-9][A-Za-z0-9_.-]*)/(paper|note)\.md(#page-\d+)?")


def read_page_link(href: str) -> tuple[str, str, str] | None:
    """(paper id, "paper" or "note", "#page-N" or "") of a whole link as `page_link` writes it (or to a
    paper's note), else None."""
    m = _PAGE_LINK.fullmatch(href.strip())
    return (m.group(1), m.group(2), m.group(3) or "") if m else None


def trailing_page_citation(text: str) -> tuple[str, int | None]:
    """A statement as a note writes it, "text [p. 223](paper.md#page-1)": (the text without the citation, the
    PDF page its link opens); (text, None) when it ends in no page citation."""
    m = _TRAILING_CITATION.search(text)
    if m is None:
        return text.strip(), None
    return text[:m.start()].strip(), int(m.group(1))


_TRAILING_CITATION = re.compile(r"\s*\[p\. [^\]\n]+\]\((?:[^\s()]*/)?paper\.md#page-(\d+)\)\s*$")


def heading_offsets(text: str) -> list[int]:
    """The character offset in `text` of every heading line `read` finds, in order."""
    starts = [0] + [m.end() for m in _LINE_END.finditer(text)]
    return [starts[s.start] for s in read(text).sections if s.start < len(starts)]


# --- rewriting ---------------------------------------------------------------------------------------

def without_anchors(text: str) -> str:
    """`paper.md` with its page anchors taken out (a quotation may run across a page break)."""
    return mark_pages(text, lambda page: "")


def mark_pages(text: str, marker) -> str:
    """`paper.md` with each page anchor (as the reader finds them) replaced by `marker(page)` (the site adds a
    link to the PDF's page)."""
    if '<a id="page-' not in text:
        return text          # no anchor to find: the text need not be parsed (a reference line, a quotation)
    out, at = [], 0
    for page, start in read(text).anchors:
        out += [text[at:start], marker(page)]
        at = start + len(page_anchor(page))
    return "".join(out) + text[at:]


def without_page_citations(text: str) -> str:
    """`text` without the page links a note writes (`[p. 3](paper.md#page-3)`)."""
    return PAGE_CITATION.sub("", text)


def without_images(text: str) -> str:
    """`text` with its inline images (`![alt](src)`) taken out."""
    return _IMAGE.sub("", text)


def inline_plain(text: str) -> str:
    """Markdown inline markup taken out of `text` (images dropped, links to their text, emphasis and code
    marks removed), so a sentence of `paper.md` reads as plain text."""
    text = _IMAGE.sub("", text)
    text = re.sub(r"\[([^\]]+)\]\([^)]*\)", r"\1", text)
    text = re.sub(r"(\*\*|__|`)", "", text)
    text = re.sub(r"(?<!\w)[*_](\S[^*_]*?)[*_](?!\w)", r"\1", text)
    return text


def mentions(text: str) -> list[tuple[str, str]]:
    """The figures and tables `text` mentions, in order: `[("figure", "3"), ("table", "IV")]`."""
    return [("figure" if m.group("kind").lower().startswith("fig") else "table", m.group("num"))
            for m in MENTION.finditer(text)]


def is_references(title: str) -> bool:
    """Whether a section title is the paper's reference list ("References", "7 Bibliography")."""
    return bool(REFERENCES_TITLE.match(title.strip()))


# --- reading ---------------------------------------------------------------------------------------

@dataclass
class Section:
    title: str
    level: int
    path: str               # "3 Design > 3.1 Leases"
    page: int | None        # the page open where the heading is
    start: int              # line index of the heading
    end: int                # line index after the section (its subsections included)


@dataclass
class FigureRef:
    number: str             # "3", "" when the image has no label
    label: str              # the alt text as written (escapes kept): "Figure 3: Latency of \\[ms\\]"
    caption: str            # the alt text without its label, as written (escapes kept: what the file holds)
    page: int | None
    src: str                # relative to the paper folder: "figures/fig-3.png"
    line: int


@dataclass
class TableRef:
    number: str
    caption: str            # without its label
    page: int | None
    rows: list[list[str]] = field(default_factory=list)   # header first
    line: int = 0           # line index of the table
    end: int = 0            # line index after the table
    caption_line: int | None = None    # line index of its caption paragraph
    html: bool = False      # written as an HTML table (its cells merge)


@dataclass
class Block:
    """One block of `paper.md` in reading order: a heading, a run of prose lines (paragraphs, list items,
    code: anything that is not structure), a figure's image line, or a table with its caption."""

    kind: str               # "heading" | "text" | "figure" | "table"
    start: int              # line index of its first line
    end: int                # line index after its last line
    lines: list[str]        # its non-blank lines, page anchors taken out and stripped
    pages: list[int | None] # the page open at each of `lines`
    numbers: list[int]      # the line index of each of `lines`
    section: Section | None = None      # the innermost section it is in; for a heading the one it opens
    level: int = 0          # a heading's level (the paper's title is the first level-1 heading)
    title: str = ""         # a heading's text, markup taken out
    figure: FigureRef | None = None
    table: TableRef | None = None

    @property
    def page_start(self) -> int | None:
        return self.pages[0] if self.pages else None

    @property
    def page_end(self) -> int | None:
        return self.pages[-1] if self.pages else None

    @property
    def text(self) -> str:
        """A text block's lines joined with single spaces."""
        return " ".join(self.lines)


@dataclass
class PaperMd:
    """The structure of one `paper.md`: its title, pages, sections, figures and tables, in reading order."""

    text: str
    title: str = ""
    anchors: list[tuple[int, int]] = field(default_factory=list)     # (page, character offset of its anchor)
    sections: list[Section] = field(default_factory=list)
    figures: list[FigureRef] = field(default_factory=list)
    tables: list[TableRef] = field(default_factory=list)
    blocks: list[Block] = field(default_factory=list)
    references_start: int | None = None   # character offset where the reference list's entries begin

    @property
    def pages(self) -> list[int]:
        return list(dict.fromkeys(p for p, _ in self.anchors))

    def references_text(self) -> str:
        """The raw text of the paper's reference list (after its last references heading, to the end), or ""."""
        return self.text[self.references_start:] if self.references_start is not None else ""

    def section_at(self, line: int) -> Section | None:
        """The innermost section open at line index `line` (None before the first section heading)."""
        found = None
        for s in self.sections:
            if s.start > line:
                break
            if s.end > line:
                found = s
        return found

    def page_spans(self) -> dict[int, tuple[int, int]]:
        """Character span of every page, from its anchor to the next page's (a repeated page joins its spans)."""
        spans: dict[int, tuple[int, int]] = {}
        for k, (page, start) in enumerate(self.anchors):
            end = self.anchors[k + 1][1] if k + 1 < len(self.anchors) else len(self.text)
            spans[page] = (spans[page][0], end) if page in spans else (start, end)
        return spans

    def page_at(self, offset: int) -> int | None:
        """The page open at character `offset` (the last anchor before it)."""
        page = None
        for p, start in self.anchors:
            if start >= offset:
                break
            page = p
        return page


@lru_cache(maxsize=1)
def _parser():
    from markdown_it import MarkdownIt  # deferred: ~20 ms, and the MCP server loads this module at start-up

    # html on only to see the page anchors as tokens; nothing read here is rendered.
    return MarkdownIt("commonmark", {"html": True}).enable("table")


def _plain(inline) -> str:
    """The text of an inline token without its HTML (page anchors) and markup."""
    out = []
    for c in inline.children or []:
        if c.type in ("text", "code_inline"):
            out.append(c.content)
        elif c.type == "image":
            out.append(c.content)
        elif c.type in ("softbreak", "hardbreak"):
            out.append(" ")
    return "".join(out)


class _Cells(HTMLParser):
    """The rows of an HTML table as text (tags dropped; nothing is rendered)."""

    def __init__(self):
        super().__init__(convert_charrefs=True)
        self.rows: list[list[str]] = []
        self._cell: list[str] | None = None

    def handle_starttag(self, tag, attrs):
        if tag == "tr":
            self.rows.append([])
        elif tag in ("td", "th"):
            if not self.rows:
                self.rows.append([])
            self._cell = []

    def handle_endtag(self, tag):
        if tag in ("td", "th") and self._cell is not None:
            self.rows[-1].append(" ".join("".join(self._cell).split()))
            self._cell = None

    def handle_data(self, data):
        if self._cell is not None:
            self._cell.append(data)


def _html_rows(html: str) -> list[list[str]]:
    parser = _Cells()
    parser.feed(html)
    parser.close()
    return [r for r in parser.rows if r]


def _raw_alt(source_line: str, src: str) -> str:
    """An image's alt text as written (escapes kept: `\\[1,2\\]`), so quotations of it match the file."""
    if not src:
        return ""
    end = source_line.find("](" + src)
    start = source_line.rfind("![", 0, end) if end >= 0 else -1
    return source_line[start + 2:end].strip() if start >= 0 else ""


def split_lines(text: str) -> list[str]:
    """`text`'s lines as the reader numbers them (`Section.start`, `Block.numbers`): a line ends at "\r\n", "\r"
    or "\n" only, as in markdown-it (not `str.splitlines`, which also ends one at a form feed or U+2028)."""
    return _LINE_END.split(text)


def read(text: str) -> PaperMd:
    """Read a `paper.md` (any Markdown) into its structure. The result is shared: treat it as read-only."""
    return _read(text)


# long: one pass over markdown-it's token stream, a state machine (page, section, figure, table) whose state
# every token reads
@lru_cache(maxsize=32)
def _read(text: str) -> PaperMd:
    # the stages of a survey read the same papers many times over (~0.1 s for a 50 kB paper each time)
    doc = PaperMd(text=text)
    # Lines exactly as markdown-it numbers them (its token maps): it ends a line at "\r\n", "\r" or "\n" and
    # at nothing else (a form feed, "\v", U+0085, U+2028 or U+2029 from a PDF's text is a character of its
    # line). Offsets stay those of `text` as written.
    line_starts = [0]
    for m in _LINE_END.finditer(text):
        line_starts.append(m.end())
    lines = _LINE_END.split(text)
    tokens = _parser().parse(escape_unclosed_fence(text))
    page: int | None = None
    stack: list[tuple[int, str]] = []
    last_para: tuple[str, int, list[int]] | None = None   # (text, index in tokens, map) of the latest paragraph
    pending_table_caption: tuple[str, str] | None = None
    headings: dict[int, tuple[int, str, Section | None]] = {}   # line -> (level, title, section; None: the title)
    content: dict[int, list] = {}           # line of a paragraph -> what it holds (a figure line holds one image)
    in_paragraph = in_anchor = False
    anchor_lines: set[int] = set()

    def table_caption_of(i: int) -> tuple[tuple[str, str] | None, int | None]:
        # the caption is the paragraph right before the table (only the close of that paragraph between)
        if last_para is not None and last_para[1] + 3 == i and pending_table_caption:
            return pending_table_caption, last_para[2][0]
        return None, None

    i = 0
    while i < len(tokens):
        t = tokens[i]
        if t.type == "inline" and t.map is not None:
            line = t.map[0]
            for c in t.children or []:
                if c.type in ("softbreak", "hardbreak"):
                    line += 1
                elif in_anchor:
                    continue
                elif c.type == "image":
                    src = str(c.attrGet("src") or "")
                    plain = c.content.strip()
                    num = FIGURE_LABEL.match(plain)
                    ref = FigureRef(number=num.group("num") if num else "",
                                    label=_raw_alt(lines[line] if line < len(lines) else "", src) or plain,
                                    caption=plain[num.end():].strip() if num else plain, page=page, src=src, line=line)
                    doc.figures.append(ref)
                    if in_paragraph:
                        content.setdefault(line, []).append(ref)
                elif in_paragraph and not (c.type == "text" and not c.content.strip()):
                    content.setdefault(line, []).append(None)
        if t.type == "html_block" and t.content.lstrip().lower().startswith("<table"):
            # a table whose cells merge is written as HTML
            cap, cap_line = table_caption_of(i)
            rows = _html_rows(t.content)
            doc.tables.append(TableRef(number=cap[0] if cap else "", caption=cap[1] if cap else "", page=page,
                                       rows=rows, line=t.map[0] if t.map else 0, end=t.map[1] if t.map else 0,
                                       caption_line=cap_line, html=True))
        if t.type == "heading_open" and t.markup.startswith("#") and t.map is not None:
            level = int(t.tag[1])
            name = _plain(tokens[i + 1]).strip().strip("*").strip()
            if level == 1 and not doc.title:
                doc.title = name            # the paper's title, not a section
                headings[t.map[0]] = (level, name, None)
            else:
                while stack and stack[-1][0] >= level:
                    stack.pop()
                stack.append((level, name))
                doc.sections.append(Section(name, level, " > ".join(n for _, n in stack), page, t.map[0], len(lines)))
                headings[t.map[0]] = (level, name, doc.sections[-1])
        if t.type == "paragraph_open":
            # a page anchor is a paragraph of one line that is exactly the anchor, at the start of the line
            m = PAGE_ANCHOR.match(lines[t.map[0]]) if t.map and t.map[1] == t.map[0] + 1 else None
            if m:
                page = int(m.group(1))
                doc.anchors.append((page, line_starts[t.map[0]]))
                anchor_lines.add(t.map[0])
            in_anchor = bool(m)
            para = _plain(tokens[i + 1]).strip()
            last_para = (para, i, t.map or [0, 0])
            m = TABLE_LABEL.match(para)
            pending_table_caption = (m.group("num"), para[m.end():].strip()) if m else None
            in_paragraph = True
        if t.type == "paragraph_close":
            in_paragraph = in_anchor = False
        if t.type == "table_open":
            rows: list[list[str]] = []
            j = i + 1
            while tokens[j].type != "table_close":
                if tokens[j].type == "tr_open":
                    rows.append([])
                elif tokens[j].type == "inline" and rows:
                    rows[-1].append(_plain(tokens[j]).strip())
                j += 1
            cap, cap_line = table_caption_of(i)
            doc.tables.append(TableRef(number=cap[0] if cap else "", caption=cap[1] if cap else "", page=page,
                                       rows=rows, line=t.map[0] if t.map else 0, end=t.map[1] if t.map else 0,
                                       caption_line=cap_line))
            i = j
        i += 1
    # a section ends where the next heading of the same or a higher level starts
    for k, s in enumerate(doc.sections):
        for nxt in doc.sections[k + 1:]:
            if nxt.level <= s.level:
                s.end = nxt.start
                break
    _blocks(doc, lines, line_starts, headings, content, anchor_lines)
    return doc


def _blocks(doc: PaperMd, lines: list[str], line_starts: list[int],
            headings: dict[int, tuple[int, str, Section | None]], content: dict[int, list],
            anchor_lines: set[int]) -> None:
    """The document as blocks, and where its reference list starts."""
    page_of_line: list[int | None] = []
    anchors = sorted((bisect_right(line_starts, off) - 1, p) for p, off in doc.anchors)
    k, page = 0, None
    for n in range(len(lines)):
        while k < len(anchors) and anchors[k][0] <= n:
            page = anchors[k][1]
            k += 1
        page_of_line.append(page)
    clean = ["" if n in anchor_lines else ln.strip() for n, ln in enumerate(lines)]
    tables = {(t.caption_line if t.caption_line is not None else t.line): t for t in doc.tables if t.end > t.line}
    figures = {n: held[0] for n, held in content.items() if len(held) == 1 and held[0] is not None}
    run: list[int] = []

    def block(kind: str, start: int, end: int, numbers: list[int] | None = None, **kw) -> Block:
        numbers = [n for n in (numbers if numbers is not None else range(start, end)) if clean[n]]
        b = Block(kind, start, end, [clean[n] for n in numbers], [page_of_line[n] for n in numbers], numbers, **kw)
        if b.section is None and kind != "heading":
            b.section = doc.section_at(start)
        doc.blocks.append(b)
        return b

    def flush() -> None:
        if run:
            block("text", run[0], run[-1] + 1, list(run))
            run.clear()

    fallback_refs: int | None = None
    n = 0
    while n < len(lines):
        if n in tables:
            flush()
            t = tables[n]
            block("table", n, t.end, table=t)
            n = max(t.end, n + 1)
            continue
        if n in headings:
            flush()
            level, title, section = headings[n]
            block("heading", n, n + 1, section=section, level=level, title=title)
        elif n in figures:
            flush()
            block("figure", n, n + 1, figure=figures[n])
        elif not clean[n]:
            flush()
        else:
            if _REFERENCES_LINE.match(clean[n]):
                fallback_refs = n
            run.append(n)
        n += 1
    flush()
    refs = [s for s in doc.sections if is_references(s.title)]
    at = refs[-1].start if refs else fallback_refs
    if at is not None:
        doc.references_start = line_starts[at + 1] if at + 1 < len(line_starts) else len(doc.text)


def figure_sources(text: str) -> list[str]:
    """The figure files a `paper.md` embeds (`figures/...`), each once, in reading order."""
    return list(dict.fromkeys(f.src for f in read(text).figures if f.src.startswith(FIGURES_DIR + "/")))
