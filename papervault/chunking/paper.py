"""Hierarchical chunks of one paper (paper, section, paragraph, figure, table, note, highlight) from its paper.md,
note.md and reader-notes.md.

Ids derive from the paper, the level and the text that is embedded, not from the chunker version: re-chunking
unchanged content, by this chunker or the next, yields the same ids, and the index reuses their vectors. Bump
CHUNKER_VERSION whenever the output for the same input changes: the next `papervault index` then re-chunks every
paper and embeds only the texts that changed.
"""

from __future__ import annotations

import hashlib
import re
from dataclasses import dataclass, field

from papervault.config import IndexSettings
from papervault.models import Chunk, PaperMeta
from papervault.vault import paper as paper_md
from papervault.vault.reader import parse as parse_reader_notes

CHUNKER_VERSION = "paper-2"   # 2: read through papervault.vault.paper (HTML tables, escaped captions); ids unversioned

WORD_RE = re.compile(r"\w+|[^\w\s]")
SENTENCE_RE = re.compile(r"(?<=[.!?])\s+(?=[A-Z(\[])")
ABSTRACT_RE = re.compile(r"^(?:\d+\.?\s*)?abstract\b", re.I)


def count_tokens(text: str) -> int:
    """Approximate model tokens (words and punctuation): fast, and close enough to size chunks."""
    return len(WORD_RE.findall(text))


def chunk_id(paper_id: str, level: str, embed_text: str) -> str:
    # No chunker version in the id (paper-1 had one): a new chunker keeps the ids, and so the vectors and the
    # multilingual rows, of every chunk whose text it leaves alone.
    return hashlib.sha256(f"{paper_id}\x1f{level}\x1f{embed_text}".encode()).hexdigest()[:24]


def text_key(text: str) -> str:
    """The digest of an embedded text: what a stored vector is reused by (with the model, recorded apart)."""
    return hashlib.sha256(text.encode()).hexdigest()[:32]


def embed_text(chunk: Chunk, title: str) -> str:
    """The text a chunk is embedded as: its own text in the context of the paper title and section.

    The index rebuilds it from stored rows to reuse their vectors (index/store.py `_old_vectors`): a change
    here changes every vector, like another model, and needs `papervault index --rebuild`."""
    if chunk.level == "paper":
        return chunk.text
    head = " > ".join(p for p in (title, chunk.section_path) if p)
    return f"{head}\n{chunk.text}" if head else chunk.text


@dataclass
class _Block:
    kind: str                  # "text" | "figure" | "table"
    text: str
    page_start: int | None
    page_end: int | None
    section: str
    extra: dict = field(default_factory=dict)


@dataclass
class _Section:
    path: str
    blocks: list[_Block] = field(default_factory=list)


def _split_blocks(fulltext: str) -> tuple[str, list[_Section]]:
    """paper.md into (title, sections of blocks), as `papervault.vault.paper` reads it; references dropped."""
    doc = paper_md.read(fulltext)
    sections: list[_Section] = [_Section("")]
    skipping_level: int | None = None
    for b in doc.blocks:
        if b.kind == "heading":
            if b.section is None:
                continue                    # the paper's title
            if skipping_level is not None and b.level <= skipping_level:
                skipping_level = None
            if skipping_level is None and paper_md.is_references(b.title):
                skipping_level = b.level
            if skipping_level is None:
                sections.append(_Section(b.section.path))
            continue
        if skipping_level is not None or not b.lines:
            continue
        if b.kind == "text":
            sections[-1].blocks.append(_Block("text", b.text, b.page_start, b.page_end, sections[-1].path))
        elif b.kind == "figure":
            f = b.figure
            sections[-1].blocks.append(_Block("figure", f.label, b.page_start, b.page_end, sections[-1].path,
                                              {"figure": f.src, "number": f.number}))
        elif b.kind == "table":
            t = b.table
            label = f"Table {t.number}: {t.caption}".strip() if t.number else t.caption
            # a Markdown table as written; an HTML one (merged cells) as rows of its cells' text
            rows = [ln for ln, n in zip(b.lines, b.numbers) if n >= t.line] if not t.html else \
                ["| " + " | ".join(r) + " |" for r in t.rows]
            text = "\n".join(filter(None, [label, "\n".join(rows)]))
            sections[-1].blocks.append(_Block("table", text, b.page_end, b.page_end, sections[-1].path,
                                              {"number": t.number, "caption": t.caption}))
    return doc.title, [s for s in sections if s.blocks]


