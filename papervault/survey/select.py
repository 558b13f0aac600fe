"""Stage 1 of a survey: which vault papers it covers, and what the later stages read about each of them.

A selection is one or more specs: `all`, `tag:X`, `collection:X` (a Zotero collection), `query:TEXT` (a search
of the index) or `arxiv:QUERY` (papers retrieved from arXiv for the topic in the same run, then selected).
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass, field
from typing import Any, Callable, Iterable

from papervault.errors import NotFoundError, PapervaultError
from papervault.models import PaperMeta
from papervault.vault.paper import figure_sources

SPEC_KINDS = ("all", "tag", "collection", "query", "arxiv")


@dataclass(frozen=True)
class Spec:
    """One parsed `--papers` value."""

    kind: str
    value: str = ""

    def __str__(self) -> str:
        return self.kind if self.kind == "all" else f"{self.kind}:{self.value}"


def parse_spec(text: str) -> Spec:
    """`all`, `tag:X`, `collection:X`, `query:TEXT`, `arxiv:QUERY`; anything else is a usage error."""
    text = (text or "").strip()
    if text in ("", "all"):
        return Spec("all")
    kind, sep, value = text.partition(":")
    kind = kind.strip().lower()
    if not sep or kind not in SPEC_KINDS or kind == "all" or not value.strip():
        raise NotFoundError(f"cannot read paper selection {text!r}",
                            fix="use all, tag:NAME, collection:NAME, query:TEXT or arxiv:QUERY")
    return Spec(kind, value.strip())


def select_ids(metas: Iterable[PaperMeta], spec: Spec, *, search: Callable[[str], list[str]] | None = None) -> list[str]:
    """The ids a local spec selects from the vault's metadata (arxiv specs are resolved by the flow)."""
    metas = list(metas)
    if spec.kind == "all":
        return sorted(m.id for m in metas)
    if spec.kind == "tag":
        want = spec.value.lower()
        return sorted(m.id for m in metas if want in {t.lower() for t in m.tags})
    if spec.kind == "collection":
        want = spec.value.strip("/").lower()
        # Zotero collections nest ("Thesis/Chapter 2"): a parent selects its sub-collections too.
        return sorted(m.id for m in metas
                      if any(c.strip("/").lower() == want or c.strip("/").lower().startswith(want + "/")
                             for c in m.collections))
    if spec.kind == "query":
        if search is None:
            raise PapervaultError("a query selection needs the index", fix="run `papervault index` first")
        known = {m.id for m in metas}
        return [pid for pid in dict.fromkeys(search(spec.value)) if pid in known]
    raise NotFoundError(f"selection {spec} is resolved by the survey flow, not from the vault")


# --- what later stages read about a paper ---------------------------------------------------------

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
    def short_author(self) -> str:
        """"Lamport", "Lamport and Shostak", "Lamport et al." as a sentence names the paper."""
        from papervault.ids import last_name

        names = [last_name(a) for a in self.authors if a.strip()]
        if not names:
            return self.title[:60] or self.id
        if len(names) == 1:
            return names[0]
        if len(names) == 2:
            return f"{names[0]} and {names[1]}"
        return f"{names[0]} et al."


def _text(value: Any) -> str:
    if value is None:
        return ""
    if isinstance(value, str):
        return value.strip()
    if isinstance(value, (list, tuple)):
        return "; ".join(_text(v) for v in value if _text(v))
    return str(value).strip()


def _strings(value: Any) -> list[str]:
    if not value:
        return []
    if isinstance(value, str):
        return [value.strip()] if value.strip() else []
    out = []
    for v in value:
        if isinstance(v, dict):
            v = v.get("name") or v.get("text") or next(iter(v.values()), "")
        s = _text(v)
        if s:
            out.append(s)
    return out


def remember_pages(pid: str, labels: list[str]) -> None:
    """Citations of the paper's pages say its printed page numbers (see papervault.pages)."""
    from papervault import pages

    pages.remember(pid, labels)


def load_papers(vault, ids: Iterable[str]) -> tuple[list[SurveyPaper], list[str]]:
    """Read the selected papers from the vault; returns (papers, problems). One broken note never stops it."""
    papers: list[SurveyPaper] = []
    problems: list[str] = []
    for pid in ids:
        try:
            meta, body = vault.read_note(pid)
            full = vault.read_fulltext(pid)      # a paper.md leading out of the vault is refused here too
        except PapervaultError as exc:
            problems.append(f"{pid}: {exc}")
            continue
        results = [r if isinstance(r, dict) else {"result": _text(r)} for r in (meta.key_results or [])]
        papers.append(SurveyPaper(
            id=meta.id, title=meta.title or meta.id, authors=list(meta.authors), year=meta.year, venue=meta.venue,
            doi=meta.doi, arxiv=meta.arxiv, url=meta.url, abstract=_text(meta.abstract), method=_text(meta.method),
            datasets=_strings(meta.datasets), metrics=_strings(meta.metrics), baselines=_strings(meta.baselines),
            key_results=results, tags=list(meta.tags), note=body, fulltext=full,
            figures=figure_sources(full),
            bib=dict(meta.bib), page_labels=list(meta.page_labels),
        ))
        remember_pages(meta.id, meta.page_labels)
    return papers, problems


def selection_digest(papers: list[SurveyPaper]) -> str:
    """One hash over every selected paper's digest: the cache key of the cross-paper stages."""
    h = hashlib.sha256()
    for p in sorted(papers, key=lambda p: p.id):
        h.update(f"{p.id}:{p.digest}\n".encode())
    return h.hexdigest()[:16]
