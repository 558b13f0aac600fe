"""CSL-JSON and Better BibTeX JSON exports, streamed so a 90,000-record file never sits in memory at once.

A CSL-JSON export is a top-level array of items; a Better BibTeX JSON export is an object whose `items` are
Zotero-shaped (`itemType`, `creators`, `citationKey`, `attachments`). Both are read item by item from ijson's
low-level events, with nesting depth and item size bounded while streaming (`papervault.sources.limits`): a file
of 100,000 nested `[` is one problem, not gigabytes of memory. An item with wrong-typed fields becomes a
problem (or a warning), never the end of the import.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any, Callable, Iterator

import ijson

from papervault.models import SourceRecord
from papervault.sources.dedup import normalize_arxiv, normalize_doi
from papervault.sources.files import order_main_first
from papervault.sources.limits import MAX_JSON_DEPTH, MAX_JSON_ITEM_BYTES
from papervault.sources.problems import SourceProblem
from papervault.vault.store import ID_PATTERN
from papervault.sources.zotero import html_to_markdown

Progress = Callable[[int, float], None]   # (records read, fraction of the file read)
_ARXIV_IN_TEXT = re.compile(r"arxiv\s*[:/]\s*([a-z\-]+(?:\.[A-Z]{2})?/\d{7}|\d{4}\.\d{4,5})(v\d+)?", re.I)
_YEAR = re.compile(r"\b(1[5-9]\d\d|20\d\d|2100)\b")


def _text(value: Any, field: str, warnings: list[str]) -> str | None:
    """A field that should be a string; numbers are accepted, lists joined, anything else warned about."""
    if value is None or value == "":
        return None
    if isinstance(value, str):
        return value.strip() or None
    if isinstance(value, (int, float)) and not isinstance(value, bool):
        return str(value)
    if isinstance(value, list) and all(isinstance(v, (str, int, float)) for v in value):
        return " ".join(str(v) for v in value).strip() or None
    warnings.append(f"field {field!r} has type {type(value).__name__}, expected text; ignored")
    return None


def _name_part(value: Any) -> str:
    """A part of a CSL name: a string (or a number, as text), else nothing: a dict or a list is no name."""
    if isinstance(value, str):
        return value.strip()
    return str(value) if isinstance(value, (int, float)) and not isinstance(value, bool) else ""


def _csl_names(value: Any, warnings: list[str]) -> list[str]:
    if value is None:
        return []
    if not isinstance(value, list):
        warnings.append(f"field 'author' has type {type(value).__name__}, expected a list; ignored")
        return []
    out = []
    for a in value:
        if isinstance(a, str):
            out.append(a.strip())
        elif isinstance(a, dict):
            if _name_part(a.get("literal")):
                out.append(_name_part(a["literal"]))
            else:
                given = " ".join(_name_part(a.get(k)) for k in ("given", "non-dropping-particle")).strip()
                family = " ".join(_name_part(a.get(k)) for k in ("dropping-particle", "family")).strip() \
                    if not _name_part(a.get("non-dropping-particle")) else _name_part(a.get("family"))
                name = f"{given} {family}".strip()
                if name:
                    out.append(name)
    return [n for n in out if n]


def _csl_year(value: Any) -> int | None:
    """`issued`: {"date-parts": [[2020, 1]]}, {"raw": "2020-01"}, {"literal": "..."}, or a bare string/number."""
    if isinstance(value, dict):
        parts = value.get("date-parts")
        if isinstance(parts, list) and parts and isinstance(parts[0], list) and parts[0]:
            try:
                y = int(str(parts[0][0]))
                return y if 0 < y < 10000 else None
            except (TypeError, ValueError):
                pass
        value = value.get("raw") or value.get("literal") or value.get("season") or ""
    m = _YEAR.search(str(value)) if value is not None else None
    return int(m.group(1)) if m else None


def _looks_like_key(value: Any) -> str | None:
    """A CSL `id` is the citation key in Better BibTeX exports; Zotero's own exports use numbers or URIs."""
    if isinstance(value, str) and ID_PATTERN.match(value) and not value.isdigit() and not re.fullmatch(r"\d+/\w+", value):
        return value
    return None


