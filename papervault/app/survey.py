"""The work of each survey stage: retrieve -> parse -> analyse -> index -> correlate -> outline -> draft -> polish.

Each stage is a function of the run's `SurveyContext` (the workspace with its settings, the topic, the slug,
the backend, and the run's own backend objects) and one typed input, returning plain (JSON-ready) data, so it
runs the same in this process, in a thread, or on a Dask worker. The survey itself, the stages in order with
the artefacts and commit after each, is declared once in `papervault.app.surveyplan` and run by the pipeline
runner through the executor the command chose.

`cache_key` is the digest every cross-paper stage's cache is keyed on: the stage code, the stage's inputs and
the survey templates that are actually rendered (a workspace's `templates/survey/` overrides included).
"""

from __future__ import annotations

import datetime as _dt
import hashlib
import json
import logging
import re
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any, Callable, TypeVar

from papervault import pages, templating
from papervault.agents import Task, capabilities
from papervault.app import inbox
from papervault.app.context import RunContext
from papervault.app.indexing import update_index
from papervault.app.versions import pin_versions
from papervault.errors import PapervaultError
from papervault.ingest import Ingest, _records
from papervault.pdfstore import pdf_of, pdf_refusal
from papervault import note_analysis as A
from papervault.survey import correlate as C
from papervault.survey import draft as D
from papervault.survey import export as E
from papervault.survey import judge
from papervault.survey import outline as O
from papervault.survey import polish as P
from papervault.survey.correlate import Correlation
from papervault.survey.evidence import Passage, best_support, index_passages, sentences
from papervault.survey.outline import Section
from papervault.survey.select import load_papers, resolve
from papervault.survey.support import SemanticJudge
from papervault.vault.paths import is_safe
from papervault.workspace import Workspace

T = TypeVar("T")
log = logging.getLogger("papervault.survey")


def _code_version() -> str:
    """A hash of the survey stages' code: part of every cache key, so an upgrade never serves results the old
    code made. (Templates are hashed per workspace, see `template_digest`.)"""
    h = hashlib.sha256()
    here = Path(C.__file__).resolve().parent
    agents = here.parent / "agents"     # the stages read paper.md and judge attribution through these two
    reader = here.parent / "vault" / "paper.py"     # ... which read paper.md through this one
    for f in sorted([*here.glob("*.py"), Path(__file__).resolve(), agents / "paperdoc.py", agents / "cited_work.py",
                     reader, here.parent / "note_analysis.py"]):
        h.update(f.name.encode())
        h.update(f.read_bytes())
    return h.hexdigest()[:12]


STAGE_VERSION = _code_version()


def template_digest(root: str | Path) -> str:
    """The survey templates a workspace renders (its own `templates/survey/` over the built-in ones)."""
    return templating.digest("survey", Path(root))


def note_template_digest(root: str | Path) -> str:
    """The note template, its schema and the analysis prompts a workspace renders."""
    return (templating.digest("", Path(root), pattern="*", names=("note.md.j2", "note.schema.json"))
            + templating.digest("prompts", Path(root)))


def digest(*parts: Any) -> str:
    h = hashlib.sha256(STAGE_VERSION.encode())
    for p in parts:
        h.update(json.dumps(p, sort_keys=True, default=str).encode())
        h.update(b"\0")
    return h.hexdigest()[:24]


def _file_hash(path: Path, vault_root: Path | None = None) -> str:
    if vault_root is not None and path.is_file() and not is_safe(vault_root, path):
        return "refused"          # a link out of the vault is never read (the task then fails with one line)
    return hashlib.sha256(path.read_bytes()).hexdigest()[:16] if path.is_file() else "-"


class SurveyContext(RunContext):
    """What every stage of one survey run is given (`RunContext`): the workspace with its settings, the
    topic, the slug, the backend, and the run's own backend objects."""

    def __init__(self, ws: Workspace, topic: str, slug: str, backend: str):
        super().__init__(ws, topic=topic, slug=slug, backend=backend)


