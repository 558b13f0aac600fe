"""A survey, stage by stage: retrieve -> parse -> analyse -> index -> correlate -> outline -> draft -> polish.

Each stage is a plain function of a workspace and plain data that returns plain (JSON-ready) data, so it runs
and tests without Prefect. `run_stages` is the survey itself: it calls the stages through a `Stages` object,
writes each stage's artefact to `vault/surveys/<slug>/` and commits the vault before the next starts. The
Prefect flow (`flows/survey.py`) passes a `Stages` whose methods are tasks (retries, cache keys, mapping over
papers and sections); `run_survey_inprocess` passes the plain one.

`cache_key` is the digest every cross-paper stage's cache is keyed on: the stage code, the stage's inputs and
the survey templates that are actually rendered (a workspace's `templates/survey/` overrides included).
"""

from __future__ import annotations

import datetime as _dt
import hashlib
import json
import logging
import re
import threading
import time
from pathlib import Path
from typing import Any, Callable, TypeVar

from papervault import templating
from papervault.agents import Backend, Task, capabilities, get_backend
from papervault.app import inbox
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
from papervault.survey.evidence import best_support
from papervault.survey.figures import write_figures
from papervault.survey.outline import Outline, Section, render_outline
from papervault.survey.polish import SUPPORT_THRESHOLD, Change, Flag, PolishResult
from papervault.survey.select import load_papers, resolve, selection_digest
from papervault.vault.paths import is_safe
from papervault.wording import plural
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


def cache_key(stage: str, params: dict[str, Any]) -> str:
    """The cache key of a cross-paper stage: every parameter (the workspace included: one workspace's results
    are never served to another) and the survey templates that workspace renders."""
    return f"{stage}-" + digest(params, template_digest(params["root"]))


def analyse_key(params: dict[str, Any]) -> str:
    """The cache key of one paper's analysis: the paper's full text and note, the backend, and the note
    templates the workspace renders."""
    ws = Workspace(params["root"])
    v = ws.vault
    pid = params["paper_id"]
    # The workspace is part of the key: the task's effect is a note in that vault, and a copy of the vault
    # elsewhere must be analysed there too.
    return "analyse-" + digest(str(ws.root), pid, params["backend"], _file_hash(v.fulltext_path(pid), v.root),
                               _file_hash(v.note_path(pid), v.root), note_template_digest(ws.root))


def slugify(topic: str) -> str:
    s = re.sub(r"[^a-z0-9]+", "-", topic.lower()).strip("-")
    return s[:60].strip("-") or "survey"


def _ws(root: str | Path) -> Workspace:
    return Workspace(root).require()


_BACKENDS: dict[tuple[str, str, bool], Backend] = {}
_BACKENDS_LOCK = threading.Lock()


def backend_for(root: str | Path, name: str) -> Backend:
    """One backend object per workspace and name in this process (its breaker and run log are shared)."""
    ws = _ws(root)
    with _BACKENDS_LOCK:
        key = (str(root), name, ws.settings.agents.answer_cache)      # `survey --no-cache` gets a backend of its own
        if key not in _BACKENDS:
            _BACKENDS[key] = get_backend(name, ws.settings, state_dir=ws.state_dir)
        return _BACKENDS[key]


def model_or_extractive(root: str | Path, backend: str, make_task: Callable[[], Task],
                        use: Callable[[Any, str], T | None], extractive: T,
                        on_failure: Callable[[PapervaultError], None] | None = None) -> T:
    """Ask a backend that writes prose for a better result; keep the extractive one when the backend only
    quotes, fails, or answers with nothing usable (`use(data, label)` returns None then)."""
    if not capabilities(backend).writes_prose:
        return extractive
    try:
        b = backend_for(root, backend)
        got = use(b.run(make_task()).data, b.label)
    except PapervaultError as exc:
        if on_failure:
            on_failure(exc)
        return extractive
    return extractive if got is None else got


def _render(root: str | Path, name: str, **context: Any) -> str:
    return E.render(name, Path(root) / "templates" / "survey", **context)


# --- stage 1: retrieve -----------------------------------------------------------------------------

