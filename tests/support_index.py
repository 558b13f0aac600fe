"""Helpers for the index tests: real paper.md from the shared PDFs, and vault papers written through the Vault."""

from __future__ import annotations

from pathlib import Path

from papervault.models import PaperMeta
from papervault.vault.paper import page_anchor


def pdf_markdown(pdf: Path) -> tuple[str, str]:
    """(title, paper.md) of a PDF, parsed by the project's parser through the session's parse cache. A parser
    error fails the test: the corpus tests check what the parser produces, never a stand-in reading."""
    from conftest import parse_once

    parsed = parse_once(pdf)
    return parsed.title, parsed.markdown


def add_paper(vault, paper_id: str, *, title: str, fulltext: str = "", body: str = "", **meta) -> PaperMeta:
    """Write a paper (note.md and, when given, paper.md) straight into the vault, as ingest would."""
    from papervault.vault.store import atomic_write

    m = PaperMeta(id=paper_id, title=title, **meta)
    vault.write_note(m, body or "## Summary\n\n" + title + "\n", force=True)
    if fulltext:
        atomic_write(vault.fulltext_path(paper_id), fulltext)
    return m


TOPICS = ["consensus", "replication", "garbage collection", "type inference", "compression", "sketching",
          "scheduling", "caching", "isolation", "visualisation", "memory safety", "time series"]


def synthetic_paper(i: int, *, pages: int = 3, paragraphs: int = 4) -> tuple[str, str]:
    """(title, paper.md) of a generated paper in the parser's format: anchors, sections, a figure, a table."""
    topic = TOPICS[i % len(TOPICS)]
    title = f"On {topic} in system {i}"
    out = [page_anchor(1), "", f"# {title}", "", "## Abstract", "",
           f"We study {topic} for workload {i} and report a {i % 7 + 2}x improvement over the baseline.", ""]
    for p in range(1, pages + 1):
        if p > 1:
            out += [page_anchor(p), ""]
        out += [f"## {p} Section {p} of paper {i}", ""]
        for q in range(paragraphs):
            out += [f"Paragraph {q} on page {p} of paper {i} discusses {topic} with parameter {i * 31 + p * 7 + q}. "
                    + " ".join(f"token{(i + p + q + k) % 97}" for k in range(60)), ""]
        out += [f"![Figure {p}: {topic} latency for paper {i}, page {p}](figures/fig-{p}.png)", "",
                f"Table {p}: results of paper {i}", "", "| system | score |", "|---|---|",
                f"| ours | {i + p} |", ""]
    out += ["## References", "", "[1] Someone. A cited paper. 1999.", ""]
    return title, "\n".join(out)


def paper1_ids(monkeypatch) -> None:
    """Index as papervault's chunker `paper-1` did, as far as the index can tell: that version recorded, and in
    every chunk id (`sha256(version, paper id, level, embedded text)`). Undo with `monkeypatch.undo()` or use
    inside `monkeypatch.context()`."""
    import hashlib

    import papervault.chunking.paper as paper
    import papervault.index.schema as schema

    monkeypatch.setattr(schema, "CHUNKER_VERSION", "paper-1")
    monkeypatch.setattr(paper, "chunk_id", lambda pid, level, text: hashlib.sha256(
        f"paper-1\x1f{pid}\x1f{level}\x1f{text}".encode()).hexdigest()[:24])


def new_chunker(level: str):
    """A chunker whose output differs from today's in the text of `level` chunks only, as a next chunker
    version's would (the ids follow the new text, as `chunk_paper` makes them)."""
    from papervault.chunking.paper import chunk_id, chunk_paper, embed_text

    def chunker(meta, fulltext, body, settings=None, reader_notes=""):
        chunks = chunk_paper(meta, fulltext, body, settings, reader_notes)
        for c in chunks:
            if c.level == level:
                c.text += " (as the next chunker renders it)"
                c.id = chunk_id(c.paper_id, c.level, embed_text(c, meta.title or meta.id))
        return chunks

    return chunker