def _keywords(value: Any) -> list[str]:
    if isinstance(value, str):
        return [k.strip() for k in re.split(r"[,;]", value) if k.strip()]
    if isinstance(value, list):
        return [str(k.get("tag") if isinstance(k, dict) else k).strip() for k in value if k]
    return []


# CSL-JSON variables kept under their BibTeX names (`PaperMeta.bib`).
CSL_TO_BIB = {"page": "pages", "volume": "volume", "issue": "number", "publisher": "publisher",
              "edition": "edition", "collection-title": "series", "ISBN": "isbn", "ISSN": "issn",
              "publisher-place": "address", "event-place": "location", "event": "eventtitle",
              "genre": "type", "number-of-pages": "pagetotal", "language": "language"}
_CSL_TYPES = {"article-journal": "article", "paper-conference": "inproceedings", "book": "book",
              "chapter": "incollection", "report": "techreport", "thesis": "phdthesis", "webpage": "online",
              "manuscript": "unpublished"}


def csl_bib(item: dict) -> dict[str, str]:
    """The bibliographic variables of a CSL item that a record has no own place for, by their BibTeX names."""
    out: dict[str, str] = {}
    kind = item.get("type")
    if isinstance(kind, str) and kind:
        out["entrytype"] = _CSL_TYPES.get(kind, "misc")
    for var, name in CSL_TO_BIB.items():
        v = item.get(var)
        if isinstance(v, (str, int, float)) and str(v).strip():
            out[name] = str(v).strip()[:2000]
    if "pages" in out:
        out["pages"] = re.sub(r"\s*[-–—]+\s*", "--", out["pages"])
    eds = item.get("editor")
    if isinstance(eds, list):
        names = [" ".join(str(e.get(k, "")) for k in ("given", "family")).strip() or str(e.get("literal", ""))
                 for e in eds if isinstance(e, dict)]
        if any(names):
            out["editor"] = " and ".join(n for n in names if n)
    note = item.get("note")
    if isinstance(note, str) and note.strip():
        out["note"] = note.strip()[:2000]
    return out


def record_from_csl(item: dict, source: str, base: Path) -> SourceRecord:
    """One CSL-JSON item as a record."""
    w: list[str] = []
    key = item.get("citation-key") or item.get("citationKey") or _looks_like_key(item.get("id"))
    note = _text(item.get("note"), "note", w) or ""
    url = _text(item.get("URL"), "URL", w)
    doi_raw = _text(item.get("DOI"), "DOI", w)
    arxiv = normalize_arxiv(doi_raw) or normalize_arxiv(url) or normalize_arxiv(_text(item.get("number"), "number", []))
    m = _ARXIV_IN_TEXT.search(note)
    arxiv = arxiv or (normalize_arxiv(m.group(1)) if m else None)
    return SourceRecord(
        origin="csl", source=f"{source}#{key or item.get('id', '')}", key=key if isinstance(key, str) else None,
        title=_text(item.get("title"), "title", w), authors=_csl_names(item.get("author") or item.get("editor"), w),
        year=_csl_year(item.get("issued")), venue=_text(item.get("container-title"), "container-title", w),
        doi=normalize_doi(doi_raw), arxiv=arxiv, url=url, abstract=_text(item.get("abstract"), "abstract", w),
        tags=_keywords(item.get("keyword")), warnings=w, bib=csl_bib(item),
    )


def _bbt_names(value: Any, warnings: list[str]) -> list[str]:
    """Authors of a Zotero-shaped item; editors (and other creators) only when it has no authors."""
    if not isinstance(value, list):
        return []
    rows = [c for c in value if isinstance(c, dict)]
    primary = [c for c in rows if c.get("creatorType", "author") == "author"] or rows
    out = []
    for c in primary:
        name = c.get("name") or f"{c.get('firstName') or ''} {c.get('lastName') or ''}".strip()
        if name:
            out.append(str(name))
    return out