def cache_key(stage: str, ctx: SurveyContext, given: Any) -> str | None:
    """The cache key of a cross-paper stage: its input, the run's topic and backend, the workspace (one
    workspace's results are never served to another) and the survey templates that workspace renders.
    None with `survey --no-cache` (`[agents] answer_cache = false`): ask again, so no result is served either."""
    if not ctx.ws.settings.agents.answer_cache:
        return None
    params = {"root": str(ctx.ws.root), "topic": ctx.topic, "backend": ctx.backend,
              **(asdict(given) if hasattr(given, "__dataclass_fields__") else {"input": given})}
    return f"{stage}-" + digest(params, template_digest(ctx.ws.root))


def analyse_key(ctx: SurveyContext, paper_id: str) -> str | None:
    """The cache key of one paper's analysis: the paper's full text and note, the backend, and the note
    templates the workspace renders (None with `survey --no-cache`)."""
    if not ctx.ws.settings.agents.answer_cache:
        return None
    v = ctx.ws.vault
    # The workspace is part of the key: the task's effect is a note in that vault, and a copy of the vault
    # elsewhere must be analysed there too.
    return "analyse-" + digest(str(ctx.ws.root), paper_id, ctx.backend, _file_hash(v.fulltext_path(paper_id), v.root),
                               _file_hash(v.note_path(paper_id), v.root), note_template_digest(ctx.ws.root))


def slugify(topic: str) -> str:
    s = re.sub(r"[^a-z0-9]+", "-", topic.lower()).strip("-")
    return s[:60].strip("-") or "survey"


# --- the typed inputs of the stages --------------------------------------------------------------

@dataclass(frozen=True)
class Selection:
    """Stage 1: which papers (`--papers` specs; none: the topic's), and how many at most."""
    specs: list[str] = field(default_factory=list)
    arxiv_max: int = 10
    max_papers: int | None = None


@dataclass(frozen=True)
class Corpus:
    """The selected papers (`ids`) and the digest of what the stages read of them (`inputs`)."""
    ids: list[str]
    inputs: str = ""


@dataclass(frozen=True)
class OutlineInput:
    ids: list[str]
    correlation: dict[str, Any]
    existing: str | None = None       # the outline.md on disk (a person's edits are kept)


@dataclass(frozen=True)
class SectionInput:
    section: dict[str, Any]
    ids: list[str]
    correlation: dict[str, Any]
    inputs: str = ""


@dataclass(frozen=True)
class PolishInput:
    ids: list[str]
    body: str
    threshold: float


def model_or_extractive(ctx: SurveyContext, backend: str, make_task: Callable[[], Task],
                        use: Callable[[Any, str], T | None], extractive: T,
                        on_failure: Callable[[PapervaultError], None] | None = None) -> T:
    """Ask a backend that writes prose for a better result; keep the extractive one when the backend only
    quotes, fails, or answers with nothing usable (`use(data, label)` returns None then)."""
    if not capabilities(backend).writes_prose:
        return extractive
    try:
        b = ctx.backend_for(backend)
        got = use(b.run(make_task()).data, b.label)
    except PapervaultError as exc:
        if on_failure:
            on_failure(exc)
        return extractive
    return extractive if got is None else got


def _render(ctx: SurveyContext, name: str, **context: Any) -> str:
    return E.render(name, ctx.ws.root / "templates" / "survey", **context)


# --- stage 1: retrieve -----------------------------------------------------------------------------

