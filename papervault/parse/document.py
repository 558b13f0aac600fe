"""Opening a PDF safely: every way a file can be unreadable becomes a `ParseError` that says what to do."""

from __future__ import annotations

from pathlib import Path

import pymupdf

from papervault.errors import ParseError
from papervault.hashing import file_sha256  # noqa: F401  (re-exported for the parser modules)


def open_pdf(path: Path, password: str | None = None, max_pages: int | None = None) -> pymupdf.Document:
    """Open `path` as a PDF or raise `ParseError` (missing, empty, not a PDF, corrupt, encrypted, too long)."""
    path = Path(path)
    if not path.exists():
        raise ParseError(path, "file not found", fix="check the path")
    if not path.is_file():
        raise ParseError(path, "not a file", fix="pass the path of a PDF file")
    size = path.stat().st_size
    if size == 0:
        raise ParseError(path, "the file is empty (0 bytes)", fix="download the PDF again")
    with open(path, "rb") as fh:
        head = fh.read(1024)
    # MuPDF happily "opens" text or images as documents; only accept what claims to be a PDF.
    if b"%PDF-" not in head:
        raise ParseError(path, "not a PDF (no %PDF- header)", fix="pass a PDF file, or download the PDF again")
    try:
        doc = pymupdf.open(path, filetype="pdf")
    except Exception as exc:  # MuPDF raises FileDataError, RuntimeError, ... for broken files
        raise ParseError(path, f"corrupt PDF ({_short(exc)})", fix="download the PDF again or repair it (e.g. with qpdf)") from None
    if doc.needs_pass:
        if password is None or not doc.authenticate(password):
            doc.close()
            what = "encrypted with a password" if password is None else "encrypted and the password is wrong"
            raise ParseError(path, f"the PDF is {what}", fix="give the right password, or save an unencrypted copy")
    try:
        n = doc.page_count
    except Exception as exc:
        doc.close()
        raise ParseError(path, f"corrupt PDF ({_short(exc)})", fix="download the PDF again or repair it (e.g. with qpdf)") from None
    if n == 0:
        doc.close()
        raise ParseError(path, "the PDF has no pages (truncated or corrupt)", fix="download the PDF again")
    if max_pages is not None and n > max_pages:
        doc.close()
        raise ParseError(path, f"the PDF has {n} pages, more than parse.max_pages={max_pages}",
                         fix="raise [parse] max_pages in papervault.toml or split the file")
    return doc


def _short(exc: Exception) -> str:
    text = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
    return text[:160]
