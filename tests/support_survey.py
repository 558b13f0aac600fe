"""Helpers for the survey tests: a vault of real shared-corpus papers, built quickly and analysed for real.

The full parser (layout, figures, OCR) costs minutes for seven papers on a busy two-core machine; the survey
stages only need `paper.md` with page anchors, headings and a reference list, so the fixture reads the PDFs'
text blocks with PyMuPDF, writes them through the `Vault`, and runs the real extractive analyser.
"""

from __future__ import annotations

import re
from pathlib import Path

from papervault.models import PaperMeta
from papervault.vault.paper import page_anchor

# The seven related shared-corpus papers (distributed storage, consensus, operating systems).
RELATED = {
    "elle": "datastores_elle-inferring-isolation-anomalies-from-experimental-observations.pdf",
    "megastore": "datastores_megastore-providing-scalable-highly-available-storage-for-interactive-services.pdf",
    "spartan": "datastores_spartan-a-distributed-array-framework-with-smart-tiling.pdf",
    "harvest": "distributed_systems_harvest-yield-and-scalable-tolerant-systems.pdf",
    "paxos": "distributed_systems_paxos-made-moderately-complex.pdf",
    "tiered": "distributed_systems_tiered-replication-a-cost-effective-alternative-to-full-cluster-geo-replication.pdf",
    "unix": "operating_systems_unix-time-sharing-system.pdf",
}

TITLES = {
    "elle": ("Elle: Inferring Isolation Anomalies from Experimental Observations", ["Kyle Kingsbury", "Peter Alvaro"], 2020),
    "megastore": ("Megastore: Providing Scalable, Highly Available Storage for Interactive Services",
                  ["Jason Baker", "Chris Bond", "James C. Corbett"], 2011),
    "spartan": ("Spartan: A Distributed Array Framework with Smart Tiling", ["Chien-Chin Huang", "Qi Chen", "Zhaoguo Wang"], 2015),
    "harvest": ("Harvest, Yield, and Scalable Tolerant Systems", ["Armando Fox", "Eric A. Brewer"], 1999),
    "paxos": ("Paxos Made Moderately Complex", ["Robbert van Renesse", "Deniz Altinbuken"], 2015),
    "tiered": ("Tiered Replication: A Cost-effective Alternative to Full Cluster Geo-replication",
               ["Asaf Cidon", "Robert Escriva", "Sachin Katti"], 2015),
    "unix": ("The UNIX Time-Sharing System", ["Dennis M. Ritchie", "Ken Thompson"], 1974),
}

_NUMBERED = re.compile(r"^(\d+(?:\.\d+)*)\.?\s+([A-Z][A-Za-z][^.]{2,60})$")
_NAMED = re.compile(r"^(abstract|introduction|related work|conclusions?|references|bibliography|acknowledg\w*)\s*$", re.I)


def read_pdf(pdf: Path, max_pages: int | None = None) -> tuple[str, int]:
    """(paper.md, pages) from a PDF's text blocks: page anchors, `##` headings, a `## References` section."""
    import pymupdf as fitz

    out: list[str] = []
    with fitz.open(pdf) as doc:
        pages = doc.page_count
        for i, page in enumerate(doc, start=1):
            if max_pages and i > max_pages:
                break
            out += [page_anchor(i), ""]
            for block in page.get_text("blocks", sort=True):
                if block[6] != 0:
                    continue
                text = " ".join(block[4].split())
                if not text:
                    continue
                m = _NUMBERED.match(text)
                if m:
                    out += [f"{'#' * (m.group(1).count('.') + 2)} {text}", ""]
                elif _NAMED.match(text):
                    out += [f"## {text.title()}", ""]
                else:
                    out += [text, ""]
    return "\n".join(out), pages


def build_vault(ws, corpus: Path, names: list[str]) -> list[str]:
    """Write the named related papers into the workspace's vault (note + paper.md), analyse, commit."""
    from papervault.agents import get_backend
    from papervault.ids import make_key
    from papervault.note_analysis import analyse_paper

    vault = ws.vault
    backend = get_backend("extractive", ws.settings, state_dir=ws.state_dir)
    taken: set[str] = set(vault.paper_ids())
    ids = []
    for name in names:
        title, authors, year = TITLES[name]
        pid = make_key(authors, year, title, taken)
        taken.add(pid)
        md, pages = read_pdf(corpus / RELATED[name])
        meta = PaperMeta(id=pid, title=title, authors=authors, year=year, pages=pages, status="parsed",
                         tags=["storage"] if name in ("megastore", "tiered", "spartan", "elle") else ["systems"],
                         sha256=f"test-{name}", parser="test/fitz-blocks")
        vault.write_note(meta, f"# {title}\n")
        from papervault.vault.store import atomic_write

        atomic_write(vault.fulltext_path(pid), md)
        analyse_paper(vault, pid, backend)
        ids.append(pid)
    vault.commit("test: related papers")
    return ids


def build_corpus_vault(ws, corpus: Path, *, max_pages: int = 3, only: list[str] | None = None) -> dict[str, str]:
    """Every shared-corpus PDF as a parsed, not yet analysed paper (its first `max_pages` pages); returns
    {id: file name}. The related papers get their real titles and authors and the tag `related`."""
    from papervault.ids import make_key
    from papervault.vault.store import atomic_write

    vault = ws.vault
    taken: set[str] = set(vault.paper_ids())
    by_file = {f: n for n, f in RELATED.items()}
    out = {}
    for pdf in sorted(corpus.glob("*.pdf")):
        name = by_file.get(pdf.name)
        if only is not None and name not in only:
            continue
        if name:
            title, authors, year = TITLES[name]
        else:
            title, authors, year = pdf.stem.split("_", 1)[-1].replace("_", " ").replace("-", " "), [], None
        pid = make_key(authors, year, title, taken)
        taken.add(pid)
        md, pages = read_pdf(pdf, max_pages)
        meta = PaperMeta(id=pid, title=title, authors=authors, year=year, pages=pages, status="parsed",
                         tags=["related"] if name else [], sha256=f"test-{pdf.stem[:40]}", parser="test/fitz-blocks")
        vault.write_note(meta, f"# {title}\n")
        atomic_write(vault.fulltext_path(pid), md)
        out[pid] = pdf.name
    vault.commit(f"test: {len(out)} corpus papers, parsed")
    return out
