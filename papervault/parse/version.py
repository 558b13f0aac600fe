"""The parser's version: part of every cache key and of `ParsedPaper.parser`, so a change re-parses."""

# Bump whenever the Markdown or the extracted structure would change for the same PDF.
PARSER_VERSION = "0.4.2"
PARSER = f"pymupdf/{PARSER_VERSION}"
