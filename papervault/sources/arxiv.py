"""arXiv: metadata and search through the Atom API, PDF downloads, ranking of search results.

arXiv asks API users for one request every three seconds (`ArxivSettings.delay`); `web.get` waits its turn,
retries with backoff and enforces timeouts and the PDF size cap. Base URLs are settings, so tests point them at
a loopback server.
"""

from __future__ import annotations

import datetime as _dt
import math
import re
import xml.etree.ElementTree as ET
from dataclasses import dataclass
from pathlib import Path
from typing import Iterable

from papervault.errors import SourceError
from papervault.models import SourceRecord
from papervault.sources import web
from papervault.sources.dedup import normalize_arxiv, normalize_doi
from papervault.sources.limits import FIELD_CAPS, MAX_AUTHOR_CHARS, MAX_AUTHORS, MAX_TAGS, cap_record

NS = {"a": "http://www.w3.org/2005/Atom", "arxiv": "http://arxiv.org/schemas/atom",
      "os": "http://a9.com/-/spec/opensearch/1.1/"}
ID_BATCH = 50   # ids per metadata request; keeps URLs short


def _t(el: ET.Element | None, cap: int = 4 * FIELD_CAPS["abstract"]) -> str:
    """An element's text, spaces collapsed, read up to a few times the largest field a record keeps (the rest of
    a hostile feed's 27 MB title is never copied; `cap_record` cuts it to its field's cap with a warning)."""
    return " ".join((el.text or "")[:cap].split()) if el is not None and el.text else ""


def parse_atom(xml: bytes | str, source: str = "arxiv") -> list[SourceRecord]:
    """Records from an arXiv API Atom feed (entries without an id, i.e. API errors, are skipped)."""
    try:
        root = ET.fromstring(xml)
    except ET.ParseError as exc:
        raise SourceError(f"{source}: the arXiv API answered with something that is not Atom XML ({exc})",
                          fix="check [arxiv] api_url") from None
    out = []
    for e in root.findall("a:entry", NS):
        ax = normalize_arxiv(_t(e.find("a:id", NS)))
        if not ax:
            continue
        published = _t(e.find("a:published", NS))
        pdf = next((l.get("href") for l in e.findall("a:link", NS)
                    if l.get("title") == "pdf" or l.get("type") == "application/pdf"), None)
        cats = [c.get("term") for c in e.findall("a:category", NS) if c.get("term")]
        names = [_t(a.find("a:name", NS), 4 * MAX_AUTHOR_CHARS) for a in e.findall("a:author", NS)[:MAX_AUTHORS]]
        out.append(cap_record(SourceRecord(
            origin="arxiv", source=f"arxiv:{ax}", title=_t(e.find("a:title", NS)) or None,
            authors=[n for n in names if n],
            year=int(published[:4]) if published[:4].isdigit() else None,
            venue=_t(e.find("arxiv:journal_ref", NS)) or None, doi=normalize_doi(_t(e.find("arxiv:doi", NS))),
            arxiv=ax, url=f"https://arxiv.org/abs/{ax}", abstract=_t(e.find("a:summary", NS)) or None,
            tags=cats[:MAX_TAGS], pdf_url=pdf if isinstance(pdf, str) else None,
        )))
    return out


def _pdf_url(settings, ax: str) -> str:
    return settings.arxiv.pdf_url.rstrip("/") + "/" + ax


def fetch_metadata(ids: Iterable[str], settings) -> dict[str, SourceRecord]:
    """Records for arXiv ids (any form: `arxiv:X`, URLs, versions), keyed by normalised id; unknown ids are absent."""
    norm = list(dict.fromkeys(a for a in (normalize_arxiv(i) for i in ids) if a))
    out: dict[str, SourceRecord] = {}
    policy = web.arxiv_policy(settings)
    for i in range(0, len(norm), ID_BATCH):
        batch = norm[i:i + ID_BATCH]
        body, _ = web.get(settings.arxiv.api_url, web.feed_policy(policy),
                          params={"id_list": ",".join(batch), "max_results": str(len(batch))})
        for rec in parse_atom(body, settings.arxiv.api_url):
            out[rec.arxiv] = rec.model_copy(update={"pdf_url": _pdf_url(settings, rec.arxiv)})
    return out