def retrieve(root: str, specs: list[str], backend: str, slug: str, arxiv_max: int = 10, topic: str = "",
             max_papers: int | None = None) -> dict[str, Any]:
    """Resolve the selection (the papers about the topic when no specs are given) and write `selection.md`;
    `arxiv:QUERY` specs import the best arXiv matches first (committed)."""
    ws = _ws(root)
    got = resolve(ws, topic, specs, slug=slug, max_papers=max_papers,
                  arxiv=lambda query: _retrieve_arxiv(ws, query, backend, arxiv_max, slug),
                  reviewer=judge.reviewer(ws, backend, lambda name: backend_for(ws.root, name)),
                  lookup=lambda works: _resolve_missing(ws, works))
    log.info("selected %d papers (%s) in %.2f s", len(got.ids), ", ".join(specs or ["topic"]), got.seconds)
    if got.missing:     # what the selection cites and the vault lacks, offered where a person accepts papers
        inbox.add_cited(ws, slug, got.missing, len(got.ids),
                        _dt.datetime.now(_dt.timezone.utc).isoformat(timespec="seconds"))
    return {"ids": got.ids, "retrieved": got.retrieved, "problems": got.problems, "how": got.how, "edits": got.edits,
            "review": got.review, "missing": [w.as_dict() for w in got.missing]}


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

def parse_paper(root: str, paper_id: str) -> dict[str, Any]:
    """Parse a selected paper that has a PDF but no full text yet; others are left as they are."""
    from papervault.parse.batch import parse_cached   # heavy: PyMuPDF, only for a paper without full text

    ws = _ws(root)
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


def analyse_paper(root: str, paper_id: str, backend: str) -> dict[str, Any]:
    """Analyse one paper into its note; the analyser skips a note that is current (same source, backend)."""
    ws = _ws(root)
    if not ws.vault.fulltext_path(paper_id).is_file():
        return {"id": paper_id, "status": "no-text", "message": "no paper.md to analyse"}
    try:
        return _outcome(A.analyse_paper(ws.vault, paper_id, backend_for(root, backend), template_dir=ws.root / "templates"))
    except PapervaultError as exc:  # one paper's failure is reported, the survey goes on without its analysis
        return {"id": paper_id, "status": "failed", "message": str(exc)}


def analyse_papers(root: str, ids: list[str], backend: str) -> list[dict[str, Any]]:
    """Analyse many papers with the concurrent analyser (`[agents] concurrency` at once), in `ids` order."""
    ws = _ws(root)
    with_text = [pid for pid in ids if ws.vault.fulltext_path(pid).is_file()]
    done = {o.paper_id: _outcome(o) for o in A.analyse_papers(ws.vault, with_text, backend_for(root, backend),
                                                   template_dir=ws.root / "templates")}
    return [done.get(pid) or {"id": pid, "status": "no-text", "message": "no paper.md to analyse"} for pid in ids]


# --- stage 4: index --------------------------------------------------------------------------------

def index(root: str, ids: list[str] | None = None) -> dict[str, Any]:
    """Bring the index in step with the selected papers' notes and full texts (only new or changed chunks are
    embedded; the rest of the vault is not read)."""
    # the survey holds the write lock; every vector of its papers is made (it ranks passages by them)
    report = update_index(_ws(root), paper_ids=ids, code=False, lock=None)
    return {k: v for k, v in report.items() if isinstance(v, (int, float, str))}


# --- stages 5-8 ------------------------------------------------------------------------------------

def _papers(root: str, ids: list[str]):
    return load_papers(_ws(root).vault, ids)[0]


def correlate(root: str, topic: str, ids: list[str], backend: str, inputs: str) -> dict[str, Any]:
    """Themes, lineages, comparison, consensus, conflict and gaps of the selected papers."""
    ws = _ws(root)
    papers = _papers(root, ids)
    embed = None
    if len(papers) > 2:
        from papervault.index.embed import Embedder   # heavy: pyarrow and the index, only for 3+ papers

        embed = Embedder.for_workspace(ws).embed   # the index's model and precision: its vectors are cached
    result = C.correlate(topic, papers, embed=embed)

    def task() -> Task:
        return Task(kind="survey-correlation", key=f"correlation:{topic[:40]}", system=_render(root, "system.md.j2"),
                    prompt=_render(root, "correlate.prompt.md.j2", topic=topic, papers=papers, lineages=result.lineages),
                    schema=C.CORRELATION_SCHEMA, inputs={"topic": topic, "papers": ids})

    def failed(exc: PapervaultError) -> None:
        result.notes.append(f"the {backend} backend failed ({exc}); themes and statements are extractive")

    result = model_or_extractive(root, backend, task, lambda data, label: C.merge_model_answer(result, data, label),
                                 result, failed)
    return result.as_dict()


