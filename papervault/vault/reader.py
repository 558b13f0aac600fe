"""`reader-notes.md`: the reader's own highlights and notes (Zotero annotations, child notes, CSL notes).

`add` writes the file beside the note; this module reads it back as entries — a highlight (a quoted passage
with the page Zotero gave) or a note — for the index (level `highlight`), the site page and MCP `get_paper`.
"""

from __future__ import annotations

import re
from dataclasses import asdict, dataclass
from typing import Any
from papervault.pages import pdf_page

FILENAME = "reader-notes.md"
MAX_ENTRIES = 500

# "> quoted text (p. 12)": Zotero's page label, printed or PDF, at the end of the quote
_PAGE_LABEL = re.compile(r"\s*\(p\.\s*([^()\s]{1,12})\)\s*$")
_HEADING = re.compile(r"^#{1,6}\s+(.+?)\s*$")


@dataclass
class ReaderEntry:
    kind: str                 # "highlight" (a quoted passage) or "note"
    text: str                 # the highlight without its quote markers, or the note's Markdown
    comment: str = ""         # the reader's comment on a highlight
    page_label: str | None = None
    page: int | None = None   # the PDF page (1-based), from the label and the paper's page labels
    source: str = ""          # "Annotations on paper.pdf" for annotations

    def as_dict(self) -> dict[str, Any]:
        return {k: v for k, v in asdict(self).items() if v not in (None, "")}


def parse(text: str, page_labels: list[str] | None = None) -> list[ReaderEntry]:
    """The entries of a `reader-notes.md`, in file order: each blockquote is a highlight (its page label
    mapped to a PDF page), the lines of its block that are not quoted are the reader's comment; other blocks
    are notes."""
    entries: list[ReaderEntry] = []
    source = ""
    note: list[str] = []

    def flush_note():
        body = "\n".join(note).strip()
        if body:
            entries.append(ReaderEntry(kind="note", text=body, source=source))
        note.clear()

    blocks = re.split(r"\n\s*\n", (text or "").replace("\r\n", "\n"))
    for block in blocks:
        lines = block.strip("\n").splitlines()
        if not any(line.strip() for line in lines):
            continue
        head = _HEADING.match(lines[0])
        if head and head.group(1).lower().startswith("annotations on "):
            flush_note()
            source = head.group(1)
            lines = lines[1:]
            if not lines:
                continue
        quoted = [line for line in lines if line.startswith(">")]
        if quoted:
            flush_note()
            qtext = "\n".join(line[1:].strip() for line in quoted).strip()
            m = _PAGE_LABEL.search(qtext)
            label = m.group(1) if m else None
            if m:
                qtext = qtext[: m.start()].rstrip()
            rest = "\n".join(line for line in lines if not line.startswith(">")).strip()
            entries.append(ReaderEntry(kind="highlight", text=qtext, comment=rest, page_label=label,
                                       page=pdf_page(page_labels, label), source=source))
        else:
            if source and len(lines) == 1:
                # a comment-only annotation: "text (p. 3)"
                m = _PAGE_LABEL.search(lines[0])
                if m:
                    flush_note()
                    entries.append(ReaderEntry(kind="note", text=lines[0][: m.start()].strip(), page_label=m.group(1),
                                               page=pdf_page(page_labels, m.group(1)), source=source))
                    continue
            note.extend(lines + [""])
            flush_note()
        if len(entries) >= MAX_ENTRIES:
            break
    flush_note()
    return entries[:MAX_ENTRIES]