def _split_long(text: str, target: int, ceiling: int) -> list[str]:
    """Cut a block longer than `ceiling` tokens into pieces of about `target`, at sentence boundaries."""
    if count_tokens(text) <= ceiling:
        return [text]
    out: list[str] = []
    cur: list[str] = []
    size = 0
    for sent in SENTENCE_RE.split(text):
        n = count_tokens(sent)
        if n > ceiling:  # a run-on "sentence" (tables flattened to text, OCR): cut by words
            words = sent.split()
            step = max(1, int(len(words) * target / n))
            pieces = [" ".join(words[i:i + step]) for i in range(0, len(words), step)]
        else:
            pieces = [sent]
        for piece in pieces:
            k = count_tokens(piece)
            if cur and size + k > target:
                out.append(" ".join(cur))
                cur, size = [], 0
            cur.append(piece)
            size += k
    if cur:
        out.append(" ".join(cur))
    return out


def _mentions(text: str) -> list[str]:
    return list(dict.fromkeys(f"{kind}:{num}" for kind, num in paper_md.mentions(text)))


def truncate_tokens(text: str, tokens: int) -> str:
    """`text` cut to about `tokens` tokens at a word boundary, marked with an ellipsis when cut."""
    words = text.split()
    if count_tokens(text) <= tokens:
        return text
    out, n = [], 0
    for w in words:
        n += count_tokens(w)
        if n > tokens:
            break
        out.append(w)
    return " ".join(out) + " …"


def _note_sections(body: str) -> list[tuple[str, str]]:
    out: list[tuple[str, str]] = []
    name, lines = "", []
    for line in body.splitlines():
        h = re.match(r"^##\s+(.+?)\s*$", line)
        if h:
            if "".join(lines).strip():
                out.append((name, "\n".join(lines).strip()))
            name, lines = h.group(1).strip(), []
        elif not line.startswith("# "):
            lines.append(line)
    if "".join(lines).strip():
        out.append((name, "\n".join(lines).strip()))
    return out


def _find_abstract(sections: list[_Section]) -> str:
    for sec in sections:
        leaf = sec.path.rsplit(" > ", 1)[-1]
        if ABSTRACT_RE.match(leaf):
            return " ".join(b.text for b in sec.blocks if b.kind == "text")
    for sec in sections[:2]:
        for b in sec.blocks:
            if b.kind == "text" and ABSTRACT_RE.match(b.text):
                return re.sub(r"^abstract\W*", "", b.text, flags=re.I)
    return ""