def outline(root: str, topic: str, ids: list[str], backend: str, correlation: dict[str, Any],
            existing: str | None) -> dict[str, Any]:
    """The outline: a person's edited `outline.md` is kept; otherwise a new one from the correlation."""
    corr = Correlation.from_dict(correlation)
    papers = _papers(root, ids)
    if existing and O.is_edited(existing):
        kept, how = O.choose_outline(existing, O.Outline(topic, []))
        return {"outline": kept.as_dict(), "how": how}
    fresh = O.make_outline(topic, corr, papers)

    def task() -> Task:
        return Task(kind="survey-outline", key=f"outline:{topic[:40]}", system=_render(root, "system.md.j2"),
                    prompt=_render(root, "outline.prompt.md.j2", topic=topic, papers=papers, correlation=corr),
                    schema=O.OUTLINE_SCHEMA, inputs={"topic": topic})

    def use(data: Any, label: str):
        got = O.outline_from_answer(topic, data, set(ids), label)
        return got if got.sections else None

    # on failure the extractive outline stands; the report of the run says which backend made it
    fresh = model_or_extractive(root, backend, task, use, fresh)
    return {"outline": fresh.as_dict(), "how": "new"}


def draft(root: str, section: dict[str, Any], topic: str, ids: list[str], backend: str,
          correlation: dict[str, Any], inputs: str) -> dict[str, Any]:
    """One section: quotations of its papers (extractive), or prose a model writes from each cited paper's
    analysed note and the passages retrieved for the section (`draft.evidence_for`)."""
    sec = Section(**section)
    papers = {p.id: p for p in _papers(root, ids)}
    corr = Correlation.from_dict(correlation)
    result = D.draft_section(sec, topic, papers, corr)
    if sec.kind in ("comparison",):
        return result.as_dict()         # the comparison table is built from the papers, never written
    evidence: dict[str, Any] = {"papers": [], "remarks": []}

    def task() -> Task:
        # each cited paper's analysed note and the passages the index retrieves for this section
        evidence.update(D.evidence_for(sec, topic, papers, ws=_ws(root)))
        return Task(kind="survey-section", key=f"section:{sec.title[:40]}", system=_render(root, "system.md.j2"),
                    prompt=_render(root, "draft.prompt.md.j2", topic=topic, section=sec, evidence=evidence),
                    schema=D.SECTION_SCHEMA, inputs={"section": section, "evidence": evidence})

    def use(data: Any, label: str):
        text = data["markdown"].strip()
        return D.SectionDraft(sec.title, text + "\n", list(sec.cites), label, D.evidence_quotes(evidence)) \
            if text else None

    # on failure keep the extractive section: quoted, cited, never invented
    return model_or_extractive(root, backend, task, use, result).as_dict()


def polish(root: str, slug: str, ids: list[str], body: str, threshold: float) -> dict[str, Any]:
    """Check citations, support, figures, formulas and repeated sentences of the drafted body; fix or flag."""
    ws = _ws(root)
    v = ws.vault
    known = set(v.paper_ids())
    texts: dict[str, str] = {}

    def support(claim: str, pid: str):
        if pid not in texts:
            try:
                texts[pid] = v.read_fulltext(pid) if pid in known else ""
            except PapervaultError:          # a paper.md leading out of the vault is not evidence
                texts[pid] = ""
        if not texts[pid]:
            return None
        return best_support(claim, pid, texts[pid], ws=ws, enough=threshold)

    sdir = v.survey_dir(slug).resolve()
    vroot = v.root.resolve()

    def figure_exists(src: str) -> bool:
        if re.match(r"^[a-z]+://", src):
            return True
        target = (sdir / src.split("#")[0]).resolve()
        return (target == vroot or vroot in target.parents) and target.is_file()

    return P.polish(body, known=known, selected=ids, support=support, figure_exists=figure_exists,
                    threshold=threshold).as_dict()


