"""Stage 1 of a survey: which vault papers it covers, and what the later stages read about each of them.

A selection is one or more specs: `all`, `tag:X`, `collection:X` (a Zotero collection), `query:TEXT` (a search
of the index) or `arxiv:QUERY` (papers retrieved from arXiv for the topic in the same run, then selected).
"""

from __future__ import annotations

import hashlib
import time
from dataclasses import dataclass, field
from typing import Any, Callable, Iterable

from papervault import pages
from papervault.errors import NotFoundError, PapervaultError
from papervault.models import PaperMeta
from papervault.survey import canon, judge
from papervault.survey import selection as S
from papervault.survey.citations import Matcher
from papervault.survey.papers import SurveyPaper
from papervault.vault.aliases import alias_map
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


# --- stage 1 as a whole: specs, topic, the person's edits, selection.md ------------------------------

RESTRICTING = ("tag", "collection")    # specs that narrow the candidates of the topic selection
ADDING = ("query", "arxiv")            # specs whose papers join the selection


@dataclass
class Resolved:
    """The outcome of stage 1: the ids the survey covers and what `selection.md` says about them."""

    ids: list[str]
    retrieved: list[str] = field(default_factory=list)
    problems: list[str] = field(default_factory=list)
    how: str = ""                       # "topic", "all", "specs": how the tool chose
    edits: dict[str, list[str]] = field(default_factory=dict)
    seconds: float = 0.0
    entries: dict[str, Any] = field(default_factory=dict)    # id -> selection.Entry (selected and near misses)
    review: str = ""                    # what a model's review did ("openai/x judged 120 candidates: ..."), or ""
    review_cost: dict[str, int] = field(default_factory=dict)   # candidates shown, requests, characters sent
    missing: list[Any] = field(default_factory=list)   # canon.MissingWork: cited by the selection, not in the vault


