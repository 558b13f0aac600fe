"""The first pass over a PDF: what makes a paper searchable in milliseconds a page, before its full parse.

It reads the PDF's text layer as it is (PyMuPDF's plain text, page by page, under the same page anchors as the
full parse) and the paper's identity from its first pages' layout (`read_front`, without OCR, but for the first
page of a scan, which names the paper: seconds, once a scanned paper). The layout parse,
headings, figures, tables, text repair and OCR are the full parse's (`papervault.parse.pdf.parse_pdf`), run
behind by the arrival worker (`papervault.app.arrival`), which replaces this text with its own. A page with no
text layer (a scan) is empty here and named in `pending_pages` until its OCR is done.
"""

from __future__ import annotations

import contextlib
import fcntl
import json
import os
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Iterator

from papervault.config import ParseSettings
from papervault.errors import PapervaultError, ParseError
from papervault.models import ParsedPaper
from papervault.parse.text import clean, hyphenated_words, join_lines
from papervault.parse.version import PARSER_VERSION
from papervault.vault.paper import alt_text, escape_html, page_anchor
from papervault.workerlock import holder

FIRST_PASS = f"first-pass/{PARSER_VERSION}"   # a paper's `parser` until its full parse replaces the text
FIRST_PASS_ABSTRACT = "first-pass"   # the provenance of an abstract the first pass read (the full parse replaces it)
MIN_PAGE_CHARS = 40      # a page with less text than this is taken to need OCR (a scan)
HEADER_PAGES = 2         # pages whose layout the identity is read from
STATE_WAIT_TRIES = 20   # `running` asks the worker's state file again this many times, 0.1 s apart
_FIRST_PASS = re.compile(r"^parser:[ \t]*['\"]?first-pass/", re.M)
_PAGE_ANCHOR = re.compile(r'^<a id="page-([1-9]\d*)"></a>\r?$', re.M)   # as papervault.vault.paper.PAGE_ANCHOR
# a section's number on a line of its own: "9." above "REFERENCES", "2.1.2" above "Enter Paxos"
_SECTION_NUMBER = re.compile(r"^(?:\d{1,2}(?:\.\d{1,2}){0,3}\.?|[IVX]{1,5}\.?|§\s*\d{1,2}\.?)$")
# a numbered heading: "2.1 Replication", "IV. EVALUATION", "A. Memory corruption" (a subsection under roman numerals)
_NUMBERED_HEADING = re.compile(r"^(\d{1,2}(?:\.\d{1,2}){0,3}\.?|[IVX]{1,5}\.|[A-H]\.)\s+([A-Z][^.!?]*)$")
_ROMAN = re.compile(r"[IVX]{1,5}")
_CHAPTER = re.compile(r"^(?:CHAPTER|Chapter)\s+(\d{1,2})$")       # "CHAPTER 2" over "Literature Review" (a thesis)
_TOC_LINE = re.compile(r"(?:\.\s*){3,}\s*(?:\d{1,4}|[ivxlc]{1,7})$")   # an entry's dot leader up to its page
_ABSTRACT_HEADING = re.compile(r"^#{2,6} (?:\d{1,2}\.? )?abstract$", re.I)
ABSTRACT_BLOCKS = 6      # an "Abstract" heading stays one when a heading follows it within this many blocks
_HEADING_LIKE = re.compile(r"^(\s{0,3})(#{1,6}\s|[-+*]\s|\d+[.)]\s|>|\|)", re.M)
TABLE_SPREAD = 2.0       # a block is a table's when its width per character of its longest line is this many times
TABLE_RUN = 2            # the paper's usual (its cells stand side by side), and a table is at least this many blocks
_SENTENCE_END = re.compile(r"[.!?]$")


def is_first_pass(parser: str | None) -> bool:
    """Whether a paper's text is still its first pass (its full parse has not replaced it yet)."""
    return bool(parser) and str(parser).startswith("first-pass/")


