"""parse_pdf: one PDF file in, one `ParsedPaper` (the paper.md body plus its structure) out."""

from __future__ import annotations

import re
from pathlib import Path

import pymupdf

from papervault import pages as pages_mod
from papervault.config import ParseSettings
from papervault.models import Figure, Heading, ParsedPaper, Reference, Table
from papervault.vault.paper import alt_text, escape_html, figure_line, page_anchor, table_caption
from papervault.parse.document import file_sha256, open_pdf, structure_error
from papervault.parse.ocr import ocr_page
from papervault.parse.layout import Block, Line, extract_lines_repaired, find_running_lines, group_blocks, reading_order
from papervault.parse.header import Header, read_header
from papervault.parse.pageobjects import page_objects
from papervault.parse.references import REFERENCES_HEADING, parse_reference, split_reference_lines
from papervault.parse.structure import (KNOWN_SECTIONS, TOC_ENTRY, assign_levels, body_size, effective_size,
                                        heading_candidate, refine_headings)
from papervault.parse.text import garbage_score, hyphenated_words, join_lines
from papervault.parse.version import PARSER
from papervault.parse.words import WordCount, count_words

GARBAGE_THRESHOLD = 0.5
NON_WORD_MIN_WORDS = 30   # fewer words than this say nothing about a page's text layer
NON_WORD_TRIES = 2        # OCR readings of non-word pages that gained nothing before a document is left as it is
OCR_GAIN = 0.2            # how much higher the share of dictionary words of an OCR reading must be to replace a page


def parse_pdf(path: Path, settings: ParseSettings | None = None, *, password: str | None = None) -> ParsedPaper:
    """Parse the PDF at `path`; raises `ParseError` when the file cannot be read at all.

    Problems that leave the rest readable (a page that fails, OCR off for a scan) become `warnings`.
    """
    settings = settings or ParseSettings()
    path = Path(path)
    doc = open_pdf(path, password=password, max_pages=settings.max_pages)
    try:
        paper = _parse(doc, settings, name=path.name)
        limit = structure_error(path)
        if limit:
            raise limit
    finally:
        doc.close()
    paper.sha256 = file_sha256(path)
    paper.parser = PARSER
    return paper


