"""The inbox: new matches of the saved arXiv queries (`[sync] arxiv`), metadata only until a person accepts one.

A sync pass no longer adds a saved query's matches to the vault: each match that is neither in the vault nor
already in the inbox (or dismissed) lands in the inbox with its score and the reason for it. The inbox is derived
state, `.papervault/sync/inbox.json` (not the vault: nothing in it is a person's work, and the vault's history
holds only papers someone chose); deleting it loses the candidates until their query's cursor is deleted too.

The score ranks the candidates: 0.6 x relevance to the query (the arXiv search's own ranking: embeddings, or
TF-IDF without a model) + 0.2 x closeness to the vault (the highest TF-IDF similarity of the title and abstract
to a vault paper's) + 0.2 x recency (1 this year, halving every 5 years). `papervault inbox accept ID` fetches the
paper's current metadata and PDF and adds it as `add` does (its arXiv version recorded); `dismiss` drops it.
"""

from __future__ import annotations

import json
from typing import Any

from papervault.app.indexing import update_index_reported as update_index
from papervault.app.syncstate import ingest_records as _ingest, sync_dir
from papervault.errors import InputError, PapervaultError
from papervault.models import SourceRecord
from papervault.sources import arxiv
from papervault.sources.resolve import resolve_doi
from papervault.sources.dedup import normalize_arxiv, normalize_doi
from papervault.sources.limits import MAX_TAG_CHARS, field_value, name_list, text_value, year_value
from papervault.vault.store import atomic_write
from papervault.workspace import Workspace

W_QUERY, W_VAULT, W_RECENT = 0.6, 0.2, 0.2
ABSTRACT_CHARS = 3000      # an inbox entry's abstract (the paper's own comes with it when accepted)
VAULT_SAMPLE = 3000         # vault papers compared with a candidate (the most recently updated)


def _path(ws: Workspace):
    return sync_dir(ws) / "inbox.json"


def _number(v) -> float:
    return float(v) if isinstance(v, (int, float)) and not isinstance(v, bool) and abs(v) < 1e6 else 0.0


def inbox_key(value) -> str | None:
    """An inbox key: an arXiv id (a saved query's match, or a work a survey's papers cite), or a DOI (a cited work
    with no arXiv id); anything else (a `../../x`, an `--option`, a DOI with `.` or `..` segments) is None."""
    if not isinstance(value, str) or len(value) > 200:
        return None
    if normalize_arxiv(value) == value:
        return value
    doi = normalize_doi(value)
    if doi == value and not any(seg in (".", "..") for seg in doi.split("/")):
        return doi
    return None


def _entry(key, e) -> dict | None:
    """An inbox entry as the inbox writes it, from whatever `inbox.json` holds (a hand-made file is hostile): its
    key an arXiv id or a DOI (`inbox_key`: a `../../x` or `--option` never reaches a URL, a path or a command),
    every field of its type and bounded as a source's record is (`papervault.sources.limits`); None when it is no
    entry."""
    if inbox_key(key) is None or not isinstance(e, dict):
        return None
    return {"id": key, "query": text_value(e.get("query"), 1_000) or "", "title": field_value("title", e.get("title")),
            "authors": name_list(e.get("authors"), 20), "year": year_value(e.get("year")),
            "abstract": text_value(e.get("abstract"), ABSTRACT_CHARS), "doi": normalize_doi(field_value("doi", e.get("doi"))),
            "venue": field_value("venue", e.get("venue")), "tags": name_list(e.get("tags"), 20, MAX_TAG_CHARS),
            "score": _number(e.get("score")), "relevance": _number(e.get("relevance")),
            "vault": _number(e.get("vault")), "near": text_value(e.get("near"), 200),
            "recency": _number(e.get("recency")), "reason": text_value(e.get("reason"), 2_000) or "",
            "found": text_value(e.get("found"), 40) or ""}