def _para(text: str, hyphenated: set[str] | frozenset[str] = frozenset()) -> str:
    """A block of a page's plain text as one Markdown paragraph, escaped like the full parse's text, its lines
    joined as the full parse joins them: ligatures expanded, a line-break hyphen undone ("al-" + "gorithmic")
    unless the word is written with its hyphen elsewhere on the page (`hyphenated`). A passage reads, is
    found and is embedded as its full parse will be, not as "al- gorithmic"."""
    text = clean(text)                          # (a U+2010 hyphen is "-" after it)
    if "-\n" in text:                           # the common block has no broken word: one split, no regex
        text = join_lines(text.split("\n"), hyphenated)
    text = " ".join(text.split())
    return _HEADING_LIKE.sub(lambda m: f"{m.group(1)}\\{m.group(2)}", escape_html(text))


@dataclass
class _Outline:
    """What the first pass knows of a paper's sections while it reads its blocks, as the full parse judges them:
    whether the page is a table of contents (its entries are no headings) and whether the paper numbers its
    sections in roman numerals (then "A." opens a subsection)."""
    toc: bool = False
    roman: bool = False


_KNOWN_SECTIONS: set[str] | None = None   # the full parse's known section names, read on first use


def _toc_page(texts: list[str]) -> bool:
    """A table of contents, as the full parse tells one: a "Contents" title, or lines with dot leaders up to a
    page number."""
    if any(t.strip().lower() in ("contents", "table of contents") for t in texts):
        return True
    return sum(1 for t in texts for ln in t.split("\n") if ". ." in ln and _TOC_LINE.search(ln.strip())) >= 3


def _heading(line: str, outline: _Outline | None = None, alone: bool = False) -> tuple[str, bool] | None:
    """`line` as the Markdown heading the full parse writes for it, and whether it is numbered in roman numerals;
    None when it is no heading. A heading is a section's number and name ("1. INTRODUCTION", "3.2 Related Work",
    "IV. EVALUATION"), a known section's name ("Abstract", "Keywords") or, over more lines of its block
    (`alone` false), a name in capitals ("RELATED WORK"): short, no sentence's end. Written as the full parse
    writes it, the number without its dot and one level deeper for each of its parts ("### 2.1 Replication"),
    so that a section's path, and the text its passages are embedded with, are the full parse's."""
    global _KNOWN_SECTIONS
    if _KNOWN_SECTIONS is None:
        from papervault.parse.structure import KNOWN_SECTIONS   # deferred: the layout parser's module

        _KNOWN_SECTIONS = KNOWN_SECTIONS
    s = " ".join(clean(line).split())
    m = _NUMBERED_HEADING.match(s)
    name = m.group(2) if m else s
    if not s or len(s) > 80 or s[-1] in ".,;:-" or name.lower().startswith(("references", "bibliography")) \
            or (outline is not None and outline.toc):
        return None                  # (the reference list's title: `_block` makes it the heading it is)
    if m:
        num = m.group(1).rstrip(".")
        roman = bool(_ROMAN.fullmatch(num))
        lettered = num.isalpha() and not roman
        words = [w for w in name.split() if len(w) > 3]
        if (lettered and not (outline is not None and outline.roman)) or len(name.split()) > 8 \
                or sum(w[0].isupper() for w in words) * 2 < len(words) or re.search(r"\d{3,}", name) \
                or (num.isdigit() and int(num) > 30) or not any(len(w) > 2 and w.isalpha() for w in name.split()):
            return None
        depth = 1 if roman else 2 if lettered else num.count(".") + 1
        return f"{'#' * min(6, depth + 1)} {escape_html(f'{num} {name}')}", roman
    if s.lower().rstrip(".:") in _KNOWN_SECTIONS:
        return f"## {escape_html(s.rstrip('.:'))}", False
    letters = [c for c in s if c.isalpha()]
    if not alone and s[0].isalpha() and len(letters) >= 4 and all(c.isupper() for c in letters) \
            and len(s.split()) <= 6:                # (a name: not a reference's label, "[CDCV81]")
        return f"## {escape_html(s)}", False
    return None


