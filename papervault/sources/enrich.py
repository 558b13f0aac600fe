"""Online enrichment of a paper's identity: DOI through Crossref (then OpenAlex), arXiv id through the arXiv
API, a title search on Crossref when no identifier is printed.

Order of trust: a field a person or their library gave (`provenance` user, bibtex, csl, zotero) is never
replaced; fields read from the PDF (layout, pdf-xmp) or missing are replaced by the resolved record's, marked
`doi` or `arxiv`. Bibliographic fields only fill gaps. Retraction status is recorded when a service reports
it. Off unless `[sources] online = true`: offline, `enrich` fails at once, before any request.

A paper without an abstract gets the service's (Crossref's JATS abstract, else OpenAlex's inverted index read
back into text, or arXiv's summary), marked with the service in `provenance.abstract`: a record known by its
title alone (one imported from a reference list or a bare BibTeX entry) then has text that search and a
survey's topic selection can judge. An abstract the paper already has is never replaced.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field
from urllib.parse import quote

from papervault.errors import SourceError
from papervault.vault.head import refresh_head
from papervault.ids import READ_FROM_PDF, key_base, normalize_title
from papervault.sources.limits import (FIELD_CAPS, MAX_AUTHOR_CHARS, MAX_AUTHORS, bib_fields, field_value,
                                       name_list, text_value, year_value)
from papervault.sources.web import HttpPolicy, feed_policy, get
from papervault.wording import plural
from papervault.sources.arxiv import fetch_metadata

TRUSTED = frozenset({"user", "bibtex", "csl", "zotero"})
IDENTITY = ("title", "authors", "year", "venue", "doi")
ABSTRACT_CHARS = 5000       # an abstract is kept up to this long
ABSTRACT_WORDS = 1500       # ... and OpenAlex's inverted index read back up to this many words


@dataclass
class Found:
    """What a service says about a paper."""

    service: str                      # crossref | openalex | arxiv
    via: str                          # provenance label: doi | arxiv
    title: str | None = None
    authors: list[str] = field(default_factory=list)
    year: int | None = None
    venue: str | None = None
    doi: str | None = None
    bib: dict[str, str] = field(default_factory=dict)
    retracted: bool | None = None
    abstract: str | None = None
    abstract_from: str | None = None      # the service the abstract came from, when not `service`


def require_online(settings) -> None:
    if not settings.sources.online:
        raise SourceError("online enrichment is off",
                          fix="set [sources] online = true in papervault.toml (or PAPERVAULT_SOURCES_ONLINE=1)")


def _policy(settings) -> HttpPolicy:
    s = settings.sources
    return feed_policy(HttpPolicy(delay=s.enrich_delay, timeout=s.timeout, retries=s.retries,
                                  user_agent=s.user_agent, backoff=max(0.05, min(2.0, s.enrich_delay))))


def _json(url: str, settings, params: dict | None = None) -> dict | None:
    """GET JSON; None for a 404 (not found); SourceError for everything else that fails."""
    try:
        body, _ = get(url, _policy(settings), accept="application/json", params=params)
    except SourceError as exc:
        if "HTTP 404" in str(exc):
            return None
        raise
    try:
        data = json.loads(body)
    except ValueError:
        raise SourceError(f"{url}: not JSON", fix="check [sources] crossref_url / openalex_url") from None
    return data if isinstance(data, dict) else None


def _text(v, cap: int = FIELD_CAPS["title"]) -> str | None:
    """A service's text value (a string or a number, or the first of a list of them) as one line, tags dropped,
    bounded by `cap` (`papervault.sources.limits`); anything else is no value."""
    if isinstance(v, list):
        v = v[0] if v else None
    if isinstance(v, (int, float)) and not isinstance(v, bool):
        v = str(v)
    if not isinstance(v, str):
        return None
    v = re.sub(r"<[^>]{1,40}>", "", v[: 4 * cap])          # Crossref titles carry JATS/MathML tags
    return text_value(" ".join(v.split()), cap)


def _abstract(v) -> str | None:
    """An abstract as plain text: JATS/HTML tags dropped, a leading "Abstract" heading dropped, bounded."""
    if not isinstance(v, str):
        return None
    v = re.sub(r"<[^<>]{0,200}>", " ", v[:4 * ABSTRACT_CHARS])
    v = re.sub(r"\s+([.,;:!?])", r"\1", " ".join(v.split()))
    v = re.sub(r"^(?:abstract|summary)\s*[:.\-–—]?\s+", "", v, flags=re.I)
    if len(v) > ABSTRACT_CHARS:
        v = v[:ABSTRACT_CHARS].rsplit(" ", 1)[0] + " …"
    return v if len(v.split()) >= 5 else None


def _inverted(index) -> str | None:
    """OpenAlex's `abstract_inverted_index` ({word: [positions]}) read back into text, up to ABSTRACT_WORDS
    words (positions beyond are dropped, whatever numbers a hostile answer carries)."""
    if not isinstance(index, dict):
        return None
    at: dict[int, str] = {}
    for word, places in list(index.items())[:20 * ABSTRACT_WORDS]:
        if not isinstance(word, str) or not isinstance(places, list):
            continue
        for k in places[:ABSTRACT_WORDS]:
            if isinstance(k, int) and 0 <= k < ABSTRACT_WORDS:
                at.setdefault(k, word)
    return _abstract(" ".join(at[k] for k in sorted(at)))


def from_crossref(msg: dict) -> Found:
    authors = []
    for a in (msg.get("author") if isinstance(msg.get("author"), list) else [])[:MAX_AUTHORS]:
        if isinstance(a, dict):
            name = " ".join(x for x in (_text(a.get("given"), MAX_AUTHOR_CHARS), _text(a.get("family"), MAX_AUTHOR_CHARS))
                            if x) or _text(a.get("name"), MAX_AUTHOR_CHARS)
            if name:
                authors.append(name)
    authors = name_list(authors)
    year = None
    for k in ("published-print", "published-online", "issued", "published"):
        parts = (msg.get(k) or {}).get("date-parts") if isinstance(msg.get(k), dict) else None
        if isinstance(parts, list) and parts and isinstance(parts[0], list) and parts[0] and year_value(parts[0][0]):
            year = year_value(parts[0][0])
            break
    bib = {}
    for src, dst in (("page", "pages"), ("volume", "volume"), ("issue", "number"), ("publisher", "publisher")):
        t = _text(msg.get(src))
        if t:
            bib[dst] = t.replace("-", "--") if dst == "pages" and "--" not in t else t
    for src, dst in (("ISSN", "issn"), ("ISBN", "isbn")):
        t = _text(msg.get(src))
        if t:
            bib[dst] = t
    retracted = None
    for upd in [*(msg.get("updated-by") if isinstance(msg.get("updated-by"), list) else []),
                *(msg.get("update-to") if isinstance(msg.get("update-to"), list) else [])]:
        if isinstance(upd, dict) and "retract" in str(upd.get("type", "")).lower():
            retracted = True
    doi = _text(msg.get("DOI"), FIELD_CAPS["doi"])
    return Found("crossref", "doi", title=_text(msg.get("title")), authors=authors, year=year,
                 venue=_text(msg.get("container-title"), FIELD_CAPS["venue"]), doi=doi.lower() if doi else None,
                 bib=bib_fields(bib), retracted=retracted, abstract=_abstract(msg.get("abstract")))


def from_openalex(w: dict) -> Found:
    ships = w.get("authorships") if isinstance(w.get("authorships"), list) else []
    authors = name_list([a["author"].get("display_name") for a in ships[:MAX_AUTHORS]
                         if isinstance(a, dict) and isinstance(a.get("author"), dict)])
    loc = w.get("primary_location") or {}
    src = loc.get("source") if isinstance(loc, dict) else None
    venue = src.get("display_name") if isinstance(src, dict) else None
    b = w.get("biblio") if isinstance(w.get("biblio"), dict) else {}
    first, last = text_value(b.get("first_page"), 100), text_value(b.get("last_page"), 100)
    bib = bib_fields({"volume": b.get("volume"), "number": b.get("issue"),
                      "pages": (f"{first}--{last}" if last else first) if first else None})
    doi = field_value("doi", w.get("doi"))
    if doi:
        doi = re.sub(r"^https?://(dx\.)?doi\.org/", "", doi).lower()
    return Found("openalex", "doi", title=_text(w.get("display_name") or w.get("title")), authors=authors,
                 year=year_value(w.get("publication_year")), venue=_text(venue, FIELD_CAPS["venue"]), doi=doi,
                 bib=bib, retracted=bool(w["is_retracted"]) if isinstance(w.get("is_retracted"), bool) else None,
                 abstract=_inverted(w.get("abstract_inverted_index")))


def by_doi(doi: str, settings) -> Found | None:
    s = settings.sources
    msg = _json(f"{s.crossref_url.rstrip('/')}/works/{quote(doi, safe='/')}", settings)
    if msg and isinstance(msg.get("message"), dict):
        return _with_openalex(from_crossref(msg["message"]), settings)
    w = _json(f"{s.openalex_url.rstrip('/')}/works/doi:{quote(doi, safe='/')}", settings)
    return from_openalex(w) if w else None


def _with_openalex(found: Found, settings) -> Found:
    """OpenAlex knows retractions and abstracts Crossref may not carry: asked for those when `found` (a
    Crossref record with a DOI) lacks them; its failure changes nothing."""
    if not found.doi or (found.retracted is not None and found.abstract):
        return found
    try:
        w = _json(f"{settings.sources.openalex_url.rstrip('/')}/works/doi:{quote(found.doi, safe='/')}", settings)
    except SourceError:
        w = None
    if w:
        alt = from_openalex(w)
        if found.retracted is None:
            found.retracted = alt.retracted
        if not found.abstract and alt.abstract:
            found.abstract, found.abstract_from = alt.abstract, "openalex"
    return found


def by_title(title: str, authors: list[str], settings) -> Found | None:
    """A Crossref bibliographic search; only a result whose title is the same (normalised) is taken."""
    s = settings.sources
    q = " ".join([title] + authors[:1])
    data = _json(f"{s.crossref_url.rstrip('/')}/works", settings,
                 params={"query.bibliographic": q, "rows": "5"})
    items = ((data or {}).get("message") or {}).get("items") or []
    want = normalize_title(title)
    for it in items:
        if isinstance(it, dict) and normalize_title(_text(it.get("title"))) == want:
            return _with_openalex(from_crossref(it), settings)
    return None


def by_arxiv(arxiv: str, settings) -> Found | None:
    rec = fetch_metadata([arxiv], settings).get(arxiv)
    if rec is None:
        return None
    return Found("arxiv", "arxiv", title=rec.title, authors=list(rec.authors), year=rec.year,
                 venue=rec.venue, doi=rec.doi, abstract=_abstract(rec.abstract))


def lookup(meta, settings) -> Found | None:
    if meta.doi:
        return by_doi(meta.doi, settings)
    if meta.arxiv:
        return by_arxiv(meta.arxiv, settings)
    if meta.title:
        return by_title(meta.title, meta.authors, settings)
    return None


def apply(meta, found: Found) -> list[str]:
    """Update `meta` in place by the order of trust; returns the fields that changed."""
    changed = []
    if (found.title and meta.provenance.get("title") in READ_FROM_PDF
            and normalize_title(found.title) == normalize_title(meta.title)):
        # The record confirms the title the PDF gave: it is no longer the header reader's guess.
        meta.provenance["title"] = found.via
        meta.provenance.pop("title_confidence", None)
        changed.append("title confirmed")
    for f in IDENTITY:
        value = getattr(found, f)
        if not value or meta.provenance.get(f) in TRUSTED or getattr(meta, f) == value:
            continue
        setattr(meta, f, value)
        meta.provenance[f] = found.via
        changed.append(f)
    for k, v in found.bib.items():
        if v and k not in meta.bib:
            meta.bib[k] = v
            changed.append(f"bib.{k}")
    if found.retracted is not None and getattr(meta, "retracted", None) != found.retracted:
        meta.retracted = found.retracted
        changed.append("retracted")
    if found.abstract and not (meta.abstract or "").strip():
        meta.abstract = found.abstract
        meta.provenance["abstract"] = found.abstract_from or found.service
        changed.append("abstract")
    return changed


def enrich(ws, ids: list[str] | None = None) -> dict:
    """Resolve the given papers (default: all) online and update their notes in one commit."""
    require_online(ws.settings)
    with ws.write_lock("enrich"):
        return enrich_locked(ws, ids)


def enrich_locked(ws, ids: list[str] | None = None) -> dict:
    """`enrich` for a caller that holds the workspace's write lock (`add` with `enrich_on_add`)."""
    report: dict = {"enriched": {}, "unchanged": [], "not_found": [], "failed": {}}
    vault = ws.vault
    touched = []
    for pid in ids or vault.paper_ids():
        meta = vault.read_meta(pid)
        try:
            found = lookup(meta, ws.settings)
        except SourceError as exc:
            report["failed"][pid] = str(exc)
            continue
        if found is None:
            report["not_found"].append(pid)
            continue
        changed = apply(meta, found)
        if not changed:
            report["unchanged"].append(pid)
            continue
        fields = {k: getattr(meta, k) for k in IDENTITY}
        extra = {"retracted": meta.retracted} if "retracted" in changed else {}
        if "abstract" in changed:
            extra["abstract"] = meta.abstract
        vault.update_meta(pid, bib=meta.bib, provenance=meta.provenance, **fields, **extra)
        refresh_head(vault, pid)       # the note's title, Authors and Published lines, unless a person edited it
        touched.append(vault.note_path(pid))
        report["enriched"][pid] = changed
        base = key_base(meta.authors, meta.year, meta.title)
        if base and not pid.startswith(base):
            report.setdefault("rekey", {})[pid] = base     # the id still says what the PDF alone said
    if touched:
        vault.commit(f"enrich: {plural(len(touched), 'paper')} from Crossref/OpenAlex/arXiv", touched)
    return report
