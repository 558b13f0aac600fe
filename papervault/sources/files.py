"""Local PDFs and folders of them; which of a paper's PDFs is the main text and which are supplements."""

from __future__ import annotations

import os
import re
from pathlib import Path
from typing import Iterable, Iterator

from papervault.models import SourceRecord
from papervault.sources.problems import SourceProblem

# Names of supplementary files: "paper_SI.pdf", "Supplementary Material.pdf", "appendix.pdf", "mmc1.pdf" (Elsevier).
SUPPLEMENT = re.compile(
    r"(^|[\s_\-.(])(supp|suppl|supplement|supplementary|supplemental|si|esi|appendix|appendices|"
    r"supporting|extended[\s_\-]?data|mmc\d*|moesm\d*|s\d)([\s_\-.)]|information|material|$)", re.I)


def is_supplement(path: str | Path) -> bool:
    """True when a file's name says it is supplementary material, not a main text."""
    return bool(SUPPLEMENT.search(Path(path).stem))


def _pages(path: str) -> int:
    try:
        import pymupdf  # deferred: PyMuPDF (~60 ms) only to count a PDF's pages; `add x.bib` needs none

        with pymupdf.open(path) as doc:
            return doc.page_count
    except Exception:  # unreadable files sort last; the parse stage reports them
        return 0


def order_main_first(paths: Iterable[str]) -> list[str]:
    """`paths` with the main text first: not named like a supplement, then most pages, then largest file.

    Sort order of names says nothing (Zotero's "Full Text PDF" vs "Submitted Version"), so it is never used.
    """
    paths = list(dict.fromkeys(str(p) for p in paths))
    if len(paths) < 2:
        return paths

    def size(p: str) -> int:
        try:
            return os.path.getsize(p)
        except OSError:
            return 0

    main = max(paths, key=lambda p: (not is_supplement(p), _pages(p), size(p), -paths.index(p)))
    return [main] + [p for p in paths if p != main]


def _group_folder(pdfs: list[Path]) -> list[list[Path]]:
    """PDFs of one folder grouped into papers: `x_supplement.pdf` joins `x.pdf` when `x.pdf` is there."""
    mains = [p for p in pdfs if not is_supplement(p)]
    groups: dict[Path, list[Path]] = {p: [p] for p in mains}
    for p in pdfs:
        if p in groups:
            continue
        stem = p.stem.lower()
        owner = max((m for m in mains if stem.startswith(m.stem.lower()) and len(m.stem) >= 3),
                    key=lambda m: len(m.stem), default=None)
        if owner is None:
            groups[p] = [p]
        else:
            groups[owner].append(p)
    return [groups[k] for k in sorted(groups)]


def _pdfs_in(folder: Path) -> Iterator[list[Path]]:
    """Groups of PDFs under `folder`, recursively; hidden folders skipped, other files ignored cheaply."""
    for root, dirs, files in os.walk(folder):
        dirs[:] = sorted(d for d in dirs if not d.startswith("."))
        pdfs = [Path(root) / f for f in sorted(files) if f.lower().endswith(".pdf") and not f.startswith(".")]
        if pdfs:
            yield from _group_folder(pdfs)


def pdf_record(paths: list[Path]) -> SourceRecord:
    files = order_main_first(str(p.resolve()) for p in paths)
    return SourceRecord(origin="pdf", source=files[0], pdfs=files)


def records_from_paths(inputs: Iterable[str | Path]) -> Iterator[SourceRecord | SourceProblem]:
    """One record per paper in PDF files and folders (searched recursively); anything else is a problem."""
    for raw in inputs:
        p = Path(raw).expanduser()
        if p.is_dir():
            found = False
            for group in _pdfs_in(p):
                found = True
                yield pdf_record(group)
            if not found:
                yield SourceProblem(str(p), "no PDF files in this folder")
        elif p.is_file():
            if p.suffix.lower() != ".pdf":
                with open(p, "rb") as fh:
                    if fh.read(5) != b"%PDF-":
                        yield SourceProblem(str(p), "not a PDF, .bib or CSL-JSON file; pass papers as PDFs")
                        continue
            yield pdf_record([p])
        else:
            yield SourceProblem(str(raw), "no such file or folder")
