"""Inputs of `papervault add` (paths, ids, URLs, Zotero, arXiv search) resolved into records, lazily, one by one.

Whatever cannot be read becomes a `SourceProblem` with a one-line message, and the rest goes on.
"""

from __future__ import annotations

import json
import logging
import re
from pathlib import Path
from typing import Iterator

from papervault import doi as DOI
from papervault.errors import PapervaultError, SourceError
from papervault.models import SourceRecord
from papervault.sources import arxiv as arxiv_api
from papervault.sources import web
from papervault.sources.bibtex import read_bibtex
from papervault.sources.csl import read_csl, record_from_csl
from papervault.sources.dedup import normalize_arxiv, normalize_doi
from papervault.sources.files import records_from_paths
from papervault.sources.limits import field_value
from papervault.sources.problems import SourceProblem
from papervault.sources.zotero import read_library
from papervault.workspace import Workspace

log = logging.getLogger(__name__)
_UNSET = object()
BIB_SUFFIXES = {".bib", ".bibtex", ".biblatex"}
JSON_SUFFIXES = {".json", ".csljson", ".csl"}
_BARE_ARXIV = re.compile(r"\A(\d{4}\.\d{4,5}(v\d+)?|[a-z\-]+(\.[A-Z]{2})?/\d{7}(v\d+)?)\Z")


def classify(item: str) -> str:
    """What an input is: path | bibtex | csl | pdf | arxiv | doi | url | unknown."""
    s = item.strip()
    p = Path(s).expanduser()
    if p.exists():
        if p.is_dir():
            return "path"
        suffix = p.suffix.lower()
        if suffix in BIB_SUFFIXES:
            return "bibtex"
        if suffix in JSON_SUFFIXES:
            return "csl"
        if suffix == ".pdf":
            return "pdf"
        try:
            with open(p, "rb") as fh:
                head = fh.read(2048).lstrip(b"\xef\xbb\xbf \t\r\n")
        except OSError:
            return "path"
        if head.startswith(b"%PDF-"):
            return "pdf"
        if head[:1] in (b"[", b"{"):
            return "csl"
        if re.match(rb"(%[^\n]*\n\s*)*@", head):
            return "bibtex"
        return "path"
    if s.lower().startswith("arxiv:") or re.match(r"^(https?://)?(www\.|export\.)?arxiv\.org/(abs|pdf|html)/", s, re.I) \
            or _BARE_ARXIV.match(s):
        return "arxiv" if normalize_arxiv(s) else "unknown"
    if DOI.INPUT.match(s):
        return "arxiv" if normalize_arxiv(s) else "doi"
    if re.match(r"^https?://", s, re.I):
        return "url"
    return "unknown"


def resolve_doi(doi: str, settings) -> SourceRecord:
    """Metadata for a DOI by content negotiation (CSL-JSON from the DOI resolver); a metadata-only record.

    A `link` to a PDF in the answer becomes the record's `pdf_url`, tried later; most publishers' links need a
    subscription, so the paper stays metadata-only until its PDF is added.
    """
    norm = normalize_doi(doi)
    if not norm or any(seg in (".", "..") for seg in norm.split("/")):     # never a path that climbs on the resolver
        raise SourceError(f"{doi!r} is not a DOI", fix="DOIs look like 10.1145/568425.568433")
    url = settings.sources.doi_url.rstrip("/") + "/" + norm
    body, ctype = web.get(url, web.feed_policy(web.sources_policy(settings)),
                          accept="application/vnd.citationstyles.csl+json, application/json;q=0.5")
    try:
        item = json.loads(body)
    except ValueError:
        raise SourceError(f"doi:{norm}: the resolver answered {ctype or 'something'} instead of CSL-JSON",
                          fix="check [sources] doi_url, or add the paper as a BibTeX entry") from None
    if not isinstance(item, dict):
        raise SourceError(f"doi:{norm}: unexpected answer from the resolver", fix="add the paper as a BibTeX entry")
    rec = record_from_csl(item, f"https://doi.org/{norm}", Path.cwd())
    links = item.get("link") if isinstance(item.get("link"), list) else []
    pdf = next((url for l in links[:100] if isinstance(l, dict) and l.get("content-type") == "application/pdf"
                and (url := field_value("pdf_url", l.get("URL")))), None)     # a URL is text, bounded, or none
    return rec.model_copy(update={"origin": "doi", "source": f"https://doi.org/{norm}", "key": None,
                                  "doi": rec.doi or norm, "pdf_url": pdf, "url": rec.url or f"https://doi.org/{norm}"})


