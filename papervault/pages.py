"""Printed page numbers: the page a citation names (`p. 223`) and the PDF page its link opens (`#page-1`).

A paper's `page_labels` (note frontmatter) lists the printed label of each PDF page, first page first; it
is empty when the labels are simply 1..N. They come from the PDF's own page labels, else from the numbers
printed in the running header or footer, else from the first page of a `pages` field ("223--234").
Citations say the printed page; links still go to the PDF page anchor.
"""

from __future__ import annotations

import re
import threading

_RANGE = re.compile(r"^\s*([A-Za-z]*?)(\d{1,6})\s*(?:[-–—]+\s*(?:[A-Za-z]*?)(\d{1,6}))?\s*$")
_ROMAN = re.compile(r"^[ivxlcdm]{1,8}$|^[IVXLCDM]{1,8}$")


def is_trivial(labels: list[str]) -> bool:
    return all(lab == str(i) for i, lab in enumerate(labels, 1))


def from_pages_field(pages: str | None, n: int) -> list[str]:
    """Labels of `n` PDF pages from a bibliographic `pages` field ("223--234" -> 223, 224, ...); [] when the
    field gives no first page or its range cannot be these pages."""
    if not pages or n <= 0:
        return []
    m = _RANGE.match(str(pages))
    if not m:
        return []
    prefix, first = m.group(1) or "", int(m.group(2))
    last = int(m.group(3)) if m.group(3) else None
    if last is not None and last >= first and last - first + 1 not in (n, n - 1, n + 1) and n > 1:
        # A cover page or an appendix may add a page; more than that and the range is another version's.
        return []
    out = [f"{prefix}{first + i}" for i in range(n)]
    return [] if is_trivial(out) else out


def from_printed_numbers(found: list[set[int]]) -> list[str]:
    """Labels from the numbers printed in each page's header or footer (the candidates of each page).

    The offset (printed - PDF page) that most pages agree on wins, when at least half the pages with a number
    and at least two pages agree; pages before the first numbered one (a cover) keep their PDF numbers only
    if the offset would make them < 1.
    """
    offsets: dict[int, int] = {}
    numbered = 0
    for i, vs in enumerate(found, 1):
        if not vs:
            continue
        numbered += 1
        for off in {v - i for v in vs}:
            offsets[off] = offsets.get(off, 0) + 1
    if not offsets:
        return []
    off, votes = max(offsets.items(), key=lambda kv: (kv[1], -abs(kv[0])))
    if off == 0 or votes < 2 or votes < 0.5 * numbered:
        return []
    out = [str(i + off) if i + off >= 1 else str(i) for i in range(1, len(found) + 1)]
    return [] if is_trivial(out) else out


_EDGE_NUMBER = re.compile(r"^(\d{1,5})\b|\b(\d{1,5})$")


def edge_numbers(texts: list[str]) -> set[int]:
    """Numbers at the start or end of a page's header and footer lines ("223", "... Conference 347")."""
    out = set()
    for t in texts:
        t = t.strip()
        for m in _EDGE_NUMBER.finditer(t):
            v = int(m.group(1) or m.group(2))
            if 0 < v < 20000 and not (1900 <= v <= 2100 and len(t) > 4):
                out.add(v)
    return out


def pdf_labels(doc) -> list[str]:
    """The PDF's own page labels (`/PageLabels`), when it has any that are not 1..N."""
    try:
        if not doc.get_page_labels():
            return []
        out = [doc[i].get_label() or str(i + 1) for i in range(doc.page_count)]
    except Exception:
        return []
    return [] if is_trivial(out) else out


def printed(labels: list[str] | None, page: int | None) -> str:
    """The printed label of PDF page `page` (1-based); the PDF number itself when none is known."""
    if page is None:
        return ""
    if labels and 1 <= page <= len(labels) and labels[page - 1]:
        return labels[page - 1]
    return str(page)


def pdf_page(labels: list[str] | None, label: int | str | None) -> int | None:
    """The PDF page (1-based) that prints `label`; the number itself when the labels do not know it."""
    if label is None:
        return None
    text = str(label).strip()
    if labels:
        for i, lab in enumerate(labels, 1):
            if lab == text:
                return i
    return int(text) if text.isdigit() else None


# Labels of the papers the current process has loaded (survey stages format a paper's citations from its
# id and PDF page): filled by `remember` when a paper is read, consulted by `printed_for`.
_known: dict[str, list[str]] = {}
_lock = threading.Lock()


def remember(pid: str, labels: list[str] | None) -> None:
    with _lock:
        if labels:
            _known[pid] = list(labels)
        else:
            _known.pop(pid, None)


def printed_for(pid: str, page: int | None) -> str:
    """`printed` for a paper the process has read (see `remember`)."""
    with _lock:
        labels = _known.get(pid)
    return printed(labels, page)