# --- the survey, stage by stage ----------------------------------------------------------------------

class Stages:
    """How `run_stages` calls each stage: here directly, in this thread. The Prefect flow subclasses it so each
    call is a task (mapped over papers and sections) and artefacts also become Prefect artifacts.

    `progress(stage, seconds)`, when a front end hands one down, is told as each stage finishes (the CLI's
    `[3/8] analyse  2.1 s` lines)."""

    def __init__(self, root: str, progress: Callable[[str, float], None] | None = None):
        self.root = root
        self.progress = progress

    def retrieve(self, specs: list[str], backend: str, slug: str, arxiv_max: int, topic: str = "",
                 max_papers: int | None = None) -> dict[str, Any]:
        return retrieve(self.root, specs, backend, slug, arxiv_max, topic, max_papers)

    def parse(self, ids: list[str]) -> list[dict[str, Any]]:
        return [parse_paper(self.root, pid) for pid in ids]

    def analyse(self, ids: list[str], backend: str) -> list[dict[str, Any]]:
        return analyse_papers(self.root, ids, backend)

    def index(self, ids: list[str] | None = None) -> dict[str, Any]:
        return index(self.root, ids)

    def correlate(self, topic: str, ids: list[str], backend: str, inputs: str) -> dict[str, Any]:
        return correlate(self.root, topic, ids, backend, inputs)

    def outline(self, topic: str, ids: list[str], backend: str, correlation: dict[str, Any],
                existing: str | None) -> dict[str, Any]:
        return outline(self.root, topic, ids, backend, correlation, existing)

    def draft(self, sections: list[dict[str, Any]], topic: str, ids: list[str], backend: str,
              correlation: dict[str, Any], inputs: str) -> list[dict[str, Any]]:
        return [draft(self.root, s, topic, ids, backend, correlation, inputs) for s in sections]

    def polish(self, slug: str, ids: list[str], body: str, threshold: float) -> dict[str, Any]:
        return polish(self.root, slug, ids, body, threshold)

    def table_artifact(self, key: str, rows: list[dict[str, Any]], description: str) -> None:
        """A table worth showing beside the run (the comparison); nothing to do without an orchestrator."""

    def markdown_artifact(self, key: str, markdown: str, description: str) -> None:
        """A document worth showing beside the run (the outline); nothing to do without an orchestrator."""

    def log(self):
        return log

    def on_stage(self, name: str, seconds: float) -> None:
        """Called as each stage finishes: tells the progress a front end handed down, if any."""
        if self.progress is not None:
            self.progress(name, seconds)


def _write(vault, path: Path, text: str) -> None:
    """Write a survey file (under vault/surveys/<slug>/) through the vault's write guard."""
    vault.write(path, text)


def run_stages(stages: Stages, topic: str, *, slug: str | None = None, papers: list[str] | None = None,
               backend: str | None = None, arxiv_max: int = 10, threshold: float | None = None,
               max_papers: int | None = None, select_only: bool = False) -> dict[str, Any]:
    """Write a literature survey of vault papers on `topic` into `vault/surveys/<slug>/`, one stage at a time.
    Without `papers`, stage 1 selects the vault papers about the topic (see `papervault.survey.topic`).
    `select_only` stops after stage 1: `selection.md` is written and committed for a person to review and edit
    before the other seven stages run (the next run keeps the edits)."""
    run = _SurveyRun(stages, topic, slug=slug, backend=backend, threshold=threshold)
    with run.ws.write_lock("survey"):
        run.ws.vault.guard(run.sdir)  # a survey folder that is a link out of the vault is refused, not written
        run.sdir.mkdir(parents=True, exist_ok=True)
        sel = run.retrieve(list(papers or []), arxiv_max, max_papers)
        if select_only:
            return run.summary(sel, stopped_after="retrieve")
        ids = sel["ids"]
        newly = run.parse(ids)
        analysed = run.analyse(ids)
        indexed = run.index(ids)
        survey_papers, problems = load_papers(run.ws.vault, ids)
        inputs = selection_digest(survey_papers)
        corr_d, corr, figures_md = run.correlate(ids, survey_papers, inputs)
        out, o = run.outline(ids, corr_d, inputs)
        doc = run.draft(ids, o, corr_d, inputs, survey_papers, figures_md)
        pr = run.polish(ids, doc, survey_papers)
    return run.summary(sel, problems=problems) | {
        "parsed": newly,
        "analysed": [a["id"] for a in analysed if a["status"] in ("analysed", "kept-edit")],
        "current": [a["id"] for a in analysed if a["status"] == "skipped"],
        "failed": [{"id": a["id"], "message": a.get("message", "")} for a in analysed if a["status"] == "failed"],
        "index": indexed, "themes": len(corr.clusters), "lineages": len(corr.lineages),
        "outline": out["how"], "sections": len(o.sections), "claims": pr.claims, "supported": pr.supported,
        "changes": len(pr.changes), "flags": len(pr.flags), "commits": run.commits, "timings": run.timings,
        "seconds": round(time.perf_counter() - run.t_start, 2),
    }