def _read_pages(doc: pymupdf.Document, settings: ParseSettings, upto: int, warnings: list[str]):
    """Blocks of the first `upto` pages (OCR'd where the text layer is unusable), without running lines."""
    page_lines: list[list[Line]] = []
    rotated: list[str] = []
    ocr_pages: list[int] = []
    sizes: list[tuple[float, float]] = []
    repaired: list[int] = []
    # Pages still mostly non-words after the repair are OCR'd; once NON_WORD_TRIES of them gained nothing and
    # none did, the document is taken to be written that way (another language, code) and not tried again.
    kept = missed = 0
    for pno in range(1, upto + 1):
        try:
            page = doc[pno - 1]
            sizes.append((page.rect.width, page.rect.height))
            lines, rot, fixed = extract_lines_repaired(page)
            if fixed:
                repaired.append(pno)
        except Exception as exc:
            warnings.append(f"page {pno}: could not be read ({type(exc).__name__}); left empty")
            page_lines.append([])
            if len(sizes) < pno:
                sizes.append((612.0, 792.0))
            continue
        rotated.extend(ln.text for ln in rot)
        if _needs_ocr(page, lines):
            if settings.ocr:
                try:
                    lines = ocr_page(page, settings.ocr_dpi, settings.ocr_threads)
                    ocr_pages.append(pno)
                except Exception as exc:
                    warnings.append(f"page {pno}: OCR failed ({type(exc).__name__}: {str(exc)[:80]})")
            else:
                warnings.append(f"page {pno}: no usable text layer and OCR is off ([parse] ocr = false)")
        elif settings.ocr and (kept or missed < NON_WORD_TRIES):
            layer = count_words([ln.text for ln in lines])
            if mostly_non_words(layer, settings.ocr_min_word_share):
                try:
                    read = ocr_page(page, settings.ocr_dpi, settings.ocr_threads)
                except Exception as exc:
                    warnings.append(f"page {pno}: OCR failed ({type(exc).__name__}: {str(exc)[:80]})")
                    read = None
                got = count_words([ln.text for ln in read or []])
                if read is not None and ocr_is_better(got, layer):
                    lines = read
                    ocr_pages.append(pno)
                    kept += 1
                else:
                    missed += 1
                    last = not kept and missed == NON_WORD_TRIES
                    if read is not None:
                        warnings.append(f"page {pno}: {_pct(layer)} of its words are dictionary words and OCR read "
                                        f"{_pct(got)}; the text layer is kept"
                                        + ("; no further page of this PDF is OCR'd for that reason" if last else ""))
        if ocr_pages and ocr_pages[-1] == pno and pno in repaired:
            repaired.remove(pno)    # each page is recorded once, by where its text came from
        page_lines.append(lines)

    drop = find_running_lines(page_lines, [h for _, h in sizes])
    # The numbers printed in the header or footer, before the running lines are dropped.
    edges = [pages_mod.edge_numbers([ln.text for li, ln in enumerate(lines) if (pi, li) in drop])
             for pi, lines in enumerate(page_lines)]
    # The running heads of the pages after the first (a title or the authors, often): a signal for the title.
    heads = list(dict.fromkeys(ln.text for pi, lines in enumerate(page_lines) if pi > 0
                               for li, ln in enumerate(lines) if (pi, li) in drop
                               and ln.bbox[3] < 0.5 * sizes[pi][1]))[:20]
    hyph = hyphenated_words([ln.text for lines in page_lines for ln in lines])
    pages: list[list[Block]] = []
    for pi, lines in enumerate(page_lines):
        kept = [ln for li, ln in enumerate(lines) if (pi, li) not in drop]
        blocks = group_blocks(kept, pi + 1)
        for b in blocks:
            b.text = join_lines([ln.text for ln in b.lines], hyph)
        pages.append(blocks)
    return pages, sizes, rotated, ocr_pages, repaired, edges, heads


def front_inputs(path: Path, settings: ParseSettings | None = None, *, pages: int = 3) -> dict:
    """What the header reader reads of the PDF at `path` (its first pages' blocks in reading order, their
    heights, the document info, rotated text, scanned pages, cover page, file name, running heads): the
    arguments of `read_header`, which a benchmark may keep and read again without the layout and OCR."""
    settings = settings or ParseSettings()
    doc = open_pdf(Path(path), max_pages=settings.max_pages)
    try:
        blocks, sizes, rotated, ocr_pages, _, _, heads = _read_pages(doc, settings, min(pages, doc.page_count), [])
        blocks = [reading_order(bl, sizes[i][0]) for i, bl in enumerate(blocks)]
        return dict(pages=blocks, heights=[h for _, h in sizes], info=dict(doc.metadata or {}), rotated=rotated,
                    scanned={p - 1 for p in ocr_pages}, cover=_is_cover(blocks, doc.page_count),
                    file_name=Path(path).name, repeats=heads)
    finally:
        doc.close()


def read_front(path: Path, settings: ParseSettings | None = None, *, pages: int = 3) -> Header:
    """The header (title, authors, year, venue, ids) of the PDF at `path`, read from its first pages only."""
    args = front_inputs(path, settings, pages=pages)
    return read_header(args.pop("pages"), args.pop("heights"), **args)


def front_abstract(pages: list[list[Block]], title_page: int = 0) -> str:
    """The abstract read from the first pages' blocks alone (`front_inputs`; the first pass, which has no body
    size of the whole paper): the full parse's rule (`_abstract`) over those pages' headings. Marks the headings
    on the blocks it is given."""
    body = body_size([b for bl in pages for b in bl])
    for b, num, ttl in _heading_blocks(pages, body, [], first=title_page):
        b.kind, b.number, b.data["title"] = "heading", num, ttl
    return _abstract(pages[title_page:])