# long: the chunks in reading order (paper, sections with paragraphs, figures, tables, note, highlights),
# written out once so ordinals and parents are given in one sequence
def chunk_paper(meta: PaperMeta, fulltext: str, note_body: str, settings: IndexSettings | None = None,
                reader_notes: str = "") -> list[Chunk]:
    """All chunks of one paper in reading order: paper, then sections with their paragraphs, figures and tables,
    then the note's sections, then the reader's highlights and notes (`reader-notes.md`, level `highlight`, each
    highlight on its page). A paper with no full text still yields its paper chunk (title + abstract)."""
    settings = settings or IndexSettings()
    target, ceiling = settings.chunk_tokens, settings.max_chunk_tokens
    pid = meta.id
    doc_title, sections = _split_blocks(fulltext or "")
    title = (meta.title or doc_title or pid).strip()
    chunks: list[Chunk] = []
    seen: dict[str, int] = {}

    def add(level: str, text: str, section: str = "", start=None, end=None, parent=None, extra=None) -> Chunk:
        c = Chunk(id="", paper_id=pid, level=level, text=text.strip(), section_path=section,
                  page_start=start, page_end=end if end is not None else start, ordinal=len(chunks),
                  parent_id=parent, extra=extra or {})
        cid = chunk_id(pid, level, embed_text(c, title))
        n = seen.get(cid, 0)
        seen[cid] = n + 1
        c.id = cid if n == 0 else f"{cid}-{n}"   # identical repeated text (running headers) stays distinct
        chunks.append(c)
        return c

    abstract = (meta.abstract or "").strip() or _find_abstract(sections)
    head = [title]
    if meta.authors:
        head.append(", ".join(meta.authors[:8]))
    if abstract:
        head.append(truncate_tokens(abstract, ceiling))
    # Author keywords (an extra frontmatter field) describe the paper; tags are the reader's filing labels
    # ("to-read"), kept out of the embedded text so re-tagging never costs an embedding: they are filters.
    keywords = [str(k) for k in (getattr(meta, "keywords", None) or [])]
    if keywords:
        head.append("Keywords: " + ", ".join(keywords))
    first_page = next((b.page_start for s in sections for b in s.blocks if b.page_start), None)
    add("paper", "\n".join(head), "", first_page, first_page)

    for sec in sections:
        leaf = sec.path.rsplit(" > ", 1)[-1]
        if sec.path and ABSTRACT_RE.match(leaf):
            continue   # already in the paper chunk
        text_blocks = [b for b in sec.blocks if b.kind == "text"]
        pages = [p for b in sec.blocks for p in (b.page_start, b.page_end) if p]
        parent = None
        if sec.path:
            body = " ".join(b.text for b in text_blocks)
            parent = add("section", f"{leaf}\n{truncate_tokens(body, target)}" if body else leaf, sec.path,
                         min(pages) if pages else None, max(pages) if pages else None).id
        # paragraphs: merge small blocks up to `target`, split blocks over `ceiling`
        pending: list[_Block] = []
        size = 0

        def emit():
            nonlocal pending, size
            if pending:
                text = "\n\n".join(b.text for b in pending)
                extra = {"mentions": m} if (m := _mentions(text)) else {}
                add("paragraph", text, sec.path, pending[0].page_start or pending[0].page_end,
                    pending[-1].page_end or pending[-1].page_start, parent, extra)
            pending, size = [], 0

        for b in sec.blocks:
            if b.kind != "text":
                emit()
                if b.kind == "figure":
                    add("figure", b.text or f"Figure {b.extra.get('number', '')}", sec.path, b.page_start,
                        b.page_end, parent, b.extra)
                else:
                    add("table", truncate_tokens(b.text, ceiling), sec.path, b.page_start, b.page_end, parent, b.extra)
                continue
            for piece in _split_long(b.text, target, ceiling):
                n = count_tokens(piece)
                if pending and size + n > target:
                    emit()
                pending.append(_Block("text", piece, b.page_start, b.page_end, b.section))
                size += n
        emit()

    for name, text in _note_sections(note_body or ""):
        path = f"Note > {name}" if name else "Note"
        for piece in _split_long(text, target, ceiling):
            add("note", piece, path)

    if reader_notes.strip():
        for entry in parse_reader_notes(reader_notes, meta.page_labels):
            text = entry.text + (f"\n\n{entry.comment}" if entry.comment else "")
            extra = {"kind": entry.kind, **({"page_label": entry.page_label} if entry.page_label else {})}
            for piece in _split_long(text, target, ceiling):
                add("highlight", piece, "Reader notes", entry.page, entry.page, None, extra)
    return chunks