def retrieve(ctx: SurveyContext, sel: Selection) -> dict[str, Any]:
    """Resolve the selection (the papers about the topic when no specs are given) and write `selection.md`;
    `arxiv:QUERY` specs import the best arXiv matches first (committed). Papers the index lacks are indexed
    first through the one index update, so the topic can choose them."""
    ws, specs, slug = ctx.ws, list(sel.specs), ctx.slug
    got = resolve(ws, ctx.topic, specs, slug=slug, max_papers=sel.max_papers,
                  arxiv=lambda query: _retrieve_arxiv(ws, query, ctx.backend, sel.arxiv_max, slug),
                  reviewer=judge.reviewer(ws, ctx.backend, ctx.backend_for),
                  lookup=lambda works: _resolve_missing(ws, works), index_missing=_index_missing)
    log.info("selected %d papers (%s) in %.2f s", len(got.ids), ", ".join(specs or ["topic"]), got.seconds)
    if got.missing:     # what the selection cites and the vault lacks, offered where a person accepts papers
        inbox.add_cited(ws, slug, got.missing, len(got.ids),
                        _dt.datetime.now(_dt.timezone.utc).isoformat(timespec="seconds"))
    return {"ids": got.ids, "retrieved": got.retrieved, "problems": got.problems, "how": got.how, "edits": got.edits,
            "review": got.review, "review_cost": got.review_cost, "missing": [w.as_dict() for w in got.missing]}


RESOLVE_MISSING = 10        # works known by their title only that one survey run looks up online, at most


def _resolve_missing(ws: Workspace, works: list) -> list[str]:
    """With `[sources] online = true`, the DOI of each missing work known by its title only, from Crossref's
    bibliographic search (taken only when the title found is the same, normalised: `enrich.by_title`); at most
    RESOLVE_MISSING lookups a run. Returns one problem line when the service cannot be reached."""
    if not ws.settings.sources.online:
        return []
    from papervault.sources import enrich  # deferred: HTTP clients, only for a survey that looks works up

    for w in [w for w in works if not (w.doi or w.arxiv) and w.title][:RESOLVE_MISSING]:
        try:
            found = enrich.by_title(w.title, [w.author] if w.author else [], ws.settings)
        except PapervaultError as exc:
            return [f"looking up the works the selection cites failed: {exc}"]
        if found is not None and found.doi:
            w.doi = found.doi
            w.year = w.year or found.year
            w.key = f"doi:{found.doi.lower()}"
    return []


def _retrieve_arxiv(ws: Workspace, query: str, backend: str, max_results: int, slug: str) -> tuple[list[str], list[str]]:
    """Papers for the topic from arXiv, imported through the same path as `papervault add --arxiv-search`."""
    job = Ingest(ws, backend=backend)
    job.run(_records([], ws, {"arxiv_search": query, "max_results": max_results}))
    job.commit(f"survey {slug}: retrieve from arXiv for “{query}”")
    r = job.report
    ids = list(dict.fromkeys(r.added + [m["id"] for m in r.merged] + r.unchanged))
    return ids, [f"{p.source}: {p.error}" for p in r.problems]


# --- stage 2: parse (per paper) --------------------------------------------------------------------

def parse_paper(ctx: SurveyContext, paper_id: str) -> dict[str, Any]:
    """Parse a selected paper that has a PDF but no full text yet; others are left as they are."""
    from papervault.parse.batch import parse_cached   # heavy: PyMuPDF, only for a paper without full text

    ws = ctx.ws
    v = ws.vault
    if v.fulltext_path(paper_id).is_file():
        return {"id": paper_id, "status": "present"}
    meta = v.read_meta(paper_id)
    pdf = pdf_of(ws, meta)      # the workspace's kept copy only: a note's `files:` are never read
    if pdf is None:
        refused = pdf_refusal(ws, meta)
        return {"id": paper_id, "status": "no-pdf", **({"message": refused} if refused else {})}
    try:
        parsed = parse_cached(pdf, ws.settings.parse, ws.parse_cache_dir)
        v.write_fulltext(paper_id, parsed)      # refused (one line) when the paper's folder leads out of the vault
    except PapervaultError as exc:
        return {"id": paper_id, "status": "failed", "message": str(exc)}
    v.update_meta(paper_id, pages=parsed.pages, parser=parsed.parser, sha256=meta.sha256 or parsed.sha256,
                  status="parsed" if meta.status == "metadata" else meta.status)
    return {"id": paper_id, "status": "parsed"}


# --- stage 3: analyse (per paper) ------------------------------------------------------------------

def _outcome(o) -> dict[str, Any]:
    return {"id": o.paper_id, "status": o.status, "analyser": o.analyser, "figures": o.figures, "message": o.message}