def _parse(doc: pymupdf.Document, settings: ParseSettings, name: str | None = None) -> ParsedPaper:
    warnings: list[str] = []
    if getattr(doc, "is_repaired", False):
        warnings.append("the PDF was damaged and repaired while opening; some pages may be missing or empty")
    n = doc.page_count
    pages, sizes, rotated, ocr_pages, repaired, edges, heads = _read_pages(doc, settings, n, warnings)
    labels = pages_mod.pdf_labels(doc) or pages_mod.from_printed_numbers(edges)
    body = body_size([b for bl in pages for b in bl])

    figs: list[Figure] = []
    tabs: list[Table] = []
    used_names: set[str] = set()
    for pi, blocks in enumerate(pages):
        if not blocks:
            continue
        try:
            pages[pi] = page_objects(doc[pi], pi + 1, blocks, body, figs, tabs, used_names, warnings,
                                      scanned=(pi + 1) in ocr_pages)
        except Exception as exc:  # one page's figures must not cost the paper its text
            warnings.append(f"page {pi + 1}: figures/tables skipped ({type(exc).__name__}: {str(exc)[:80]})")
            pages[pi] = reading_order(blocks, sizes[pi][0])

    # A publisher's cover page (USENIX: "This paper is included in the Proceedings of ...") is not the paper:
    # its lines are never headings, and the title and authors come from the paper's own first page.
    head = read_header(pages[:3], [h for _, h in sizes[:3]], info=doc.metadata or {}, rotated=rotated,
                       scanned={p - 1 for p in ocr_pages}, cover=_is_cover(pages, n), file_name=name,
                       repeats=heads)
    tp = head.title_page
    title = head.title
    title_blocks = _claim_title(pages[tp] if pages else [], head.title_lines)

    heads = _heading_blocks(pages, body, ocr_pages, first=tp)
    heads = _drop_front_matter(heads, title_blocks, title_page=tp + 1)
    heads = refine_headings(heads)
    assign_levels(heads)
    for b, num, ttl in heads:
        b.kind, b.number, b.data["title"] = "heading", num, ttl

    abstract = _abstract(pages[tp:])
    refs, ref_blocks = _references(pages)
    for b in ref_blocks:
        b.kind = "reference"

    md = _markdown(title, pages, refs, figs, tabs)
    headings = [Heading(title=b.data["title"], level=b.level, page=b.page, number=b.number)
                for blocks in pages for b in blocks if b.kind == "heading"]
    return ParsedPaper(markdown=md, pages=n, title=_clip(title, 300), authors=head.authors, year=head.year,
                       abstract=abstract, doi=head.doi, arxiv=head.arxiv, venue=head.venue,
                       provenance=dict(head.provenance), keywords=head.keywords, headings=headings, figures=figs,
                       tables=tabs, references=refs, ocr_pages=ocr_pages, repaired_pages=repaired, page_labels=labels,
                       warnings=warnings)


_COVER = re.compile(r"this paper is included in the proceedings|open access to the proceedings|"
                    r"is brought to you for free and open access|"
                    # a publisher's cover over an article: how to cite it, where to read it, what else to read
                    r"to cite this article:|view the article online for updates|you may also like", re.I)


def _is_cover(pages: list[list[Block]], n: int | None = None) -> bool:
    """Page 1 is a publisher's cover: a short page that says so, without an abstract, before the paper."""
    if (n if n is not None else len(pages)) < 3 or len(pages) < 2:
        return False
    text = " ".join(b.text for b in pages[0])
    return bool(_COVER.search(text)) and len(text) < 3000 and not re.search(r"\babstract\b", text, re.I)


_CHAPTER = re.compile(r"^(?:CHAPTER|Chapter|APPENDIX|Appendix)\s+(\d{1,2}|[A-Z])$")
_DOT_LEADER = re.compile(r"(?:\.\s*){3,}\s*(?:\d{1,4}|[ivxlc]{1,7})$")