def record_from_bbt(item: dict, source: str, base: Path) -> SourceRecord:
    """One Better BibTeX JSON item (Zotero-shaped) as a record, with its attachments and notes."""
    w: list[str] = []
    key = item.get("citationKey") or item.get("citekey")
    extra = _text(item.get("extra"), "extra", w) or ""
    url = _text(item.get("url"), "url", w)
    doi_raw = _text(item.get("DOI"), "DOI", w)
    m = _ARXIV_IN_TEXT.search(extra)
    arxiv = normalize_arxiv(doi_raw) or normalize_arxiv(url) or (normalize_arxiv(m.group(1)) if m else None)
    if not doi_raw:   # Zotero keeps DOIs of item types without a DOI field in Extra
        dm = re.search(r"^DOI:\s*(\S+)", extra, re.M | re.I)
        doi_raw = dm.group(1) if dm else None
    pdfs, missing = [], []
    # Read at import only (a file the user chose): the PDF is copied into pdfs/, the note keeps the path as
    # provenance and nothing reads it from the note again (see bibtex.file_field_paths, pdfstore.pdf_of).
    for att in item.get("attachments") or []:
        if not isinstance(att, dict):
            continue
        p = att.get("localPath") or att.get("path")
        if isinstance(p, str) and p.lower().endswith(".pdf"):
            path = Path(p).expanduser()
            path = path if path.is_absolute() else base / path
            (pdfs if path.is_file() else missing).append(str(path))
    if missing:
        w.append(f"attachment(s) not found: {', '.join(missing)}")
    notes = [n.get("note") if isinstance(n, dict) else n for n in item.get("notes") or []]

    year = _csl_year(item.get("date"))
    return SourceRecord(
        origin="csl", source=f"{source}#{key or item.get('key') or item.get('itemID', '')}",
        key=key if isinstance(key, str) else None, title=_text(item.get("title"), "title", w),
        authors=_bbt_names(item.get("creators"), w), year=year,
        venue=_text(item.get("publicationTitle") or item.get("proceedingsTitle") or item.get("bookTitle")
                    or item.get("publisher"), "venue", w),
        doi=normalize_doi(doi_raw), arxiv=arxiv, url=url, abstract=_text(item.get("abstractNote"), "abstractNote", w),
        tags=_keywords(item.get("tags")), zotero_key=item.get("key") if isinstance(item.get("key"), str) else None,
        pdfs=order_main_first(pdfs), reader_notes=[html_to_markdown(n) for n in notes if isinstance(n, str) and n.strip()],
        warnings=w,
    )


class _Counting:
    """A binary file wrapper that counts bytes read, for progress over a huge file and the item size bound."""

    def __init__(self, fh):
        self.fh, self.read_bytes = fh, 0

    def read(self, n: int = -1) -> bytes:
        data = self.fh.read(n)
        self.read_bytes += len(data)
        return data


class _TooDeep(Exception):
    """The JSON nests deeper than MAX_JSON_DEPTH: the rest of the file cannot be trusted to end."""


class _Skipped:
    """Stands for an item over MAX_JSON_ITEM_BYTES, whose events were consumed without building it."""

    def __init__(self, size: int):
        self.size = size