def fetch_pdf(record: SourceRecord, settings, dest_dir: Path) -> SourceRecord:
    """The record with its `pdf_url` (or arXiv PDF) downloaded into `dest_dir` and listed in `pdfs`."""
    if record.pdfs:
        return record
    if record.arxiv:
        path = arxiv_api.download(record, dest_dir, settings)
    elif record.pdf_url:
        path = web.download_pdf(record.pdf_url, dest_dir, web.sources_policy(settings))
    else:
        return record
    return record.model_copy(update={"pdfs": [str(path)]})


def _download_dir(settings, workspace) -> Path:
    if workspace is None:
        workspace = Workspace.resolve()
    return Path(workspace.cache_dir) / "downloads"


def _url_record(url: str, settings, dest: Path) -> SourceRecord:
    """A direct PDF URL, downloaded now (so dedup and parsing see the file); HTML or a timeout is a SourceError."""
    path = web.download_pdf(url, dest, web.sources_policy(settings))
    return SourceRecord(origin="url", source=url, url=url, pdfs=[str(path)])


def records_from_inputs(inputs: list[str], settings, *, workspace=None, zotero=_UNSET, collection: str | None = None,
                        since=None, arxiv_search: str | None = None, max_results: int = 10,
                        base_dir: str | None = None, embedder=None) -> Iterator[SourceRecord | SourceProblem]:
    """Records for every input of `papervault add`, in order; problems for inputs that cannot be read.

    Args:
        inputs: PDF files and folders, .bib files, CSL-JSON / Better BibTeX JSON files, arXiv ids and URLs,
            DOIs and doi.org links, direct PDF URLs.
        zotero: a Zotero data directory; None for the default (settings, then ~/Zotero); omit for no Zotero.
        collection, since: Zotero filters. arxiv_search, max_results: an arXiv search and how many to keep.
    """
    dest = _download_dir(settings, workspace)
    paths: list[str] = []
    arxiv_ids: list[tuple[str, str]] = []

    def flush_paths():
        if paths:
            yield from records_from_paths(list(paths))
            paths.clear()

    for raw in inputs:
        kind = classify(str(raw))
        try:
            if kind in ("path", "pdf"):
                paths.append(str(raw))
                continue
            yield from flush_paths()
            if kind == "bibtex":
                yield from read_bibtex(raw)
            elif kind == "csl":
                yield from read_csl(raw, progress=lambda n, frac: log.info("%s: %d records (%.0f%%)", raw, n, frac * 100))
            elif kind == "arxiv":
                arxiv_ids.append((str(raw), normalize_arxiv(raw)))
            elif kind == "doi":
                yield resolve_doi(raw, settings)
            elif kind == "url":
                yield _url_record(str(raw).strip(), settings, dest)
            else:
                yield SourceProblem(str(raw), "not a file, folder, arXiv id, DOI or URL that papervault understands")
        except PapervaultError as exc:
            yield SourceProblem(str(raw), str(exc))
    yield from flush_paths()

    if arxiv_ids:
        try:
            found = arxiv_api.fetch_metadata([a for _, a in arxiv_ids], settings)
        except PapervaultError as exc:
            found = {}
            for raw, _ in arxiv_ids:
                yield SourceProblem(raw, str(exc))
            arxiv_ids = []
        for raw, ax in arxiv_ids:
            if ax in found:
                yield found[ax]
            else:
                yield SourceProblem(raw, f"arXiv has no paper {ax}; check the id")

    if zotero is not _UNSET:
        data_dir = zotero or settings.zotero.data_dir
        try:
            yield from read_library(data_dir, collection=collection, since=since,
                                    base_dir=base_dir or settings.zotero.base_dir)
        except PapervaultError as exc:
            yield SourceProblem(str(data_dir or "Zotero"), str(exc))

    if arxiv_search:
        try:
            for cand in arxiv_api.search(arxiv_search, max_results, settings, embedder=embedder):
                log.info("arXiv %s chosen: %s", cand.record.arxiv, cand.reason)
                yield cand.record
        except PapervaultError as exc:
            yield SourceProblem(f"arXiv search {arxiv_search!r}", str(exc))