def _heading_blocks(pages: list[list[Block]], body: float, ocr_pages: list[int], first: int = 0):
    """(block, number, title) of the heading candidates from page `first` (0-based; earlier pages are a
    cover) on, in reading order.

    OCR'd pages are judged strictly (their sizes are estimates); on a table-of-contents page, entries that
    end with a page number are not headings; a heading broken into two blocks (the second line of a
    centred small-caps IEEE heading) is joined back."""
    heads = []
    for pi, blocks in enumerate(pages):
        if pi < first:
            continue
        strict = (pi + 1) in ocr_pages
        toc = None
        i = 0
        while i < len(blocks):
            b = blocks[i]
            hc = heading_candidate(b, body, strict=strict)
            if hc and TOC_ENTRY.search(b.text):
                if toc is None:
                    toc = _is_toc_page(blocks)
                if toc:
                    hc = None
            m = _CHAPTER.match(b.text.strip()) if hc and i + 1 < len(blocks) else None
            if m:
                # "CHAPTER 2" over "Literature Review" (a thesis): one heading, "2 Literature Review".
                nhc = heading_candidate(blocks[i + 1], body, strict=strict)
                if nhc and not nhc[0] and blocks[i + 1].bbox[1] >= b.bbox[3] - 2:
                    nxt = blocks.pop(i + 1)
                    b.lines, b.text = b.lines + nxt.lines, f"{b.text} {nxt.text}"
                    hc = (m.group(1), nhc[1])
            elif hc and i + 1 < len(blocks) and _continues_heading(b, blocks[i + 1], body):
                nxt = blocks[i + 1]
                joined = Block(lines=b.lines + nxt.lines, page=b.page, text=f"{b.text} {nxt.text}")
                hc2 = heading_candidate(joined, body, strict=strict)
                if hc2:
                    b.lines, b.text, hc = joined.lines, joined.text, hc2
                    del blocks[i + 1]
            if hc:
                heads.append((b, *hc))
            i += 1
    return heads


def _is_toc_page(blocks: list[Block]) -> bool:
    """A table of contents: a "Contents" title, or lines with dot leaders up to a page number."""
    if any(b.text.strip().lower() in ("contents", "table of contents") for b in blocks):
        return True
    return sum(1 for b in blocks for ln in b.lines if ". ." in ln.text and _DOT_LEADER.search(ln.text)) >= 3


def _continues_heading(b: Block, nxt: Block, body: float) -> bool:
    """`nxt` is the second line of heading `b`: same upper-case style right below it, and no heading itself."""
    if nxt.kind != "text" or len(nxt.lines) > 2 or len(nxt.text) > 80 or b.text.rstrip().endswith("."):
        return False
    if not (b.text.isupper() and nxt.text.isupper()) or b.bold != nxt.bold:
        return False
    # A second line of small capitals may have no large letter at all ("EXPLOITS").
    if min(abs(effective_size(b) - effective_size(nxt)), abs(b.size - nxt.size)) > 0.6 \
            or heading_candidate(nxt, body):
        return False
    h = b.lines[-1].bbox[3] - b.lines[-1].bbox[1]
    gap = nxt.bbox[1] - b.bbox[3]
    return -0.5 * h <= gap < 0.8 * h and nxt.bbox[0] < b.bbox[2] and nxt.bbox[2] > b.bbox[0]


