"""What an import produces and how one record's metadata is put together, apart from the batch that writes it
(`papervault.ingest`): the report of an `add` (`AddReport`, its `Problem`s), the records read from the inputs,
the PDF's reading merged under the source's own metadata, where each identity field came from, and whether an
id may be built from the whole identity."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Iterator

from papervault import pages
from papervault.ids import READ_FROM_PDF
from papervault.lineshapes import is_person_name
from papervault.models import PaperMeta, ParsedPaper, SourceRecord
from papervault.sources.problems import SourceProblem
from papervault.workspace import Workspace


@dataclass
class Problem:
    source: str
    error: str

    def as_dict(self) -> dict:
        return {"source": self.source, "error": self.error}


@dataclass
class AddReport:
    added: list[str] = field(default_factory=list)
    merged: list[dict] = field(default_factory=list)
    unchanged: list[str] = field(default_factory=list)
    problems: list[Problem] = field(default_factory=list)
    commit: str | None = None
    warnings: list[Problem] = field(default_factory=list)   # imported, but not all of it (a missing PDF)
    chosen: list[dict] = field(default_factory=list)        # why a search picked each record
    code_links: list[dict] = field(default_factory=list)    # {paper_id, repo, how, evidence}: new papers -> repos
    pdfs_kept: list[str] = field(default_factory=list)      # papers added earlier whose PDF the store now keeps
    reanalysed: list[str] = field(default_factory=list)     # unchanged papers analysed again (--reanalyse)
    commits: list[str] = field(default_factory=list)        # every vault commit of the run (`commit`: the last)
    timings: dict = field(default_factory=dict)             # wall and CPU seconds per phase (papervault.timing)
    recovered: dict = field(default_factory=dict)           # what undoing a killed run did: {undone, kept}
    index: dict | None = None           # the index step of `papervault.app.adding.add` (None: not run, --no-index)
    arrival: dict | None = None         # the full parses left to the arrival worker (papervault.app.arrival)

    def as_dict(self) -> dict:
        return {"added": self.added, "merged": self.merged, "unchanged": self.unchanged,
                "problems": [p.as_dict() for p in self.problems], "commit": self.commit,
                "warnings": [w.as_dict() for w in self.warnings], "chosen": self.chosen,
                "code_links": self.code_links, "pdfs_kept": self.pdfs_kept, "reanalysed": self.reanalysed,
                "commits": self.commits, "timings": self.timings, "recovered": self.recovered,
                "index": self.index, "arrival": self.arrival}


def _records(inputs: list[str], ws: Workspace, options: dict) -> Iterator[SourceRecord | Problem]:
    # deferred: the readers and the web client (httpx) load only when records are read, not for `list`/`show`
    from papervault.sources.resolve import records_from_inputs

    for item in records_from_inputs(inputs, ws.settings, workspace=ws, **options):
        if isinstance(item, SourceProblem):
            yield Problem(f"{item.source}:{item.line}" if item.line else item.source, item.message)
        else:
            yield item


def _merge_parsed(rec: SourceRecord, parsed: ParsedPaper | None) -> SourceRecord:
    """Fill what the source did not say from what the PDF says; a source's metadata always wins."""
    if parsed is None:
        return rec
    upd = {f: getattr(parsed, f) for f in ("title", "authors", "year", "venue", "doi", "arxiv", "abstract")
           if not getattr(rec, f) and getattr(parsed, f)}
    return rec.model_copy(update=upd) if upd else rec


# Where a record's own metadata came from, for `provenance` (the order of trust: the user's own metadata,
# then identifiers resolved online, then the PDF's document information, then its layout).
_ORIGIN_SOURCE = {"bibtex": "bibtex", "csl": "csl", "zotero": "zotero", "arxiv": "arxiv", "doi": "doi",
                  "url": "url"}
IDENTITY_FIELDS = ("title", "authors", "year", "venue", "doi", "arxiv")


def _provenance(rec: SourceRecord, parsed: ParsedPaper | None) -> dict[str, str]:
    """Field -> source of each identity field, as `_merge_parsed` fills them."""
    out: dict[str, str] = {}
    for f in IDENTITY_FIELDS:
        if getattr(rec, f) and rec.origin in _ORIGIN_SOURCE:
            out[f] = _ORIGIN_SOURCE[rec.origin]
        elif parsed is not None and getattr(parsed, f):
            out[f] = parsed.provenance.get(f, "layout")
    return out


def key_confident(prov: dict[str, str], parsed: ParsedPaper | None) -> bool:
    """Whether an id may be built from the whole identity: not when the title is the layout's low-confidence
    read, or the PDF gave the title and no author, or the first author came from the PDF and is not a person's
    name."""
    if parsed is None:
        return True
    if prov.get("title") in READ_FROM_PDF and (parsed.provenance.get("title_confidence") == "low"
                                               or not prov.get("authors")):
        return False                      # no "anon" id for a paper whose identity only its PDF gave
    return not (prov.get("authors") in READ_FROM_PDF and parsed.authors and not is_person_name(parsed.authors[0]))


def _page_labels(parsed: ParsedPaper, bib: dict[str, str]) -> list[str]:
    """The printed page labels: the PDF's (own labels or printed numbers), else the `pages` field's first page."""
    return list(parsed.page_labels) or pages.from_pages_field(bib.get("pages"), parsed.pages)


def _meta_from(rec: SourceRecord, paper_id: str) -> PaperMeta:
    return PaperMeta(
        id=paper_id, title=rec.title or Path(rec.source).stem, authors=rec.authors, year=rec.year,
        venue=rec.venue, doi=rec.doi, arxiv=rec.arxiv, url=rec.url, zotero_key=rec.zotero_key,
        abstract=rec.abstract, sources=[rec.source], tags=list(rec.tags), collections=list(rec.collections),
        status="metadata", bib=dict(rec.bib),
    )


def _union(a: list, b: list) -> list:
    return list(dict.fromkeys([*a, *b]))
