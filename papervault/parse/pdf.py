"""parse_pdf: one PDF file in, one `ParsedPaper` (paper.md body plus structure) out."""

from __future__ import annotations

from pathlib import Path

from papervault.config import ParseSettings
from papervault.models import ParsedPaper, page_anchor
from papervault.parse.document import file_sha256, open_pdf
from papervault.parse.version import PARSER


def parse_pdf(path: Path, settings: ParseSettings | None = None, *, password: str | None = None) -> ParsedPaper:
    """Parse the PDF at `path`; raises `ParseError` when the file cannot be read at all."""
    settings = settings or ParseSettings()
    path = Path(path)
    doc = open_pdf(path, password=password, max_pages=settings.max_pages)
    try:
        parts: list[str] = []
        meta = doc.metadata or {}
        title = (meta.get("title") or "").strip()
        for pno, page in enumerate(doc, start=1):
            parts.append(page_anchor(pno))
            for block in page.get_text("blocks", sort=True):
                if block[6] == 0 and block[4].strip():
                    parts.append(" ".join(block[4].split()))
        if not title and len(parts) > 1:
            title = parts[1][:200]
        markdown = f"# {title}\n\n" + "\n\n".join(parts) + "\n"
        return ParsedPaper(markdown=markdown, pages=doc.page_count, title=title,
                           parser=PARSER, sha256=file_sha256(path))
    finally:
        doc.close()