def _drop_front_matter(heads, title_blocks, title_page: int = 1):
    """Author names and affiliations under the title are often bold or large: they are not sections.

    On the title page, an unnumbered heading candidate that comes before the first real section (numbered,
    or a known name such as Abstract) in reading order or stands above it (author columns are read after
    the left column), or any on a title page without a real section (a thesis), is dropped; so is any
    candidate on a cover page before it."""
    if not title_blocks:
        return heads
    on_page = [i for i, (b, num, t) in enumerate(heads) if b.page == title_page]
    real = [i for i in on_page if heads[i][1] or heads[i][2].lower() in KNOWN_SECTIONS]
    first = real[0] if real else len(heads)
    limit = min((heads[i][0].bbox[1] for i in real), default=1e9)
    return [(b, num, t) for i, (b, num, t) in enumerate(heads)
            if b.page >= title_page
            and not (b.page == title_page and (i < first or b.bbox[1] < limit) and not num
                     and t.lower() not in KNOWN_SECTIONS)]


def mostly_non_words(layer: WordCount, min_share: float) -> bool:
    """Whether a page's text layer is too little made of dictionary words to be trusted (`min_share` 0: never).

    Pages with few words (figures, title pages) and pages mostly in another script are not judged: the
    dictionary is English."""
    return (min_share > 0 and layer.words >= NON_WORD_MIN_WORDS and layer.latin >= 0.8
            and (layer.share or 0.0) < min_share)


def ocr_is_better(read: WordCount, layer: WordCount) -> bool:
    """Whether an OCR reading of a page is measurably better than its text layer: a share of dictionary words
    higher by OCR_GAIN, and more dictionary words in all."""
    return (read.share or 0.0) >= (layer.share or 0.0) + OCR_GAIN and read.known > layer.known


def _pct(count: WordCount) -> str:
    return f"{count.share:.0%}" if count.share is not None else "none"


def _needs_ocr(page: pymupdf.Page, lines: list[Line]) -> bool:
    """A page needs OCR when it has (almost) no text but carries a picture, or when its text is garbage."""
    chars = sum(len(ln.text) for ln in lines)
    if chars < 40:
        try:
            imgs = page.get_image_info()
        except Exception:
            return False
        area = page.rect.width * page.rect.height
        # A scan is one picture per page (a few at most, for split scans); thousands of tiny images are not.
        areas = sorted((max(0.0, (i["bbox"][2] - i["bbox"][0]) * (i["bbox"][3] - i["bbox"][1])) for i in imgs),
                       reverse=True)
        return sum(areas[:4]) > 0.3 * area
    return garbage_score([ln.text for ln in lines]) >= GARBAGE_THRESHOLD


def _claim_title(blocks: list[Block], title_lines: list[Line]) -> list[Block]:
    """Mark the blocks of the title's lines as the title (lines of a banner sharing a block stay text)."""
    ids = {id(ln) for ln in title_lines}
    out = []
    for b in blocks:
        mine = [ln for ln in b.lines if id(ln) in ids]
        if not mine:
            continue
        if len(mine) < len(b.lines):
            rest = [ln for ln in b.lines if id(ln) not in ids]
            b.lines, b.text = rest, join_lines([ln.text for ln in rest])
            tb = Block(lines=mine, page=b.page, text=join_lines([ln.text for ln in mine]))
            blocks.append(tb)
            b = tb
        b.kind = "title"
        out.append(b)
    return out


_ABSTRACT_INLINE = re.compile(r"^\s*abstract\s*[.:\u2014\u2013-]?\s*", re.I)


def _abstract(pages: list[list[Block]]) -> str:
    """The abstract: the text under an "Abstract" heading, or a paragraph that starts with "Abstract"."""
    flat = [b for bl in pages[:2] for b in bl]
    for i, b in enumerate(flat):
        if b.kind == "heading" and b.data.get("title", "").lower() == "abstract":
            parts = []
            for nb in flat[i + 1:]:
                if nb.kind == "heading" or len(parts) >= 4:
                    break
                if nb.kind == "text":
                    parts.append(nb.text)
            return _clip("\n\n".join(parts), 3000)
        if b.kind == "text" and _ABSTRACT_INLINE.match(b.text) and len(b.text) > 100:
            return _clip(_ABSTRACT_INLINE.sub("", b.text, count=1), 3000)
    return ""


