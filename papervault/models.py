"""Plain data passed between the stages: parsed papers, note metadata, chunks and search hits.

These are the contracts between `parse/`, `vault/`, `chunking/`, `index/`, `agents/` and `survey/`.
"""

from __future__ import annotations

import datetime as _dt
from dataclasses import dataclass, field
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field


# --- parse ---------------------------------------------------------------------------------------

@dataclass
class Figure:
    """A figure cropped from the PDF. `filename` is relative to the paper's `figures/` folder."""

    number: str            # "3", "A1"; "" when uncaptioned
    page: int              # 1-based
    caption: str
    filename: str          # "fig-3.png"
    png: bytes = field(default=b"", repr=False)
    kind: Literal["raster", "vector", "page"] = "raster"
    bbox: tuple[float, float, float, float] | None = None


@dataclass
class Table:
    number: str
    page: int
    caption: str
    markdown: str          # a Markdown (or HTML, when cells merge) table


@dataclass
class Reference:
    raw: str
    doi: str | None = None
    arxiv: str | None = None
    title: str | None = None
    year: int | None = None
    page: int | None = None    # 1-based page where the entry starts (paper.md lists it under that page's anchor)


@dataclass
class Heading:
    title: str
    level: int             # 1 = top-level section ("1 Introduction"), 2 = subsection ...
    page: int
    number: str = ""       # "3.2" when numbered


@dataclass
class ParsedPaper:
    """The result of parsing one PDF.

    `markdown` is the body of `paper.md`: every page starts with an anchor line
    `<a id="page-N"></a>` (see `papervault.vault.paper.page_anchor`), headings are ATX (`## 1 Introduction`), figures are embedded
    as `![Figure N: caption](figures/fig-N.png)`, tables as Markdown tables preceded by their caption.
    """

    markdown: str
    pages: int
    title: str = ""
    authors: list[str] = field(default_factory=list)
    year: int | None = None
    abstract: str = ""
    doi: str | None = None
    arxiv: str | None = None
    keywords: list[str] = field(default_factory=list)
    venue: str | None = None
    # Where each header field came from: "layout" (the first page's text) or "pdf-xmp" (document info).
    provenance: dict[str, str] = field(default_factory=dict)
    headings: list[Heading] = field(default_factory=list)
    figures: list[Figure] = field(default_factory=list)
    tables: list[Table] = field(default_factory=list)
    references: list[Reference] = field(default_factory=list)
    ocr_pages: list[int] = field(default_factory=list)
    repaired_pages: list[int] = field(default_factory=list)   # pages whose text layer was repaired
    page_labels: list[str] = field(default_factory=list)      # printed page labels (see papervault.pages)
    warnings: list[str] = field(default_factory=list)
    parser: str = ""       # "pymupdf/<parser version>"
    sha256: str = ""


# --- vault ---------------------------------------------------------------------------------------

Status = Literal["metadata", "parsed", "analysed", "reviewed"]


