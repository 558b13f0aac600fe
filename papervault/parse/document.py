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
    pymupdf.TOOLS.reset_mupdf_warnings()   # structure_error reads what MuPDF says about this file only
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
        limit = structure_error(path)
        if limit:
            raise limit
        raise ParseError(path, "the PDF has no pages (truncated or corrupt)", fix="download the PDF again")
    if max_pages is not None and n > max_pages:
        doc.close()
        raise ParseError(path, f"the PDF has {n} pages, more than parse.max_pages={max_pages}",
                         fix="raise [parse] max_pages in papervault.toml or split the file")
    return doc


# What MuPDF says when an object nests deeper than it will follow (a 200,000-deep array, say). It then drops the
# object and goes on, so without this check such a file would import as an empty paper.
_LIMIT_SIGNS = ("limit error", "stack overflow", "nested too deep", "nesting too deep")


def structure_error(path: Path) -> ParseError | None:
    """A ParseError when MuPDF hit one of its structure limits since `open_pdf(path)`, else None."""
    said = pymupdf.TOOLS.mupdf_warnings().lower()
    if not any(sign in said for sign in _LIMIT_SIGNS):
        return None
    return ParseError(path, "the PDF nests its objects deeper than the parser follows (MuPDF: "
                            f"{_first_limit_line(said)}); not imported",
                      fix="repair it (e.g. `qpdf in.pdf out.pdf`) and add the repaired file")


def _first_limit_line(said: str) -> str:
    for line in said.splitlines():
        if any(sign in line for sign in _LIMIT_SIGNS):
            return line.strip()[:80]
    return "structure limit"


def _short(exc: Exception) -> str:
    text = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
    return text[:160]