def _references(pages: list[list[Block]]) -> tuple[list[Reference], list[Block]]:
    """The entries under the last "References" heading, up to the next top-level heading (an appendix)."""
    flat = [b for bl in pages for b in bl]
    start = None
    for i, b in enumerate(flat):
        if b.kind in ("heading", "text") and (REFERENCES_HEADING.match(b.text.strip()) or b.kind == "heading"
                                               and REFERENCES_HEADING.match(b.data.get("title", ""))):
            start = i
    if start is None:
        return [], []
    flat[start].kind, flat[start].level = "heading", 1
    flat[start].data["title"], flat[start].number = "References", ""
    body: list[Block] = []
    for b in flat[start + 1:]:
        if b.kind == "heading" and b.level <= 1 and (b.number[:1].isalpha() or "appendix" in b.text.lower()):
            break
        if b.kind in ("text", "heading", "code", "equation"):
            body.append(b)
    lines = [ln for b in body for ln in b.lines]
    line_pages = [b.page for b in body for _ in b.lines]
    refs = []
    for raw, first in split_reference_lines(lines):
        ref = parse_reference(raw)
        ref.page = line_pages[first]
        refs.append(ref)
    return refs, body


def _clip(text: str, n: int) -> str:
    return text if len(text) <= n else text[: n - 1].rstrip() + "…"


def _para(text: str) -> str:
    """A paragraph of the paper's text: HTML in it escaped (`escape_html`: no PDF writes a page anchor)."""
    text = escape_html(text)
    # A paragraph that starts like Markdown syntax (a heading, a list, a quote) must stay a paragraph.
    if re.match(r"^(#|>|[-+*]\s|\d+[.)]\s|={3,}|-{3,})", text):
        text = "\\" + text
    return text


def _markdown(title: str, pages: list[list[Block]], refs: list[Reference], figs, tabs) -> str:
    out: list[str] = [f"# {escape_html(alt_text(title)) if title else 'Untitled'}"]
    refs_written = False
    # Each entry is written under the anchor of the page where it starts, so "p. N" holds for it too:
    # the entries of the heading's page under the heading, the others where their page's entries begin.
    pending = list(refs)

    def write_refs(upto: int) -> None:
        nonlocal pending
        now = [r for r in pending if (r.page or 0) <= upto]
        if now:
            out.append("\n".join(f"- {escape_html(' '.join(r.raw.split()))}" for r in now))
            pending = [r for r in pending if (r.page or 0) > upto]

    for pno, blocks in enumerate(pages, start=1):
        out.append(page_anchor(pno))
        for b in blocks:
            k = b.kind
            if k == "title":
                continue
            if k == "heading":
                hashes = "#" * min(6, b.level + 1)
                label = f"{b.number} {b.data['title']}" if b.number else b.data["title"]
                out.append(f"{hashes} {escape_html(label)}")
                if b.data["title"] == "References" and refs and not refs_written:
                    refs_written = True
                    write_refs(pno)
            elif k == "reference":
                if refs_written:
                    write_refs(pno)
                continue
            elif k == "figure_caption" and "figure" in b.data:
                f = b.data["figure"]
                out.append(figure_line(f.filename, f.number, f.caption))
            elif k == "figure":
                f = b.data["figure"]
                out.append(figure_line(f.filename))
            elif k == "table_caption":
                out.append(_para(table_caption(b.number, b.data["caption"])))
                if "table" in b.data:
                    out.append(b.data["table"])
            elif k == "equation":
                tag = f" \\tag{{{b.number}}}" if b.number else ""
                out.append(f"$$\n{b.data['latex']}{tag}\n$$")
            elif k == "code":
                body = "\n".join(ln.text for ln in b.lines).replace("```", "`\u200b``")
                out.append(f"```\n{body}\n```")
            elif b.text:
                out.append(_para(b.text))
        if refs_written:
            write_refs(pno)
    if pending:
        write_refs(10**9)
    return "\n\n".join(out) + "\n"