# long: each selection spec (all, tag:, collection:, query:, arxiv:, the topic) is one short branch of one
# dispatch filling the same `Resolved`, then selection.md is written from it
def resolve(ws, topic: str, specs: list[str] | None, *, slug: str, max_papers: int | None = None,
            arxiv: Callable[[str], tuple[list[str], list[str]]] | None = None, write: bool = True,
            reviewer: tuple[Callable[[list], list], str] | None = None,
            lookup: Callable[[list], list[str]] | None = None,
            index_missing: Callable[[Any, list[str], Any], None] | None = None) -> Resolved:
    """Resolve a survey's selection and write `vault/surveys/<slug>/selection.md`.

    Without specs the papers about `topic` are chosen from the index (papervault.survey.topic). `all` selects
    every paper. `tag:`/`collection:` restrict the candidates of the topic selection; `query:` adds the papers
    of a search and `arxiv:` those it imports (through `arxiv(query) -> (ids, problems)`). A person's edits to
    an existing `selection.md` (papers added, papers struck out) are applied last and kept in the new file.
    `write=False` leaves `selection.md` as it is (`papervault survey --refresh`: what it would become).
    `reviewer` = (ask_all, label): a model reviews the topic's selection (papervault.survey.judge) before
    `max_papers` cuts it; `ask_all(tasks)` returns each answer's data (papervault.survey.judge.reviewer).
    `lookup(works)` may complete the works the selection cites and the vault lacks (papervault.survey.canon) with
    a DOI found online, before `selection.md` lists them; it returns problem lines.
    `index_missing(ws, ids, embedder)` indexes the papers a topic selection finds missing from the index (the
    application's one index update); without it (a preview) they are named as a problem and left out."""


    t0 = time.perf_counter()
    parsed = [parse_spec(s) for s in (specs or [])]
    if max_papers is not None and max_papers < 1:
        raise PapervaultError(f"--max-papers {max_papers} selects nothing", fix="give a number of papers of 1 or more")
    path = ws.vault.guard(ws.vault.survey_dir(slug) / S.FILENAME)    # the write guard, before it is read
    existing = path.read_text(encoding="utf-8") if path.is_file() else None
    edits = S.read_edits(existing)
    own = set(ws.vault.paper_ids())
    if any(i not in own for i in (*edits.added, *edits.struck)):       # a paper added or struck by a former id (`papervault rekey`) is its renamed paper
        former = alias_map(ws.vault)
        edits = S.Edits(list(dict.fromkeys(former.get(i, i) for i in edits.added)),
                        list(dict.fromkeys(former.get(i, i) for i in edits.struck)))
    out = Resolved(ids=[])
    entries: dict[str, S.Entry] = {}
    order: list[str] = []
    near: list[S.Entry] = []
    method: dict[str, Any] = {}
    selector = None             # the topic's selector, when it runs (its citation graph serves `canon` too)

    def add(entry: S.Entry) -> None:
        if entry.id in entries:
            entries[entry.id].reasons += [r for r in entry.reasons if r not in entries[entry.id].reasons]
        else:
            entries[entry.id] = entry
            order.append(entry.id)

    if any(s.kind == "all" for s in parsed):
        out.how = "all"
        for pid in ws.vault.paper_ids():
            add(S.Entry(pid, reasons=[S.Reason("spec", "all")]))
    else:
        restrict: set[str] | None = None
        narrowing = [s for s in parsed if s.kind in RESTRICTING]
        if narrowing:
            metas = list(ws.vault.iter_meta())
            restrict = set()
            for s in narrowing:
                restrict |= set(select_ids(metas, s))
        adding = [s for s in parsed if s.kind in ADDING]
        searcher = None
        for s in adding:
            if s.kind == "arxiv":
                if arxiv is None:
                    raise NotFoundError(f"selection {s} needs the survey flow", fix="run it with papervault survey")
                got, probs = arxiv(s.value)
                out.retrieved += got
                out.problems += probs
            else:
                # deferred: the index (pyarrow, LanceDB); load_papers and export need none
                from papervault.index.search import Searcher

                searcher = searcher or Searcher(ws)
                got = list(dict.fromkeys(h.paper_id for h in searcher.search(s.value, limit=50)))
            for pid in got:
                add(S.Entry(pid, reasons=[S.Reason("spec", str(s))]))
        out.how = "topic" if not adding or narrowing else "specs"
        review_method = ""
        if out.how == "topic" or (adding and topic.strip()):
            from papervault.survey.topic import TopicSelector  # deferred: numpy and the index, for a topic only

            try:
                from papervault.index.search import Searcher  # deferred: the index (pyarrow, LanceDB)

                searcher = searcher or Searcher(ws)
                missing = missing_from_index(ws, restrict)
                if missing and index_missing is not None:
                    index_missing(ws, missing, searcher.embedder)
                    out.problems.append(f"{len(missing)} paper(s) were not in the index: indexed them before choosing")
                elif missing:
                    out.problems.append(f"{len(missing)} paper(s) are not in the index and were not considered: "
                                        "run `papervault index`")
                selector = TopicSelector(ws, searcher)
                sel = selector.select(topic, restrict=restrict, max_papers=None if reviewer else max_papers,
                                      exclude=(), pool=judge.POOL if reviewer else 0)
                if reviewer is not None and sel.selected:
                    ask_all, label = reviewer
                    got = judge.review(sel, ask_all, label=label, authors=selector.authors_of,
                                       max_candidates=ws.settings.agents.review_max_candidates)
                    out.problems += got.problems
                    review_method = got.method()
                    out.review_cost = got.cost()
                    selector.finish(sel, max_papers)   # cut, and "cited by k of the n selected" counted again
            except PapervaultError as exc:
                if not adding:
                    raise
                out.problems.append(f"topic selection skipped: {exc}")
                sel = None
            if sel is not None:
                for c in sel.selected:
                    add(c.entry())
                near = [c.entry() for c in sel.near]
                method = sel.method()
                if review_method:
                    method["model review"] = review_method
                    out.review = review_method
                out.how = "topic"
        if restrict is not None and not adding:
            method["candidates"] = f"{len(restrict)} papers of {', '.join(str(s) for s in narrowing)}"
    generated = list(order)
    if max_papers is not None:
        generated = generated[:max_papers]
    known = set(generated) | {e.id for e in near}
    missing = [a for a in edits.added if a not in known and not ws.vault.has_paper(a)]
    if missing:
        out.problems.append(f"selection.md adds {', '.join(missing)}, not in the vault (left out)")
    ids = [i for i in edits.apply(generated) if i not in missing]
    by_id = {**{e.id: e for e in near}, **entries}
    sel_entries: list[S.Entry] = []
    for pid in ids:
        e = by_id.get(pid) or S.Entry(pid)
        if pid in edits.added:
            e.reasons = [S.Reason("person")] + e.reasons
        sel_entries.append(e)
    struck = [by_id.get(pid) or S.Entry(pid) for pid in edits.struck if ws.vault.has_paper(pid)]
    near_entries = struck + [e for e in near if e.id not in set(ids) and e.id not in set(edits.struck)]
    _fill_titles(ws, sel_entries + near_entries)
    out.missing = canon.for_selection(ws.vault, ids, _matcher(ws, selector).named)
    if out.missing and lookup is not None and write:      # DOIs of the works known by title only (online)
        out.problems += lookup(out.missing)
    if write:
        path.parent.mkdir(parents=True, exist_ok=True)
        from papervault.parse.firstpass import unfinished   # the selected papers still read by their first pass

        ws.vault.write(path, S.render(topic, sel_entries, near_entries, slug=slug, edits=edits, generated=generated,
                                    method=method, specs=[str(s) for s in parsed], missing=out.missing,
                                    unfinished=unfinished(ws, ids)))
    out.entries = {e.id: e for e in near_entries + sel_entries}
    out.ids = ids
    out.edits = {"added": list(edits.added), "struck": list(edits.struck)}
    out.seconds = round(time.perf_counter() - t0, 3)
    return out