def latest_versions(ids: Iterable[str], settings) -> dict[str, tuple[int, SourceRecord]]:
    """The latest version arXiv lists for each id (its Atom entry's `<id>` ends in `vN`) with the record, keyed by
    normalised id; an id arXiv does not know is absent."""
    norm = list(dict.fromkeys(a for a in (normalize_arxiv(i) for i in ids) if a))
    out: dict[str, tuple[int, SourceRecord]] = {}
    policy = web.arxiv_policy(settings)
    for i in range(0, len(norm), ID_BATCH):
        batch = norm[i:i + ID_BATCH]
        body, _ = web.get(settings.arxiv.api_url, web.feed_policy(policy),
                          params={"id_list": ",".join(batch), "max_results": str(len(batch))})
        records = {r.arxiv: r for r in parse_atom(body, settings.arxiv.api_url)}
        for e in ET.fromstring(body).findall("a:entry", NS):
            raw = _t(e.find("a:id", NS))
            ax = normalize_arxiv(raw)
            m = re.search(r"v(\d{1,4})$", raw)
            if ax in records and m:
                out[ax] = (int(m.group(1)), records[ax].model_copy(update={"pdf_url": _pdf_url(settings, ax)}))
    return out


def download_version(ax: str, version: int, dest_dir: Path, settings) -> Path:
    """Version `version` of arXiv paper `ax` as a PDF in `dest_dir` (named `<id>v<N>.pdf`, downloaded once)."""
    return web.download_pdf(_pdf_url(settings, f"{ax}v{version}"), dest_dir, web.arxiv_policy(settings),
                            name=f"{ax.replace('/', '_')}v{version}")


def download(record: SourceRecord, dest_dir: Path, settings) -> Path:
    """The record's PDF from arXiv (or its `pdf_url`), downloaded once into `dest_dir`."""
    url = _pdf_url(settings, record.arxiv) if record.arxiv else record.pdf_url
    if not url:
        raise SourceError(f"{record.source}: no PDF to download", fix="add the PDF file yourself")
    return web.download_pdf(url, dest_dir, web.arxiv_policy(settings), name=(record.arxiv or "").replace("/", "_") or None)


# --- search and ranking --------------------------------------------------------------------------

@dataclass
class Candidate:
    """A search result with the scores that ranked it and a one-line reason."""

    record: SourceRecord
    relevance: float = 0.0      # similarity of title + abstract to the query, 0..1
    recency: float = 0.0        # 1 for this year, halving every `half_life` years
    redundancy: float = 0.0     # highest similarity to a result chosen before it
    score: float = 0.0
    api_rank: int = 0
    reason: str = ""


_WORD = re.compile(r"[a-z0-9]+")


def _lexical_vectors(texts: list[str]) -> list[dict[str, float]]:
    """TF-IDF vectors (L2-normalised dicts): the fallback when no embedding model is available."""
    docs = [[w for w in _WORD.findall(t.lower()) if len(w) > 2] for t in texts]
    df: dict[str, int] = {}
    for d in docs:
        for w in set(d):
            df[w] = df.get(w, 0) + 1
    n = len(docs)
    vecs = []
    for d in docs:
        v: dict[str, float] = {}
        for w in d:
            v[w] = v.get(w, 0.0) + 1.0
        for w in v:
            v[w] = (1 + math.log(v[w])) * math.log((n + 1) / (df[w] + 0.5))
        norm = math.sqrt(sum(x * x for x in v.values())) or 1.0
        vecs.append({w: x / norm for w, x in v.items()})
    return vecs


def _cos(a: dict[str, float], b: dict[str, float]) -> float:
    if len(a) > len(b):
        a, b = b, a
    return sum(x * b.get(w, 0.0) for w, x in a.items())


def _similarities(query: str, texts: list[str], embedder) -> tuple[list[float], list[list[float]], str]:
    """Query-to-document and document-to-document similarities, by embeddings or (fallback) TF-IDF."""
    if embedder is not None:
        try:
            docs = embedder.embed(texts)
            q = embedder.embed_query(query)
            rel = [float(x) for x in docs @ q]
            sim = (docs @ docs.T).tolist()
            return rel, sim, "embeddings"
        except Exception:  # a missing or broken model falls back to words, never stops the search
            pass
    vecs = _lexical_vectors([query] + texts)
    qv, dv = vecs[0], vecs[1:]
    rel = [_cos(qv, d) for d in dv]
    sim = [[_cos(a, b) for b in dv] for a in dv]
    return rel, sim, "tf-idf"