def analyse_paper(ctx: SurveyContext, paper_id: str) -> dict[str, Any]:
    """Analyse one paper into its note; the analyser skips a note that is current (same source, backend)."""
    from papervault.parse.firstpass import is_first_pass, unfinished_words  # the parser itself stays unloaded

    ws = ctx.ws
    if not ws.vault.fulltext_path(paper_id).is_file():
        return {"id": paper_id, "status": "no-text", "message": "no paper.md to analyse"}
    if is_first_pass(ws.vault.read_meta(paper_id).parser):
        # A paper is analysed once, from its full parse (papervault.app.arrival), never from its first pass: the
        # survey reads its text layer as it is, and says so (`unfinished` in the report, selection.md)
        return {"id": paper_id, "status": "first-pass", "message": unfinished_words({})}
    try:
        return _outcome(A.analyse_paper(ws.vault, paper_id, ctx.backend_for(ctx.backend),
                                        template_dir=ws.root / "templates"))
    except PapervaultError as exc:  # one paper's failure is reported, the survey goes on without its analysis
        return {"id": paper_id, "status": "failed", "message": str(exc)}


# --- stage 4: index --------------------------------------------------------------------------------

def index(ctx: SurveyContext, ids: list[str]) -> dict[str, Any]:
    """Bring the index in step with the selected papers' notes and full texts (only new or changed chunks are
    embedded; the rest of the vault is not read). Paragraphs the background fill has not embedded yet are left
    to it (`pending`: how many of the selected papers' are): the survey reads them by their text and full-text
    rank meanwhile, and never waits for the fill (or for the arrival worker, whose papers it reads by their
    first pass)."""
    # the survey holds the write lock; the vectors of its papers' changed chunks are made now
    report = update_index(ctx.ws, paper_ids=ids, code=False, lock=None, fill_pending=False)
    out = {k: v for k, v in report.items() if isinstance(v, (int, float, str))}
    out["pending"] = _pending(ctx.ws, ids)
    return out


def _pending(ws: Workspace, ids: list[str]) -> int:
    """How many index rows of these papers still wait for the background fill's vector (0 when unknown)."""
    from papervault.index.store import PaperIndex  # deferred: pyarrow, with the index stage

    try:
        return PaperIndex(ws).pending(paper_ids=ids)
    except Exception:  # noqa: BLE001 - the count only informs the report; an unreadable index says 0
        return 0


def _index_missing(ws: Workspace, ids: list[str], embedder: Any) -> None:
    """The papers stage 1 found missing from the index, indexed through the one index update (the survey
    holds the write lock), without waiting for the background fill."""
    update_index(ws, paper_ids=ids, code=False, lock=None, embedder=embedder, fill_pending=False)


# --- stages 5-8 ------------------------------------------------------------------------------------

def _papers(ctx: SurveyContext, ids: list[str]):
    return load_papers(ctx.ws.vault, ids)[0]


def correlate(ctx: SurveyContext, corpus: Corpus) -> dict[str, Any]:
    """Themes, lineages, comparison, consensus, conflict and gaps of the selected papers."""
    ws, topic, ids, backend = ctx.ws, ctx.topic, corpus.ids, ctx.backend
    papers = _papers(ctx, ids)
    embed = None
    if len(papers) > 2:
        from papervault.index.embed import Embedder   # heavy: pyarrow and the index, only for 3+ papers

        embed = Embedder.for_workspace(ws).embed   # the index's model and precision: its vectors are cached
    result = C.correlate(topic, papers, embed=embed)

    def task() -> Task:
        return Task(kind="survey-correlation", key=f"correlation:{topic[:40]}", system=_render(ctx, "system.md.j2"),
                    prompt=_render(ctx, "correlate.prompt.md.j2", topic=topic, papers=papers, lineages=result.lineages),
                    schema=C.CORRELATION_SCHEMA, inputs={"topic": topic, "papers": ids})

    def failed(exc: PapervaultError) -> None:
        result.notes.append(f"the {backend} backend failed ({exc}); themes and statements are extractive")

    result = model_or_extractive(ctx, backend, task, lambda data, label: C.merge_model_answer(result, data, label),
                                 result, failed)
    return result.as_dict()