def load(ws: Workspace) -> dict:
    """The inbox (`inbox.json`): entries keyed by arXiv id and the ids dismissed for good. Derived state read
    back is data: what is not an entry is left out (see `_entry`)."""
    try:
        data = json.loads(_path(ws).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        data = None
    if not isinstance(data, dict) or not isinstance(data.get("items"), dict):
        return {"items": {}, "dismissed": []}
    items = {k: e for k, e in ((k, _entry(k, v)) for k, v in data["items"].items()) if e is not None}
    dismissed = data.get("dismissed") if isinstance(data.get("dismissed"), list) else []
    return {"items": items, "dismissed": [d for d in dismissed if inbox_key(d) == d]}


def save(ws: Workspace, data: dict) -> None:
    sync_dir(ws).mkdir(parents=True, exist_ok=True)
    atomic_write(_path(ws), json.dumps(data, ensure_ascii=False, sort_keys=True, indent=1))


def vault_arxiv(ws: Workspace) -> tuple[set[str], list[tuple[str, str]]]:
    """The arXiv ids of the vault's papers, and (id, title + abstract) of up to `VAULT_SAMPLE` papers."""
    ids: set[str] = set()
    texts: list[tuple[str, str]] = []
    for pid in ws.vault.paper_ids():
        try:
            meta = ws.vault.read_meta(pid)
        except PapervaultError:
            continue
        if meta.arxiv:
            ids.add(meta.arxiv)
        texts.append((pid, f"{meta.title}. {meta.abstract or ''}"))
    return ids, texts[-VAULT_SAMPLE:]


def closeness(candidates: list[str], vault: list[tuple[str, str]]) -> list[tuple[float, str | None]]:
    """For each candidate text, its highest TF-IDF similarity to a vault paper, and that paper."""
    if not vault:
        return [(0.0, None)] * len(candidates)
    vecs = arxiv._lexical_vectors(candidates + [t for _, t in vault])
    cand, docs = vecs[:len(candidates)], vecs[len(candidates):]
    out = []
    for c in cand:
        best = max(((arxiv._cos(c, d), vault[i][0]) for i, d in enumerate(docs)), default=(0.0, None))
        out.append((round(best[0], 3), best[1] if best[0] > 0 else None))
    return out


def add_matches(ws: Workspace, query: str, found: list, in_vault: set[str], vault_texts: list[tuple[str, str]],
                when: str) -> list[dict]:
    """Put the search results `found` (arxiv.Candidate) not in the vault nor the inbox into the inbox; returns
    the new entries."""
    data = load(ws)
    items, dismissed = data["items"], set(data["dismissed"])
    fresh = [c for c in found if c.record.arxiv and c.record.arxiv not in in_vault
             and c.record.arxiv not in items and c.record.arxiv not in dismissed]
    near = closeness([f"{c.record.title or ''}. {c.record.abstract or ''}" for c in fresh], vault_texts)
    new = []
    for c, (sim, pid) in zip(fresh, near):
        r = c.record
        score = round(W_QUERY * c.relevance + W_VAULT * sim + W_RECENT * c.recency, 3)
        reason = (f"matches the saved query {query!r} (relevance {c.relevance:.2f}); "
                  + (f"close to {pid} in the vault ({sim:.2f}); " if pid else "close to nothing in the vault; ")
                  + f"{r.year or 'undated'} (recency {c.recency:.2f})")
        entry = _entry(r.arxiv, {
            "query": query, "title": r.title, "authors": r.authors, "year": r.year, "abstract": r.abstract,
            "doi": r.doi, "venue": r.venue, "tags": r.tags, "score": score, "relevance": round(c.relevance, 3),
            "vault": sim, "near": pid, "recency": round(c.recency, 3), "reason": reason, "found": when})
        if entry is None:
            continue
        items[r.arxiv] = entry
        new.append(entry)
    if new:
        save(ws, data)
    return new


def listing(ws: Workspace) -> list[dict]:
    """The inbox, best first (score, then the newest found)."""
    items = list(load(ws)["items"].values())
    return sorted(items, key=lambda e: (-(e.get("score") or 0), e.get("found") or "", e["id"]))


def add_cited(ws: Workspace, slug: str, works: list, selected: int, when: str) -> list[dict]:
    """Offer in the inbox the works a survey's selected papers cite that the vault lacks (papervault.survey.canon)
    and that carry an arXiv id or a DOI (what `accept` can fetch); a work already in the inbox, dismissed or in
    the vault is left. Returns the new entries."""
    data = load(ws)
    items, dismissed = data["items"], set(data["dismissed"])
    new = []
    for w in works:
        key = inbox_key(w.arxiv) if w.arxiv else inbox_key(normalize_doi(w.doi)) if w.doi else None
        if key is None or key in items or key in dismissed:
            continue
        share = len(w.cited_by) / max(1, selected)
        entry = _entry(key, {
            "query": f"survey {slug}", "title": w.title, "authors": [w.author] if w.author else [], "year": w.year,
            "doi": w.doi, "score": round(min(1.0, share), 3), "relevance": round(min(1.0, share), 3),
            "near": w.cited_by[0] if w.cited_by else None,
            "reason": f"cited by {len(w.cited_by)} of the {selected} selected papers of the survey {slug!r}, "
                      "not in the vault", "found": when})
        if entry is not None:
            items[key] = entry
            new.append(entry)
    if new:
        save(ws, data)
    return new


def _take(ws: Workspace, ident: str) -> tuple[dict, dict, str]:
    data = load(ws)
    ax = normalize_arxiv(ident) or inbox_key(normalize_doi(ident))
    if ax is None:
        raise InputError(f"{ident[:200]!r} is not an arXiv id or a DOI",
                         fix="see `papervault inbox` for the ids it holds")
    if ax not in data["items"]:
        raise InputError(f"{ident!r} is not in the inbox", fix="see `papervault inbox` for the ids it holds")
    return data, data["items"][ax], ax


def dismiss(ws: Workspace, ident: str) -> dict:
    data, entry, ax = _take(ws, ident)
    del data["items"][ax]
    data["dismissed"] = sorted(set(data["dismissed"]) | {ax})
    save(ws, data)
    return entry


def accept(ws: Workspace, ident: str, *, index: bool = True) -> dict[str, Any]:
    """Add an inbox entry to the vault fully (current metadata and PDF from arXiv, parsed and analysed as `add`
    does), record its arXiv version, and take it out of the inbox."""
    ws.require()
    data, entry, ax = _take(ws, ident)
    if normalize_arxiv(ax) != ax:
        return _accept_doi(ws, data, entry, ax, index=index)
    version = None
    try:
        found = arxiv.latest_versions([ax], ws.settings).get(ax)
    except PapervaultError:
        found = None        # arXiv unreachable: the inbox's metadata, and the PDF download is tried anyway
    if found:
        version, rec = found
    else:
        rec = SourceRecord(origin="arxiv", source=f"arxiv:{ax}", title=entry.get("title"),
                           authors=entry.get("authors") or [], year=entry.get("year"), doi=entry.get("doi"),
                           venue=entry.get("venue"), arxiv=ax, url=f"https://arxiv.org/abs/{ax}",
                           abstract=entry.get("abstract") or None, tags=entry.get("tags") or [],
                           pdf_url=arxiv._pdf_url(ws.settings, ax))
    rec = rec.model_copy(update={"reason": f"accepted from the inbox: {entry.get('reason', '')}"[:500]})
    report, papers = _ingest(ws, [rec], "inbox accept")
    pid = papers.get(rec.source)
    problems = [p.error for p in report.problems if p.source == rec.source]
    if not pid:
        return {"id": ax, "paper": None, "error": problems[0] if problems else "not added", "commits": report.commits}
    commits = list(report.commits)
    if version:
        with ws.write_lock("sync"):
            ws.vault.update_meta(pid, arxiv_version=version, note_version=version)
            sha = ws.vault.commit(f"inbox: {pid} is arXiv {ax}v{version}", [ws.vault.paper_dir(pid)])
        commits += [sha] if sha else []
    del data["items"][ax]
    save(ws, data)
    out = {"id": ax, "paper": pid, "version": version, "added": pid in report.added, "commits": commits,
           "warnings": [w.error for w in report.warnings]}
    if index:
        out["index"] = update_index(ws)
    return out


def _accept_doi(ws: Workspace, data: dict, entry: dict, doi: str, *, index: bool) -> dict[str, Any]:
    """A cited work known by its DOI: its metadata from the DOI resolver, added as `papervault add DOI` adds it
    (metadata only until its PDF is added, unless the answer links an open PDF)."""
    try:
        rec = resolve_doi(doi, ws.settings)
    except PapervaultError as exc:
        return {"id": doi, "paper": None, "error": str(exc), "commits": []}
    rec = rec.model_copy(update={"reason": f"accepted from the inbox: {entry.get('reason', '')}"[:500]})
    report, papers = _ingest(ws, [rec], "inbox accept")
    pid = papers.get(rec.source)
    if not pid:
        problems = [p.error for p in report.problems if p.source == rec.source]
        return {"id": doi, "paper": None, "error": problems[0] if problems else "not added", "commits": report.commits}
    del data["items"][doi]
    save(ws, data)
    out = {"id": doi, "paper": pid, "version": None, "added": pid in report.added, "commits": list(report.commits),
           "warnings": [w.error for w in report.warnings]}
    if index:
        out["index"] = update_index(ws)
    return out