# A record at least this similar to one already chosen is a near copy of it (the same work posted twice, a
# rewrite of one abstract): it is chosen only when nothing else is left. MMR's penalty alone does not keep such a
# pair apart when both are relevant and recent (the margin can be a thousandth of a point).
NEAR_COPY = 0.85


def rank(query: str, records: list[SourceRecord], k: int, *, embedder=None, lam: float = 0.7,
         recency_weight: float = 0.15, half_life: float = 5.0, today: _dt.date | None = None,
         near_copy: float = NEAR_COPY) -> list[Candidate]:
    """The `k` best records by maximal marginal relevance: relevance (+ a recency bonus) minus redundancy.

    score = lam * (relevance + recency_weight * recency) - (1 - lam) * max similarity to those already chosen.
    A near copy of a chosen record (similarity >= `near_copy`) comes after every other record. The arXiv API's
    own order breaks ties, and each candidate says why it was chosen.
    """
    if not records or k <= 0:
        return []
    year = (today or _dt.date.today()).year
    texts = [f"{r.title or ''}. {r.abstract or ''}" for r in records]
    rel, sim, how = _similarities(query, texts, embedder)
    cands = [Candidate(r, relevance=max(0.0, rel[i]), api_rank=i + 1,
                       recency=0.5 ** (max(0, year - r.year) / half_life) if r.year else 0.0)
             for i, r in enumerate(records)]
    chosen: list[int] = []
    left = list(range(len(records)))
    while left and len(chosen) < k:
        best, best_key, best_score, best_red = None, (False, float("-inf")), -1e9, 0.0
        for i in left:
            red = max((sim[i][j] for j in chosen), default=0.0)
            c = cands[i]
            s = lam * (c.relevance + recency_weight * c.recency) - (1 - lam) * red - 1e-6 * c.api_rank
            key = (red < near_copy, s)
            if key > best_key:
                best, best_key, best_score, best_red = i, key, s, red
        c = cands[best]
        c.score, c.redundancy = best_score, best_red
        nearest = max(chosen, key=lambda j: sim[best][j], default=None)
        novelty = ("first pick" if nearest is None else
                   f"a near copy of {records[nearest].arxiv} ({best_red:.2f}), nothing else left"
                   if best_red >= near_copy else f"closest pick so far {records[nearest].arxiv} at {best_red:.2f}")
        c.reason = (f"#{len(chosen) + 1}: relevance {c.relevance:.2f} ({how}), "
                    f"{c.record.year or 'undated'} (recency {c.recency:.2f}), {novelty}; arXiv rank {c.api_rank}")
        chosen.append(best)
        left.remove(best)
    return [cands[i] for i in chosen]


def search(query: str, max_results: int, settings, *, embedder=None, pool: int | None = None) -> list[Candidate]:
    """Search arXiv for `query`, then keep the `max_results` best by relevance, recency and diversity (MMR).

    `pool` results (default 3 x max_results, at least 20, at most 100) are fetched in arXiv's relevance order.
    """
    if max_results <= 0:
        return []
    pool = pool or min(100, max(20, 3 * max_results))
    q = query if re.search(r"\b(ti|au|abs|cat|all|co|jr|rn|id):", query) else \
        " AND ".join(f"all:{w}" for w in re.findall(r"[\w\-]+", query)) or f"all:{query}"
    body, _ = web.get(settings.arxiv.api_url, web.feed_policy(web.arxiv_policy(settings)),
                      params={"search_query": q, "start": "0", "max_results": str(pool), "sortBy": "relevance",
                              "sortOrder": "descending"})
    records = [r.model_copy(update={"pdf_url": _pdf_url(settings, r.arxiv)})
               for r in parse_atom(body, settings.arxiv.api_url)]
    if embedder is None:
        embedder = _default_embedder(settings)
    ranked = rank(query, records, max_results, embedder=embedder)
    for c in ranked:
        c.record = c.record.model_copy(update={"reason": c.reason, "source": c.record.source})
    return ranked


def _default_embedder(settings):
    """The workspace's embedding model when it can load offline; None means the TF-IDF fallback."""
    try:
        from papervault.index.embed import Embedder  # deferred: pyarrow and the model, only to rank a search

        emb = Embedder(settings.embed)
        emb.model   # noqa: B018  (loads now, so a failure falls back here rather than mid-ranking)
        return emb
    except Exception:
        return None