def outline(ctx: SurveyContext, given: OutlineInput) -> dict[str, Any]:
    """The outline: a person's edited `outline.md` is kept; otherwise a new one from the correlation."""
    topic, ids, existing = ctx.topic, given.ids, given.existing
    corr = Correlation.from_dict(given.correlation)
    papers = _papers(ctx, ids)
    if existing and O.is_edited(existing):
        kept, how = O.choose_outline(existing, O.Outline(topic, []))
        return {"outline": kept.as_dict(), "how": how}
    fresh = O.make_outline(topic, corr, papers)

    def task() -> Task:
        return Task(kind="survey-outline", key=f"outline:{topic[:40]}", system=_render(ctx, "system.md.j2"),
                    prompt=_render(ctx, "outline.prompt.md.j2", topic=topic, papers=papers, correlation=corr),
                    schema=O.OUTLINE_SCHEMA, inputs={"topic": topic})

    def use(data: Any, label: str):
        got = O.outline_from_answer(topic, data, set(ids), label)
        return got if got.sections else None

    # on failure the extractive outline stands; the report of the run says which backend made it
    fresh = model_or_extractive(ctx, ctx.backend, task, use, fresh)
    return {"outline": fresh.as_dict(), "how": "new"}


def draft(ctx: SurveyContext, given: SectionInput) -> dict[str, Any]:
    """One section: quotations of its papers (extractive), or prose a model writes from each cited paper's
    analysed note and the passages retrieved for the section (`draft.evidence_for`)."""
    topic, section = ctx.topic, given.section
    sec = Section(**section)
    papers = {p.id: p for p in _papers(ctx, given.ids)}
    corr = Correlation.from_dict(given.correlation)
    result = D.draft_section(sec, topic, papers, corr)
    if sec.kind in ("comparison",):
        return result.as_dict()         # the comparison table is built from the papers, never written
    evidence: dict[str, Any] = {"papers": [], "remarks": []}

    def task() -> Task:
        # each cited paper's analysed note and the passages the index retrieves for this section
        evidence.update(D.evidence_for(sec, topic, papers, ws=ctx.ws))
        return Task(kind="survey-section", key=f"section:{sec.title[:40]}", system=_render(ctx, "system.md.j2"),
                    prompt=_render(ctx, "draft.prompt.md.j2", topic=topic, section=sec, evidence=evidence),
                    schema=D.SECTION_SCHEMA, inputs={"section": section, "evidence": evidence})

    def use(data: Any, label: str):
        text = data["markdown"].strip()
        return D.SectionDraft(sec.title, text + "\n", list(sec.cites), label, D.evidence_quotes(evidence)) \
            if text else None

    # on failure keep the extractive section: quoted, cited, never invented
    return model_or_extractive(ctx, ctx.backend, task, use, result).as_dict()


def _searcher(ws, embedder):
    """The index's searcher for a whole polish run, or None when the index cannot be opened (an unbuilt index
    only costs recall: the full text is read anyway)."""
    from papervault.index.search import Searcher  # deferred: pyarrow, for this stage only
    try:
        return Searcher(ws, embedder)
    except Exception:  # noqa: BLE001 - as index_passages: no index, no passages from it
        return None