class _SurveyRun:
    """One survey run of `run_stages`: its settings and, per stage, a method that calls the stage through
    `stages`, writes the stage's artefacts and commits them (`stage_done`)."""

    def __init__(self, stages: Stages, topic: str, *, slug: str | None, backend: str | None,
                 threshold: float | None):
        self.t_start = time.perf_counter()
        self.stages, self.topic = stages, topic
        self.ws = _ws(stages.root)
        self.backend = (backend or self.ws.settings.agents.backend or "extractive").lower()
        capabilities(self.backend)           # an unknown backend fails before any work
        self.slug = slug or slugify(topic)
        self.threshold = SUPPORT_THRESHOLD if threshold is None else threshold
        self.sdir = self.ws.vault.survey_dir(self.slug)
        self.tdir = self.ws.root / "templates" / "survey"
        self.logger = stages.log()
        self.timings: dict[str, float] = {}
        self.commits: list[str] = []

    def stage_done(self, name: str, t0: float, message: str | None = None, paths: list[Path] | None = None) -> None:
        """Record the stage's time, tell the stages (progress), and commit its artefacts with `message`."""
        self.timings[name] = round(time.perf_counter() - t0, 2)
        self.stages.on_stage(name, self.timings[name])
        if message:
            sha = self.ws.vault.commit(message, paths)
            if sha:
                self.logger.info("commit %s: %s", sha[:8], message.splitlines()[0])
                self.commits.append(sha)

    def summary(self, sel: dict[str, Any], *, problems: list | None = None, **extra: Any) -> dict[str, Any]:
        """What every run reports: the survey, its selection, commits and times (`extra`: where it stopped)."""
        return {"slug": self.slug, "topic": self.topic, "backend": self.backend, "dir": str(self.sdir),
                "papers": sel["ids"], "retrieved": sel["retrieved"], "problems": sel["problems"] + (problems or []),
                "selection": sel["how"], "review": sel.get("review", ""), "missing": sel.get("missing", []),
                "edits": sel["edits"], **extra,
                "commits": self.commits,
                "timings": self.timings, "seconds": round(time.perf_counter() - self.t_start, 2)}

    def retrieve(self, specs: list[str], arxiv_max: int, max_papers: int | None) -> dict[str, Any]:
        """1. The selection (`selection.md`); no paper selected is an error naming what to do."""
        t0 = time.perf_counter()
        sel = self.stages.retrieve(specs, self.backend, self.slug, arxiv_max, self.topic, max_papers)
        ids = sel["ids"]
        if not ids:
            raise PapervaultError(f"no papers selected by {', '.join(specs) or 'the topic'}",
                                  fix="add papers with `papervault add`, add some to selection.md, or choose "
                                      "another --papers selection")
        self.stage_done("retrieve", t0, f"survey {self.slug}: select {plural(len(ids), 'paper')} ({sel['how']}"
                        + (f"; {sel['review']}" if sel.get("review") else "")
                        + (f"; {len(sel['edits']['added'])} added, {len(sel['edits']['struck'])} struck out in "
                           "selection.md" if any(sel["edits"].values()) else "") + ")", [self.sdir / "selection.md"])
        return sel

    def parse(self, ids: list[str]) -> list[str]:
        """2. Parse, per paper, the selected papers lacking full text; returns those newly parsed."""
        t0 = time.perf_counter()
        parsed = self.stages.parse(ids)
        newly = [p["id"] for p in parsed if p["status"] == "parsed"]
        for p in parsed:
            if p.get("message"):           # a refused note path, a failed parse: one line each
                self.logger.warning("parse %s: %s", p["id"], p["message"])
        self.stage_done("parse", t0, f"survey {self.slug}: parse {plural(len(newly), 'selected paper')} lacking "
                        f"full text ({', '.join(newly[:5])})" if newly else None, [self.ws.vault.papers_dir])
        return newly

    def analyse(self, ids: list[str]) -> list[dict[str, Any]]:
        """3. Analyse, per paper (skipped when the note is current)."""
        t0 = time.perf_counter()
        analysed = self.stages.analyse(ids, self.backend)
        done = [a["id"] for a in analysed if a["status"] in ("analysed", "kept-edit")]
        current = [a["id"] for a in analysed if a["status"] == "skipped"]
        failed = [a for a in analysed if a["status"] == "failed"]
        msg = (f"survey {self.slug}: analyse {plural(len(done), 'paper')} with {self.backend} "
               f"({', '.join(done[:5])}{' and more' if len(done) > 5 else ''}); {len(current)} already current"
               + (f"; {len(failed)} failed" if failed else "")) if done else None
        self.stage_done("analyse", t0, msg, [self.ws.vault.papers_dir])
        return analysed

    def index(self, ids: list[str]) -> dict[str, Any]:
        """4. Bring the index up to date; a failure only costs polishing its evidence search."""
        t0 = time.perf_counter()
        try:
            indexed = self.stages.index(ids)
        except Exception as exc:  # polishing falls back to the papers' own sentences
            self.logger.warning("index sync failed: %s", exc)
            indexed = {"error": str(exc)}
        self.stage_done("index", t0)
        return indexed

    def correlate(self, ids: list[str], survey_papers: list, inputs: str) -> tuple[dict[str, Any], Correlation, str]:
        """5. Correlate: `correlation.md`, the lineage graph and timeline, the comparison table."""
        t0 = time.perf_counter()
        corr_d = self.stages.correlate(self.topic, ids, self.backend, inputs)
        corr = Correlation.from_dict(corr_d)
        _write(self.ws.vault, self.sdir / "correlation.md",
               E.render("correlation.md.j2", self.tdir, c=corr, topic=self.topic, slug=self.slug, inputs=inputs))
        # the lineage graph and the timeline (SVG, beside survey.md), drawn from the correlation
        figures_md, figure_paths = write_figures(self.ws.vault, self.slug, corr, survey_papers)
        self.stages.table_artifact(
            f"survey-{self.slug}-comparison"[:100].lower(),
            [{"paper": r.paper_id, "method": (r.method or "")[:120], "datasets": "; ".join(r.datasets),
              "metrics": "; ".join(r.metrics), "results": "; ".join(r.results)[:200]} for r in corr.comparison],
            f"Comparison table of the survey “{self.topic}”")
        self.stage_done("correlate", t0, f"survey {self.slug}: correlate {plural(len(ids), 'paper')} "
                        f"({plural(len(corr.clusters), 'theme')}, {len(corr.lineages)} lineages, {len(corr.gaps)} "
                        f"gaps) to plan the outline", [self.sdir / "correlation.md", *figure_paths])
        return corr_d, corr, figures_md

    def outline(self, ids: list[str], corr_d: dict[str, Any], inputs: str) -> tuple[dict[str, Any], Outline]:
        """6. The outline (`outline.md`); a person's edited outline is kept."""
        t0 = time.perf_counter()
        opath = self.sdir / "outline.md"
        existing = opath.read_text(encoding="utf-8") \
            if opath.is_file() and is_safe(self.ws.vault.root, opath) else None
        out = self.stages.outline(self.topic, ids, self.backend, corr_d, existing)
        o = Outline(topic=out["outline"]["topic"] or self.topic,
                    sections=[Section(**s) for s in out["outline"]["sections"]],
                    edited=out["outline"]["edited"], backend=out["outline"]["backend"])
        if out["how"] == "new":
            _write(self.ws.vault, opath, render_outline(o, slug=self.slug, inputs=inputs, template_dir=self.tdir))
        self.stages.markdown_artifact(f"survey-{self.slug}-outline"[:100].lower(), opath.read_text(encoding="utf-8"),
                                      f"Outline of the survey “{self.topic}”")
        self.stage_done("outline", t0, f"survey {self.slug}: outline of {len(o.sections)} sections" +
                        (" (kept the edited outline)" if out["how"] == "kept"
                         else " (new; edit it and run again to change the survey)"), [opath])
        return out, o

    def draft(self, ids: list[str], o: Outline, corr_d: dict[str, Any], inputs: str, survey_papers: list,
              figures_md: str) -> dict[str, Any]:
        """7. Draft, per section, and assemble `survey.md` (before polishing) with its references."""
        t0 = time.perf_counter()
        drafts = self.stages.draft([s.__dict__ | {} for s in o.sections], self.topic, ids, self.backend, corr_d,
                                   inputs)
        doc = assemble_survey(self.ws, self.slug, self.topic, self.backend, drafts, survey_papers,
                              figures=figures_md)
        self.stage_done("draft", t0, f"survey {self.slug}: draft {plural(len(drafts), 'section')} citing "
                        f"{plural(len(doc['cited']), 'paper')} (before polishing)", [self.sdir])
        return doc

    def polish(self, ids: list[str], doc: dict[str, Any], survey_papers: list) -> PolishResult:
        """8. Polish: the final `survey.md` and `polish-report.md`."""
        t0 = time.perf_counter()
        res = self.stages.polish(self.slug, ids, doc["body"], self.threshold)
        pr = PolishResult(markdown=res["markdown"], changes=[Change(**c) for c in res["changes"]],
                          flags=[Flag(**f) for f in res["flags"]], claims=res["claims"], supported=res["supported"])
        write_survey(self.ws, self.slug, doc, pr.markdown, survey_papers, self.backend)
        _write(self.ws.vault, self.sdir / "polish-report.md",
               E.render("polish-report.md.j2", self.tdir, r=pr, slug=self.slug, topic=self.topic,
                        threshold=self.threshold, citations=E.citations(pr.markdown)))
        self.stage_done("polish", t0, f"survey {self.slug}: polish ({pr.claims} cited claims checked, "
                        f"{len(pr.changes)} fixed, {len(pr.flags)} still flagged)", [self.sdir])
        return pr