class PaperMeta(BaseModel):
    """The YAML frontmatter of `note.md`. Unknown keys are kept (templates may add fields)."""

    model_config = ConfigDict(extra="allow")

    id: str
    title: str = ""
    authors: list[str] = Field(default_factory=list)
    year: int | None = None
    venue: str | None = None
    doi: str | None = None
    arxiv: str | None = None
    url: str | None = None
    zotero_key: str | None = None
    abstract: str | None = None
    sources: list[str] = Field(default_factory=list)
    files: list[str] = Field(default_factory=list, description="PDF paths: main text first, then supplements")
    sha256: str | None = None
    pdf: str | None = Field(None, description="SHA-256 of the main PDF kept in the workspace's pdfs/ store "
                            "(`pdfs/<pdf>.pdf`, see papervault.pdfstore); the original may move or vanish")
    pages: int | None = None
    tags: list[str] = Field(default_factory=list)
    collections: list[str] = Field(default_factory=list)
    status: Status = "parsed"
    parser: str | None = None
    analyser: str | None = None
    template: str | None = None
    ocr_pages: list[int] = Field(default_factory=list)
    repaired_pages: list[int] = Field(default_factory=list, description="pages whose text layer was repaired")
    page_labels: list[str] = Field(default_factory=list, description="printed page of each PDF page; [] = 1..N")
    bib: dict[str, str] = Field(default_factory=dict, description="the other bibliographic fields a source gave "
                                "(pages, volume, number, publisher, editor, ...), by their BibTeX names")
    provenance: dict[str, str] = Field(default_factory=dict, description="where each identity field came from: "
                                       "bibtex, csl, zotero, doi, arxiv, pdf-xmp, layout, model, user")
    retracted: bool | None = Field(None, description="retraction status, when Crossref or OpenAlex reports it")
    aliases: list[str] = Field(default_factory=list, description="former ids (`papervault rekey`): [@old] resolves")
    code: list[str] = Field(default_factory=list)
    # structured fields written by the analysis, tabulated by the survey
    method: str | None = None
    datasets: list[str] = Field(default_factory=list)
    metrics: list[str] = Field(default_factory=list)
    baselines: list[str] = Field(default_factory=list)
    key_results: list[dict[str, Any]] = Field(default_factory=list)
    coverage: dict[str, Any] = Field(default_factory=dict)
    identity: dict[str, Any] | None = Field(None, description="whose reading of the first page the identity "
                                            "fields keep: {source: parse|model, disagreed, model, uncertain, asked}")
    generated_hash: str | None = Field(None, description="hash of the body the tool last wrote")
    created: str | None = None
    updated: str | None = None


def now_iso() -> str:
    return _dt.datetime.now(_dt.timezone.utc).replace(microsecond=0).isoformat()


# --- index ---------------------------------------------------------------------------------------

Level = Literal["paper", "section", "paragraph", "figure", "table", "note"]


@dataclass
class Chunk:
    """One row of the `chunks` table before embedding. `id` derives from the content (stable re-index)."""

    id: str
    paper_id: str
    level: str
    text: str
    section_path: str = ""
    page_start: int | None = None
    page_end: int | None = None
    ordinal: int = 0              # position within the paper, for neighbour expansion
    parent_id: str | None = None  # the section chunk a paragraph belongs to
    extra: dict[str, Any] = field(default_factory=dict)   # e.g. {"figure": "figures/fig-3.png"}


class Hit(BaseModel):
    """A search result; the JSON of `papervault search --json` and the MCP `search` tool."""

    paper_id: str
    title: str
    level: str
    section: str
    page: int | None
    text: str
    score: float
    source: str | None
    page_end: int | None = None
    chunk_id: str | None = None
    anchor: str | None = None     # "papers/<id>/paper.md#page-N"
    context: list[dict[str, Any]] = Field(default_factory=list)


# --- sources -------------------------------------------------------------------------------------

class SourceRecord(BaseModel):
    """One paper as a source describes it, before dedup: metadata plus where its PDF(s) are, if anywhere.

    Every reader in `papervault.sources` (local files, BibTeX, CSL-JSON, Zotero, arXiv, URLs) yields these;
    `papervault.ingest` dedups them against each other and the vault, then parses and writes.
    """

    model_config = ConfigDict(extra="forbid")

    origin: str                                  # "pdf" | "bibtex" | "csl" | "zotero" | "arxiv" | "url" | "doi"
    source: str                                  # the path or URL the record came from (kept in `sources`)
    key: str | None = None                       # the user's own citation key (BibTeX / Better BibTeX), kept
    title: str | None = None
    authors: list[str] = Field(default_factory=list)   # "First Last"
    year: int | None = None
    venue: str | None = None
    doi: str | None = None
    arxiv: str | None = None
    url: str | None = None
    abstract: str | None = None
    tags: list[str] = Field(default_factory=list)
    collections: list[str] = Field(default_factory=list)
    zotero_key: str | None = None
    pdfs: list[str] = Field(default_factory=list)      # local paths, main text first, then supplements
    pdf_url: str | None = None                          # to download when no local PDF
    reader_notes: list[str] = Field(default_factory=list)  # Markdown: the reader's own notes/annotations
    warnings: list[str] = Field(default_factory=list)
    reason: str | None = None                           # why a search chose this record (arXiv search)
    bib: dict[str, str] = Field(default_factory=dict)   # the other bibliographic fields (BibTeX names)