def _matcher(ws, selector=None):
    """The citation graph's matcher (DOI, arXiv id, title) over the whole vault: the topic selector's when it
    ran, else one built from the vault's notes."""
    if selector is not None:
        return selector.graph().matcher
    ids, titles, dois, arxivs, authors, years = [], [], [], [], [], []
    for pid in ws.vault.paper_ids():
        try:
            m = ws.vault.read_meta(pid)
        except PapervaultError:
            continue
        ids.append(pid)
        titles.append(m.title or "")
        dois.append(m.doi or "")
        arxivs.append(m.arxiv or "")
        authors.append(list(m.authors or []))
        years.append(m.year)
    return Matcher(ids, titles, dois, arxivs, authors, years)


def missing_from_index(ws, among: set[str] | None = None) -> list[str]:
    """The vault's papers (or those of `among`) the index does not have yet (added with `--no-index` since the
    last `papervault index`); the index is read, never written (the caller's index update does that)."""
    # deferred: the index (pyarrow, LanceDB)
    from papervault.index.store import PAPERS, open_db, table_names

    db = open_db(ws)
    have: set[str] = set()
    if PAPERS in table_names(db):
        have = set(db.open_table(PAPERS).search().select(["paper_id"]).limit(None).to_arrow()["paper_id"].to_pylist())
    return [p for p in (sorted(among) if among is not None else ws.vault.paper_ids()) if p not in have]


def _fill_titles(ws, entries) -> None:
    """Titles and years of entries that came without them (spec-selected, added by a person), from the notes."""
    for e in entries:
        if e.title:
            continue
        try:
            meta = ws.vault.read_meta(e.id)
        except PapervaultError:
            continue
        e.title, e.year = meta.title or e.id, meta.year