def _block(text: str, references_heading: re.Pattern, hyphenated: set[str] | frozenset[str] = frozenset(),
           outline: _Outline | None = None) -> list[str]:
    """A text block as Markdown paragraphs, after the section heading that opens it or that it is (`_heading`;
    `outline`: what is known of the paper's sections so far). A line of it that is a reference list's title
    ("REFERENCES", "9." then "REFERENCES", "§9" then "References"; not in lower case, as running text is) becomes
    the `## References` heading the full parse writes there, the block cut around it (the entries often share the
    title's block), so the reference list is read from the first pass too (citations)."""
    head, _, rest = "\n".join(ln for ln in text.split("\n") if ln.strip()).partition("\n")
    chapter = _CHAPTER.match(head.strip())
    if (chapter or _SECTION_NUMBER.match(head.strip())) and rest.strip():   # "1." over "INTRODUCTION"
        second, _, after = rest.partition("\n")
        joined = f"{chapter.group(1) if chapter else head.strip()} {second.strip()}"
        if _heading(joined, outline, alone=not after.strip()):
            head, rest = joined, after
    made = _heading(head, outline, alone=not rest.strip())
    if made and rest.strip() and head.isupper():
        # a heading in capitals goes on over its next line in capitals ("III. CURRENTLY USED PROTECTIONS AND
        # REAL WORLD" over "EXPLOITS"), as the full parse joins it
        second, _, after = rest.partition("\n")
        longer = _heading(f"{head} {second}", outline, alone=not after.strip()) if second.isupper() else None
        if longer:
            made, rest = longer, after
    if made:
        # "1. INTRODUCTION" over the section's first lines, or on a line of its own: a heading, as the full parse
        # makes it, so that the section's paragraphs are chunked apart from the last section's (and the heading
        # is no part of the sentences that cite a paper); escaped as any text of a PDF
        if outline is not None and made[1]:
            outline.roman = True
        return [made[0]] + (_block(rest, references_heading, hyphenated, outline) if rest.strip() else [])
    low = text.lower()
    if "references" not in low and "bibliography" not in low and "cited" not in low:
        return [_para(text, hyphenated)]
    lines = text.split("\n")
    for i, line in enumerate(lines):
        s = line.strip()
        if s == s.lower():
            continue
        if i and _SECTION_NUMBER.match(lines[i - 1].strip()) and references_heading.match(
                f"{lines[i - 1].strip()} {s}"):
            before, after = lines[:i - 1], lines[i + 1:]
        elif references_heading.match(s):
            before, after = lines[:i], lines[i + 1:]
        else:
            continue
        return ([_para("\n".join(before), hyphenated)] if "".join(before).strip() else []) + ["## References"] + (
            [_para("\n".join(after), hyphenated)] if "".join(after).strip() else [])
    return [_para(text, hyphenated)]


def _abstract_kept(out: list[str]) -> list[str]:
    """The Markdown lines of a first pass, an "Abstract" heading left a paragraph when no heading follows it within
    `ABSTRACT_BLOCKS` blocks: the chunker leaves an abstract's section to the paper row, and a paper whose next
    heading the text layer does not show (one the full parse finds by its font) would lose its whole body."""
    for i, line in enumerate(out):
        if line.startswith("#") and _ABSTRACT_HEADING.match(line):
            after = [x for x in out[i + 1:] if not _PAGE_ANCHOR.match(x)][:ABSTRACT_BLOCKS]
            if not any(x.startswith("#") for x in after):
                out[i] = line.lstrip("#").strip()
    return out


def _spread(block) -> float:
    """A block's width per character of its longest line (points): a paragraph's lines fill its width, a table's
    cells stand apart in it."""
    lines = [ln.strip() for ln in block[4].split("\n") if ln.strip()]
    return (block[2] - block[0]) / max(1, max(len(ln) for ln in lines)) if len(lines) >= 2 else 0.0


