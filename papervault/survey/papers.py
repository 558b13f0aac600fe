"""What every survey stage knows of a selected paper (`SurveyPaper`, made by `select.load_papers`) and how a
survey cites one (`cite`). A leaf of the survey package: the stages import it, it imports none of them.
"""

from __future__ import annotations

import hashlib
import re
from dataclasses import dataclass, field
from typing import Any

from papervault.ids import last_name
from papervault.pages import printed_for
from papervault.vault.paper import trailing_page_citation


@dataclass
class SurveyPaper:
    """A selected paper as the survey stages see it: metadata, structured analysis, note and full text."""

    id: str
    title: str
    authors: list[str] = field(default_factory=list)
    year: int | None = None
    venue: str | None = None
    doi: str | None = None
    arxiv: str | None = None
    url: str | None = None
    abstract: str = ""
    method: str = ""
    datasets: list[str] = field(default_factory=list)
    metrics: list[str] = field(default_factory=list)
    baselines: list[str] = field(default_factory=list)
    key_results: list[dict[str, Any]] = field(default_factory=list)
    tags: list[str] = field(default_factory=list)
    note: str = ""                  # the note body (Markdown)
    fulltext: str = ""              # paper.md
    figures: list[str] = field(default_factory=list)   # "figures/fig-1.png", relative to the paper folder
    extra: dict[str, Any] = field(default_factory=dict)
    bib: dict[str, str] = field(default_factory=dict)      # pages, volume, publisher, ... (BibTeX names)
    page_labels: list[str] = field(default_factory=list)   # printed page of each PDF page (papervault.pages)

    @property
    def digest(self) -> str:
        """What the survey's derived stages depend on: the hash of metadata, note and full text."""
        h = hashlib.sha256()
        for part in (self.id, self.title, "|".join(self.authors), str(self.year), self.venue or "", self.doi or "",
                     self.arxiv or "", self.abstract, self.method, "|".join(self.datasets), "|".join(self.metrics),
                     "|".join(self.baselines), repr(self.key_results), self.note, self.fulltext,
                     repr(sorted(self.bib.items())), "|".join(self.page_labels)):
            h.update(part.encode("utf-8", "replace"))
            h.update(b"\0")
        return h.hexdigest()[:16]

    @property
    def analysis(self) -> dict[str, list[dict[str, Any]]]:
        """The statements of the paper's analysed note by section ("summary", "method", "contributions",
        "experiments", ...), each `{"text", "page"}` with the PDF page its link opens (None without one)."""
        return note_statements(self.note)

    @property
    def short_author(self) -> str:
        """"Lamport", "Lamport and Shostak", "Lamport et al." as a sentence names the paper."""
        names = [last_name(a) for a in self.authors if a.strip()]
        if not names:
            return self.title[:60] or self.id
        if len(names) == 1:
            return names[0]
        if len(names) == 2:
            return f"{names[0]} and {names[1]}"
        return f"{names[0]} et al."


def cite(pid: str, page: int | None = None) -> str:
    """A Pandoc citation of a vault paper, with a page locator when the page is known: the page the paper
    prints (`p. 223`), not the PDF's page index."""
    return f"[@{pid}, p. {printed_for(pid, page)}]" if page else f"[@{pid}]"


_NOTE_HEADING = re.compile(r"^##\s+(?P<name>.+?)\s*$")      # a section of note.md ("## Summary")
_NOT_STATEMENTS = ("coverage", "main figures", "code and reproducibility")


def note_statements(note: str) -> dict[str, list[dict[str, Any]]]:
    """The bulleted statements of an analysed note (`templates/note.md.j2`), by section title in lower case,
    with the page each links to. The extractive note's quotation marks are taken off; the sections that list
    what the note does not cover, its figures or its code links are not statements and are left out."""
    out: dict[str, list[dict[str, Any]]] = {}
    name = ""
    for line in note.splitlines():
        h = _NOTE_HEADING.match(line)
        if h:
            name = h.group("name").strip().lower()
            continue
        line = line.strip()
        if not name or name in _NOT_STATEMENTS or not line.startswith("- "):
            continue
        text, page = trailing_page_citation(line[2:])
        text = text.strip().strip("“”\"").strip()
        if text:
            out.setdefault(name, []).append({"text": text, "page": page})
    return out
