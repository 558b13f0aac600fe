"""PDF -> Markdown with page anchors, figures, tables, equations and references; OCR for broken text layers."""

from papervault.parse.version import PARSER, PARSER_VERSION

__all__ = ["PARSER", "PARSER_VERSION", "parse_pdf", "parse_many"]


def parse_pdf(*args, **kwargs):
    """See `papervault.parse.pdf.parse_pdf` (imported lazily so `import papervault.parse` stays cheap)."""
    from papervault.parse.pdf import parse_pdf as _parse_pdf  # deferred: PyMuPDF, see the docstring

    return _parse_pdf(*args, **kwargs)


def parse_many(*args, **kwargs):
    """See `papervault.parse.batch.parse_many`."""
    from papervault.parse.batch import parse_many as _parse_many  # deferred: PyMuPDF, as parse_pdf

    return _parse_many(*args, **kwargs)