def assemble_survey(ws: Workspace, slug: str, topic: str, backend: str, drafts: list[dict[str, Any]],
                    survey_papers: list, figures: str = "") -> dict[str, Any]:
    """The drafted sections joined into `survey.md` (before polishing) with `references.bib` and
    `references.json` of every paper it cites; returns the body, header, title and `figures` (the figures'
    captions and text alternatives, `papervault.survey.figures`) for `write_survey`."""
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
           "header": E.yaml_header(title, slug, {"csl-json": "references.json"}), "figures": figures}
    write_survey(ws, slug, doc, body, survey_papers, backend)
    return doc


def write_survey(ws: Workspace, slug: str, doc: dict[str, Any], body: str, survey_papers: list, backend: str) -> None:
    """`survey.md`: the header, title, paper list, figures and `body` rendered through `survey.md.j2`."""
    _write(ws.vault, ws.vault.survey_dir(slug) / "survey.md",
           E.render("survey.md.j2", ws.root / "templates" / "survey", header=doc["header"], title=doc["title"],
                    papers=survey_papers, backend=backend, body=body, figures=doc.get("figures", "")))


def run_survey_inprocess(topic: str, *, workspace: str | Path | None = None,
                         progress: Callable[[str, float], None] | None = None, **params: Any) -> dict[str, Any]:
    """A whole survey in this process and thread, without Prefect (the same stages and artefacts)."""
    ws = Workspace.resolve(str(workspace) if workspace is not None else None).require()
    return run_stages(Stages(str(ws.root), progress), topic, **params)