def _items(counted: _Counting, nested: bool, *, max_depth: int = MAX_JSON_DEPTH,
           max_item: int = MAX_JSON_ITEM_BYTES) -> Iterator[Any]:
    """The elements of the top-level array (or of the top-level object's `items` array when `nested`).

    Built from ijson.basic_parse, which carries no path prefixes (ijson.items' prefixes grow with the depth and
    made 100,000 nested `[` cost gigabytes): the depth is checked on every container opened, and an item whose
    bytes exceed `max_item` is consumed without being built and comes back as `_Skipped`.
    """
    base = 2 if nested else 1   # the depth inside the items array
    depth = 0
    in_items = False
    key = None                  # the last key of the top-level object (nested files)
    stack: list = []            # the containers of the item being built
    keys: list = []             # the pending key of each open map in `stack`
    start = 0
    skipping = False
    # yajl lexes a token that spans reads again from its start at every read: with ijson's 64 KB reads one
    # 50 MB string took 8 s (quadratic); 1 MB reads make it 0.5 s and cost 1 MB.
    for event, value in ijson.basic_parse(counted, use_float=True, buf_size=_READ_BYTES):
        if stack:               # the hot path: inside an item
            if event == "map_key":
                keys[-1] = value
                continue
            if counted.read_bytes - start > max_item:
                stack.clear()
                keys.clear()
                skipping = True     # and on below: the rest of the item is consumed unbuilt
            else:
                if event == "start_map" or event == "start_array":
                    depth += 1
                    if depth > max_depth:
                        raise _TooDeep()
                    stack.append({} if event == "start_map" else [])
                    keys.append(None)
                    continue
                if event == "end_map" or event == "end_array":
                    depth -= 1
                    value = stack.pop()
                    keys.pop()
                    if not stack:
                        yield value
                        continue
                parent = stack[-1]      # a closed container or a scalar joins the one that holds it
                if parent.__class__ is list:
                    parent.append(value)
                else:
                    parent[keys[-1]] = value
                continue
        if event in _START:
            depth += 1
            if depth > max_depth:
                raise _TooDeep()
        elif event in _END:
            depth -= 1
        if skipping:            # an item over `max_item`, consumed unbuilt to its end
            if depth == base and event in _END:
                skipping = False
                yield _Skipped(counted.read_bytes - start)
            continue
        if not in_items:
            if not nested:
                in_items = event == "start_array" and depth == 1
            elif depth == 1 and event == "map_key":
                key = value
            elif event == "start_array" and depth == 2 and key == "items":
                in_items = True
            continue
        if depth < base:        # the items array closed
            in_items, key = False, None
        elif event in _START:   # an item begins
            start = counted.read_bytes
            stack.append({} if event == "start_map" else [])
            keys.append(None)
        else:
            yield value         # a scalar item: the caller reports it


_READ_BYTES = 1 << 20
_START = frozenset({"start_map", "start_array"})
_END = frozenset({"end_map", "end_array"})


def read_csl(path: str | Path, *, progress: Progress | None = None, every: int = 5000) -> Iterator[SourceRecord | SourceProblem]:
    """Records of a CSL-JSON (array) or Better BibTeX JSON (object with `items`) file, streamed item by item."""
    path = Path(path).expanduser().resolve()
    src = str(path)
    try:
        size = path.stat().st_size or 1
        fh = open(path, "rb")
    except OSError as exc:
        yield SourceProblem(src, f"cannot read: {exc.strerror or exc}")
        return
    with fh:
        head = fh.read(4096).lstrip(b"\xef\xbb\xbf \t\r\n")
        fh.seek(0)
        if head[:1] == b"[":
            prefix, convert = "item", record_from_csl
        elif head[:1] == b"{":
            prefix, convert = "items.item", record_from_bbt
        else:
            yield SourceProblem(src, "not a CSL-JSON or Better BibTeX JSON export (expected [ or { first)")
            return
        counted = _Counting(fh)
        n, broken = 0, False
        try:
            for item in _items(counted, prefix == "items.item"):
                n += 1
                if isinstance(item, _Skipped):
                    yield SourceProblem(src, f"item {n} is larger than {MAX_JSON_ITEM_BYTES >> 20} MB; skipped")
                    continue
                if not isinstance(item, dict):
                    yield SourceProblem(src, f"item {n} is a {type(item).__name__}, not an object; skipped")
                    continue
                if convert is record_from_bbt and "itemType" not in item and ("type" in item or "issued" in item):
                    conv = record_from_csl    # an object with a CSL `items` list
                else:
                    conv = convert
                try:
                    yield conv(item, src, path.parent)
                except Exception as exc:  # one odd item never stops the file
                    yield SourceProblem(src, f"item {n} ({item.get('id') or item.get('title') or '?'}) skipped: "
                                             f"{type(exc).__name__}: {exc}")
                if progress and n % every == 0:
                    progress(n, counted.read_bytes / size)
        except _TooDeep:
            broken = True
            yield SourceProblem(src, f"JSON nested deeper than {MAX_JSON_DEPTH} levels after item {n}; the rest of "
                                     "the file was not read (not a CSL-JSON export?)")
        except ijson.JSONError as exc:
            broken = True
            first = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
            yield SourceProblem(src, f"invalid JSON after item {n} ({first}); the items before it were read")
        if progress:
            progress(n, 1.0)
        if n == 0 and prefix == "items.item" and not broken:
            yield SourceProblem(src, "a JSON object without an `items` list: not a Better BibTeX export")