def _usual_spread(pages: list[list]) -> float:
    """The paper's usual spread (`_spread`) of a block of three lines or more: that of its paragraphs."""
    spreads = sorted(_spread(b) for blocks in pages for b in blocks if b[4].strip().count("\n") >= 2)
    return spreads[len(spreads) // 2] if spreads else 0.0


def _tabular(block, usual: float) -> bool:
    """Whether a text block is a table's (a row's cells, side by side): lines standing apart in its width
    (`TABLE_SPREAD` times the paper's usual spread) and none of them a sentence's end."""
    return bool(usual) and _spread(block) > TABLE_SPREAD * usual and not any(
        _SENTENCE_END.search(ln.strip()) for ln in block[4].split("\n"))


def _table(texts: list[str], hyphenated: set[str] | frozenset[str]) -> list[str]:
    """A run of a table's blocks as a Markdown table of one column, a block a row, as the full parse writes a table
    (which a citing sentence is never read from): its text stays searchable, a paper's citations in it are no
    sentences that cite."""
    rows = [_para(t, hyphenated).replace("|", "\\|") for t in texts]
    return ["\n".join([f"| {rows[0]} |", "| --- |"] + [f"| {r} |" for r in rows[1:]])]


def _runs(texts: list[str], tables: list[bool]) -> list[tuple[bool, list[str]]]:
    """A page's blocks in runs, (True, blocks) for a run of `TABLE_RUN` table's blocks or more (`tables`), else
    (False, blocks): read as text."""
    runs: list[tuple[bool, list[str]]] = []
    i = 0
    while i < len(texts):
        j = i
        while j < len(tables) and tables[j]:
            j += 1
        if j - i >= TABLE_RUN:
            runs.append((True, texts[i:j]))
            i = j
            continue
        if runs and not runs[-1][0]:
            runs[-1][1].append(texts[i])
        else:
            runs.append((False, [texts[i]]))
        i += 1
    return runs


def _chapters(texts: list[str]) -> list[str]:
    """A page's blocks, a thesis's "CHAPTER 2" joined to the block of its name below it ("Literature Review"),
    as the full parse joins them: one heading, "2 Literature Review"."""
    out: list[str] = []
    for t in texts:
        if out and "\n" not in t.strip() and _CHAPTER.match(out[-1].strip()):
            out[-1] = f"{out[-1].strip()}\n{t.strip()}"
        else:
            out.append(t)
    return out


def first_pass(path: Path | str, settings: ParseSettings | None = None,
               cache_dir: Path | None = None) -> ParsedPaper:
    """The first pass of the PDF at `path` (see the module); raises `ParseError` when it cannot be read. A page it
    reads by OCR is kept in `cache_dir` (the parse cache) for the full parse (`ocr.kept_pages`)."""
    from papervault.parse.document import file_sha256, open_pdf  # deferred: PyMuPDF, not for those who ask
    from papervault.parse.pdf import front_abstract, front_inputs, read_header   # where a paper stands (below)
    from papervault.parse.references import REFERENCES_HEADING

    settings = settings or ParseSettings()
    path = Path(path)

    def front(s: ParseSettings, pages: int):
        args = front_inputs(path, s, pages=pages)
        blocks = args.pop("pages")
        head = read_header(blocks, args.pop("heights"), **args)
        return head, (front_abstract(blocks, head.title_page) if head.title else "")

    try:
        head, abstract = front(settings.model_copy(update={"ocr": False}), HEADER_PAGES)
        if not head.title and settings.ocr:
            # A scan: its first page read by OCR (seconds, once a paper) names it as its full parse will, so
            # the paper keeps the id a one-pass `add` gives it; the other pages wait for the worker.
            from papervault.parse import ocr  # deferred: with the parser

            with ocr.kept_pages(cache_dir, file_sha256(path)):
                head, abstract = front(settings, 1)
    except ParseError:
        raise
    except Exception as exc:  # noqa: BLE001 - the full parse reads it again and says why it cannot
        raise ParseError(str(path), f"could not read its first pages ({type(exc).__name__})",
                         fix="the full parse will try again; check the PDF") from None
    doc = open_pdf(path, max_pages=settings.max_pages)
    out = [f"# {escape_html(alt_text(head.title)) if head.title else 'Untitled'}"]
    pending: list[int] = []
    outline = _Outline()
    try:
        n = doc.page_count
        pages: list[list | None] = []
        for pno in range(1, n + 1):
            try:
                blocks = doc[pno - 1].get_text("blocks", sort=False)
            except Exception:  # noqa: BLE001 - one unreadable page waits for the full parse
                pages.append(None)
                continue
            pages.append([b for b in blocks if len(b) > 6 and b[6] == 0 and b[4].strip()])
        usual = _usual_spread([p for p in pages if p])
        refs, seen = False, 0
        for pno, blocks in enumerate(pages, 1):
            out.append(page_anchor(pno))
            if blocks is None:
                pending.append(pno)
                continue
            texts = [b[4] for b in blocks]
            if sum(len(t) for t in texts) < MIN_PAGE_CHARS:
                pending.append(pno)
            hyphenated = hyphenated_words(texts) if any("-\n" in t for t in texts) else frozenset()
            outline.toc = _toc_page(texts)
            refs = refs or "## References" in out[seen:]      # (what the pages before this one wrote)
            seen = len(out)
            # runs of a table's blocks, each a table (none in the reference list, whose entries are read as text)
            tables = [False] * len(blocks) if refs else [_tabular(b, usual) for b in blocks]
            for is_table, run in _runs(texts, tables):
                if is_table:
                    out.extend(_table(run, hyphenated))
                    continue
                for t in _chapters(run):
                    out.extend(_block(t, REFERENCES_HEADING, hyphenated, outline))
    finally:
        doc.close()
    out = _abstract_kept(out)
    prov = dict(head.provenance) | ({"abstract": FIRST_PASS_ABSTRACT} if abstract else {})
    paper = ParsedPaper(markdown="\n\n".join(out) + "\n", pages=n, title=head.title[:300], authors=head.authors,
                        year=head.year, abstract=abstract, doi=head.doi, arxiv=head.arxiv, venue=head.venue,
                        keywords=head.keywords, provenance=prov, parser=FIRST_PASS, sha256=file_sha256(path))
    paper.warnings = [f"pages waiting for OCR: {pending}"] if pending else []
    paper.pending_pages = pending    # type: ignore[attr-defined]  (read by the arrival worker's status)
    return paper


def first_pass_many(paths: list[str], settings: ParseSettings, cache_dir: Path | None = None) -> dict:
    """{path: ParsedPaper | ParseError}, in this process (the first pass is too cheap for a worker pool)."""
    out: dict = {}
    for p in dict.fromkeys(paths):
        if not Path(p).is_file():
            out[p] = ParseError(p, "file not found", fix="check the path")
            continue
        try:
            out[p] = first_pass(p, settings, cache_dir)
        except ParseError as exc:
            out[p] = exc
    return out


# --- where each paper stands: read by `status`, MCP and the arrival worker (papervault.app.arrival) -----------

def lock_path(ws) -> Path:
    return ws.state_dir / "arrival.lock"


def state_path(ws) -> Path:
    return ws.state_dir / "arrival.json"


def adding_path(ws) -> Path:
    return ws.state_dir / "adding.lock"


@contextlib.contextmanager
def adding(ws) -> Iterator[None]:
    """Held (shared) by an add that reads by first pass, for as long as it runs: the arrival worker it starts at
    its first commit parses ahead of it and writes only once it has returned (it would otherwise take the write
    lock between the add's import and its index step). Released by the kernel if the add dies."""
    ws.state_dir.mkdir(parents=True, exist_ok=True)
    fd = os.open(adding_path(ws), os.O_RDWR | os.O_CREAT, 0o644)
    try:
        fcntl.flock(fd, fcntl.LOCK_SH)
        yield
    finally:
        os.close(fd)


def add_running(ws) -> bool:
    """Whether an add reading by first pass is running on this workspace (it holds `adding`)."""
    try:
        fd = os.open(adding_path(ws), os.O_RDONLY)
    except OSError:
        return False
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        return False
    except BlockingIOError:
        return True
    finally:
        os.close(fd)


def writing(ws) -> bool:
    """Whether the arrival worker runs and will still write full parses (it has not begun to close: it then
    waits for the fill to end, so a fill must not wait for it)."""
    return bool(running(ws)) and state(ws).get("phase") not in ("closing", "finished")


def in_hand(ws) -> list[str]:
    """The papers the arrival worker is writing or indexing now: their index rows are still the first pass's
    until it has indexed them (a fill leaves them, as it leaves the papers that wait)."""
    info = state(ws)
    if info.get("phase") not in ("write", "index") or not running(ws):
        return []
    return [str(p) for p in info.get("current") or []]


def state(ws) -> dict:
    try:
        return json.loads(state_path(ws).read_text())
    except (OSError, ValueError):
        return {}


def write_state(ws, info: dict) -> None:
    tmp = state_path(ws).with_suffix(".tmp")
    tmp.write_text(json.dumps(info))
    os.replace(tmp, state_path(ws))


def waiting(ws, ids: list[str] | None = None) -> list[str]:
    """The papers (of `ids`, None: of the vault) whose text is still their first pass (their full parse has not
    replaced it), by id."""
    vault = ws.vault
    return [pid for pid in (vault.paper_ids() if ids is None else dict.fromkeys(ids)) if _waits(vault, pid)]


def _waits(vault, pid: str) -> bool:
    """Whether the note of `pid` says `parser: first-pass/...` (read from its front matter only)."""
    try:
        head = vault.safe_path(vault.note_path(pid)).read_text(encoding="utf-8")[:8192]
    except (OSError, ValueError, PapervaultError):
        return False
    return bool(_FIRST_PASS.search(head.split("\n---", 1)[0]))


def pending_pages(text: str) -> list[int]:
    """The pages of a first pass's `paper.md` that wait for OCR: those it found (almost) no text layer on, as
    `first_pass` named them (`pending_pages`), read back from the page anchors it wrote."""
    marks = list(_PAGE_ANCHOR.finditer(text))
    out = []
    for i, m in enumerate(marks):
        end = marks[i + 1].start() if i + 1 < len(marks) else len(text)
        if len(text[m.end():end].strip()) < MIN_PAGE_CHARS:
            out.append(int(m.group(1)))
    return out


def unfinished(ws, ids: list[str]) -> dict[str, dict]:
    """Of the papers `ids`, those still read by their first pass: {id: {"pending_pages": [...]}} (the pages that
    wait for OCR), in the order of `ids`. Read by the survey, `locate`, the site and MCP."""
    out: dict[str, dict] = {}
    for pid in ids:
        if pid not in out and _waits(ws.vault, pid):
            try:
                text = ws.vault.read_fulltext(pid)
            except (OSError, ValueError, PapervaultError):
                text = ""
            out[pid] = {"pending_pages": pending_pages(text)}
    return out


def pages_words(pages: list[int], most: int = 8) -> str:
    """"pages 3, 5 and 9" (at most `most` named, then "and N more")."""
    if not pages:
        return ""
    named = [str(p) for p in pages[:most]]
    rest = len(pages) - len(named)
    if rest:
        return f"pages {', '.join(named)} and {rest} more"
    if len(named) == 1:
        return f"page {named[0]}"
    return f"pages {', '.join(named[:-1])} and {named[-1]}"


def scans_words(pages: list[int]) -> str:
    """"page 3 waits for OCR", "pages 3 and 4 wait for OCR" ("" for none)."""
    return f"{pages_words(pages)} {'waits' if len(pages) == 1 else 'wait'} for OCR" if pages else ""


def unfinished_words(info: dict) -> str:
    """What a first-pass paper lacks, in words: "read by its text layer only (no headings, figures or tables
    yet; pages 3 and 4 wait for OCR); not analysed yet"."""
    pages = info.get("pending_pages") or []
    scans = f"; {scans_words(pages)}" if pages else ""
    return f"read by its text layer only (no headings, figures or tables yet{scans}); not analysed yet"


def behind(ws) -> str:
    """Whether the full parse is running behind, and how to start it when it is not (one sentence)."""
    if running(ws):
        return "the full parse is running behind (`papervault status` shows how far it is)"
    return ("no full parse is running: the next `papervault add` starts it, or "
            f"`python -m papervault.app.arrival --workspace {ws.root}`")


def running(ws) -> int | None:
    """The pid of the worker running on this workspace (-1: one runs, pid not yet known), or None."""
    return holder(lock_path(ws), lambda: state(ws), STATE_WAIT_TRIES)


def stages(ws, ids: list[str] | None = None) -> dict:
    """Each paper's stage for `status`: {"searchable": [ids read by their first pass, full parse waiting],
    "worker": {running, done, total, current, ...}}. A paper not listed is complete (fully parsed)."""
    wait = waiting(ws)
    if ids is not None:
        keep = set(ids)
        wait = [p for p in wait if p in keep]
    pid = running(ws)
    info = state(ws)
    out = {"first_pass": wait, "running": pid, "last": info or None}
    if wait and pid:
        out["hint"] = (f"{len(wait)} paper(s) searchable by their text layer; the full parse (layout, figures, "
                       "tables, OCR) is running behind")
    elif wait:
        out["hint"] = ("no full parse is running: the next `papervault add` starts it, or "
                       f"`python -m papervault.app.arrival --workspace {ws.root}`")
    return out