def polish(ctx: SurveyContext, given: PolishInput) -> dict[str, Any]:
    """Check citations, support, figures, formulas and repeated sentences of the drafted body; fix or flag.
    Cited claims are judged by the semantic judge (`papervault.survey.support`) with the index's embedding
    model, against the cited papers' text and the index's passages."""
    from papervault.index.embed import Embedder  # deferred: numpy and the model's runtime, for this stage only

    ws, slug, ids, body, threshold = ctx.ws, ctx.slug, given.ids, given.body, given.threshold
    v = ws.vault
    known = set(v.paper_ids())
    texts: dict[str, str] = {}
    labels: dict[str, list[str]] = {p.id: p.page_labels for p in load_papers(v, [i for i in ids if i in known])[0]}

    def text(pid: str) -> str:
        if pid not in texts:
            try:
                texts[pid] = v.read_fulltext(pid) if pid in known else ""
            except PapervaultError:          # a paper.md leading out of the vault is not evidence
                texts[pid] = ""
        return texts[pid]

    def support(claim: str, pid: str):
        return best_support(claim, pid, text(pid)) if text(pid) else None

    embedder = Embedder.for_workspace(ws)
    searcher: list = []

    def index(pid: str, claim: str):
        # the index's passages reach text the sentence splitter missed (list items, captions): as sentences.
        # One searcher for the whole run: its tables and model are opened once, not per claim.
        if not searcher:
            searcher.append(_searcher(ws, embedder))
        return [Passage(h.paper_id, s, h.page, h.section) for h in index_passages(ws, pid, claim, limit=4,
                                                                                 searcher=searcher[0])
                for s in (sentences(h.text) or [h.text])]

    def page_of(pid: str, label: str):
        return pages.pdf_page(labels.get(pid), label)

    judge = SemanticJudge(text, embedder.embed, threshold=threshold, page_of=page_of, index=index)
    sdir = v.survey_dir(slug).resolve()
    vroot = v.root.resolve()

    def figure_exists(src: str) -> bool:
        if re.match(r"^[a-z]+://", src):
            return True
        target = (sdir / src.split("#")[0]).resolve()
        return (target == vroot or vroot in target.parents) and target.is_file()

    return P.polish(body, known=known, selected=ids, support=support, judge=judge,
                    figure_exists=figure_exists).as_dict()


def _write(vault, path: Path, text: str) -> None:
    """Write a survey file (under vault/surveys/<slug>/) through the vault's write guard."""
    vault.write(path, text)


def assemble_survey(ws: Workspace, slug: str, topic: str, backend: str, drafts: list[dict[str, Any]],
                    survey_papers: list, figures: str = "", unfinished: int = 0) -> dict[str, Any]:
    """The drafted sections joined into `survey.md` (before polishing) with `references.bib` and
    `references.json` of every paper it cites; returns the body, header, title and `figures` (the figures'
    captions and text alternatives, `papervault.survey.figures`) for `write_survey`. `unfinished`: how many of
    the papers were read by their text layer only (their full parse still to come), said under the title."""
    sdir = ws.vault.survey_dir(slug)
    body = E.assemble(topic, [(d["title"], d["markdown"]) for d in drafts])
    cited = set(E.citations(body))
    bib_papers = [p for p in survey_papers if p.id in cited] or list(survey_papers)
    known = set(ws.vault.paper_ids())
    bib_papers += load_papers(ws.vault, sorted(cited - {p.id for p in survey_papers} & known))[0]
    _write(ws.vault, sdir / "references.bib", E.bibtex(bib_papers))
    # the arXiv version of each paper it cites
    _write(ws.vault, sdir / "references.json",
           json.dumps(pin_versions(ws.vault, E.csl_json(bib_papers)), indent=2, ensure_ascii=False) + "\n")
    title = f"{topic[:1].upper()}{topic[1:]}: a survey"
    doc = {"body": body, "cited": sorted(cited), "title": title,
           "header": E.yaml_header(title, slug, {"csl-json": "references.json"}), "figures": figures,
           "unfinished": unfinished}
    write_survey(ws, slug, doc, body, survey_papers, backend)
    return doc


def write_survey(ws: Workspace, slug: str, doc: dict[str, Any], body: str, survey_papers: list, backend: str) -> None:
    """`survey.md`: the header, title, paper list, figures and `body` rendered through `survey.md.j2`."""
    _write(ws.vault, ws.vault.survey_dir(slug) / "survey.md",
           E.render("survey.md.j2", ws.root / "templates" / "survey", header=doc["header"], title=doc["title"],
                    papers=survey_papers, backend=backend, body=body, figures=doc.get("figures", ""),
                    unfinished=doc.get("unfinished", 0)))
