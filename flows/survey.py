"""The Prefect flow `survey`: retrieve -> parse -> analyse -> index -> correlate -> outline -> draft -> polish.

Each stage is a task (per paper and per section stages are mapped), writes its artefact to
`vault/surveys/<slug>/` and commits the vault before the next starts, so a run that dies resumes where it
stopped: parsed papers have their `paper.md`, analysed papers a current note (skipped by the analyser), and
the cross-paper stages are cached by the content hash of everything they read. The whole run holds the
workspace writer lock.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import threading
import time
from pathlib import Path
from typing import Any

# The temporary local API server Prefect starts for an in-process run needs more than its default 20 s on a
# busy machine the first time (it creates its database); this must be set before Prefect reads its settings.
os.environ.setdefault("PREFECT_SERVER_EPHEMERAL_STARTUP_TIMEOUT_SECONDS", "180")

from prefect import flow, get_run_logger, task, unmapped  # noqa: E402
from prefect.artifacts import create_markdown_artifact, create_table_artifact  # noqa: E402
from prefect.task_runners import ThreadPoolTaskRunner  # noqa: E402

from papervault.errors import PapervaultError  # noqa: E402
from papervault.workspace import Workspace  # noqa: E402



def _code_version() -> str:
    """A hash of the survey stages' code and templates: part of every cache key, so an upgrade never serves
    results the old code made."""
    import papervault.survey.correlate as _c

    h = hashlib.sha256()
    here = Path(_c.__file__).resolve().parent
    tmpl = here.parents[1] / "templates" / "survey"
    for f in sorted([*here.glob("*.py"), *tmpl.glob("*.j2")]):
        h.update(f.name.encode())
        h.update(f.read_bytes())
    return h.hexdigest()[:12]


STAGE_VERSION = _code_version()

_BACKENDS: dict[tuple[str, str], Any] = {}
_BACKENDS_LOCK = threading.Lock()


def _log():
    """The run's logger inside a flow or task run; a plain logger when a task's function is called directly."""
    try:
        return get_run_logger()
    except Exception:
        import logging

        return logging.getLogger("papervault.flows.survey")


def _ws(root: str) -> Workspace:
    return Workspace(root).require()


def _backend(root: str, name: str):
    """One backend object per workspace and name in this process (its breaker and run log are shared)."""
    from papervault.agents import get_backend

    with _BACKENDS_LOCK:
        key = (root, name)
        if key not in _BACKENDS:
            ws = _ws(root)
            _BACKENDS[key] = get_backend(name, ws.settings, state_dir=ws.state_dir)
        return _BACKENDS[key]


def _digest(*parts: Any) -> str:
    h = hashlib.sha256(STAGE_VERSION.encode())
    for p in parts:
        h.update(json.dumps(p, sort_keys=True, default=str).encode())
        h.update(b"\0")
    return h.hexdigest()[:24]


def _file_hash(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()[:16] if path.is_file() else "-"


def slugify(topic: str) -> str:
    s = re.sub(r"[^a-z0-9]+", "-", topic.lower()).strip("-")
    return s[:60].strip("-") or "survey"


def _commit(root: str, message: str, paths: list[Path] | None = None) -> str | None:
    sha = _ws(root).vault.commit(message, paths)
    if sha:
        _log().info("commit %s: %s", sha[:8], message.splitlines()[0])
    return sha


# --- cache keys (content hashes of what each task reads) -----------------------------------------

def _analyse_key(context, params) -> str:
    ws = Workspace(params["root"])
    v = ws.vault
    pid = params["paper_id"]
    # The workspace is part of the key: the task's effect is a note in that vault, and a copy of the vault
    # elsewhere must be analysed there too.
    return "analyse-" + _digest(str(ws.root), pid, params["backend"], _file_hash(v.fulltext_path(pid)),
                                _file_hash(v.note_path(pid)))


def _inputs_key(context, params) -> str:
    # Every parameter, the workspace included: one workspace's results are never served to another.
    return f"{context.task.name}-" + _digest(params)


# --- stage 1: retrieve -----------------------------------------------------------------------------

@task(name="retrieve", retries=2, retry_delay_seconds=5)
def retrieve(root: str, specs: list[str], backend: str, slug: str, arxiv_max: int = 10, topic: str = "",
             max_papers: int | None = None) -> dict[str, Any]:
    """Resolve the selection (the papers about the topic without specs) and write `selection.md`."""
    from papervault.survey.select import resolve

    ws = _ws(root)
    got = resolve(ws, topic, specs, slug=slug, max_papers=max_papers,
                  arxiv=lambda query: _retrieve_arxiv(ws, query, backend, arxiv_max, slug))
    _log().info("selected %d papers (%s) in %.2f s", len(got.ids), ", ".join(specs or ["topic"]), got.seconds)
    return {"ids": got.ids, "retrieved": got.retrieved, "problems": got.problems, "how": got.how, "edits": got.edits}


def _retrieve_arxiv(ws: Workspace, query: str, backend: str, max_results: int, slug: str) -> tuple[list[str], list[str]]:
    """Papers for the topic from arXiv, imported through the same path as `papervault add --arxiv-search`."""
    from papervault.ingest import Ingest, _records

    job = Ingest(ws, backend=backend)
    job.run(_records([], ws, {"arxiv_search": query, "max_results": max_results}))
    job.commit(f"survey {slug}: retrieve from arXiv for “{query}”")
    r = job.report
    ids = list(dict.fromkeys(r.added + [m["id"] for m in r.merged] + r.unchanged))
    return ids, [f"{p.source}: {p.error}" for p in r.problems]


# --- stage 2: parse (per paper) --------------------------------------------------------------------

@task(name="parse", retries=1, retry_delay_seconds=2)
def parse_paper(root: str, paper_id: str) -> dict[str, Any]:
    """Parse a selected paper that has a PDF but no full text yet; others are left as they are."""
    from papervault.parse.batch import parse_cached

    ws = _ws(root)
    v = ws.vault
    if v.fulltext_path(paper_id).is_file():
        return {"id": paper_id, "status": "present"}
    meta = v.read_meta(paper_id)
    pdfs = [f for f in meta.files if Path(f).is_file()]
    if not pdfs:
        return {"id": paper_id, "status": "no-pdf"}
    try:
        parsed = parse_cached(Path(pdfs[0]), ws.settings.parse, ws.parse_cache_dir)
    except PapervaultError as exc:
        return {"id": paper_id, "status": "failed", "message": str(exc)}
    v.write_fulltext(paper_id, parsed)
    v.update_meta(paper_id, pages=parsed.pages, parser=parsed.parser, sha256=meta.sha256 or parsed.sha256,
                  status="parsed" if meta.status == "metadata" else meta.status)
    return {"id": paper_id, "status": "parsed"}


# --- stage 3: analyse (per paper) ------------------------------------------------------------------

@task(name="analyse", retries=1, retry_delay_seconds=5, cache_key_fn=_analyse_key, persist_result=True)
def analyse(root: str, paper_id: str, backend: str) -> dict[str, Any]:
    """Analyse one paper into its note; the analyser skips a note that is current (same source, backend)."""
    from papervault.survey.analyse import analyse_paper

    ws = _ws(root)
    if not ws.vault.fulltext_path(paper_id).is_file():
        return {"id": paper_id, "status": "no-text", "message": "no paper.md to analyse"}
    try:
        out = analyse_paper(ws.vault, paper_id, _backend(root, backend), template_dir=ws.root / "templates")
    except PapervaultError as exc:  # one paper's failure is reported, the survey goes on without its analysis
        return {"id": paper_id, "status": "failed", "message": str(exc)}
    return {"id": paper_id, "status": out.status, "analyser": out.analyser, "figures": out.figures,
            "message": out.message}


# --- stage 4: index --------------------------------------------------------------------------------

@task(name="index", retries=1, retry_delay_seconds=5)
def index(root: str, ids: list[str] | None = None) -> dict[str, Any]:
    """Bring the index in step with the selected papers' notes and full texts (only new or changed chunks are
    embedded; the rest of the vault is not read)."""
    from papervault.index.store import PaperIndex

    report = PaperIndex(_ws(root)).sync(paper_ids=ids) or {}
    return {k: v for k, v in dict(report).items() if isinstance(v, (int, float, str))}


# --- stages 5-8 ------------------------------------------------------------------------------------

def _papers(root: str, ids: list[str]):
    from papervault.survey.select import load_papers

    return load_papers(_ws(root).vault, ids)[0]


@task(name="correlate", retries=1, cache_key_fn=_inputs_key, persist_result=True)
def correlate(root: str, topic: str, ids: list[str], backend: str, inputs: str) -> dict[str, Any]:
    """Themes, lineages, comparison, consensus, conflict and gaps of the selected papers."""
    from papervault.survey import correlate as C

    ws = _ws(root)
    papers = _papers(root, ids)
    embed = None
    if len(papers) > 2:
        from papervault.index.embed import Embedder

        embed = Embedder(ws.settings.embed).embed
    result = C.correlate(topic, papers, embed=embed)
    if backend != "extractive":
        from papervault.agents.base import Task
        from papervault.survey.export import render

        tdir = ws.root / "templates" / "survey"
        t = Task(kind="survey-correlation", key=f"correlation:{topic[:40]}",
                 system=render("system.md.j2", tdir),
                 prompt=render("correlate.prompt.md.j2", tdir, topic=topic, papers=papers, lineages=result.lineages),
                 schema=C.CORRELATION_SCHEMA, inputs={"topic": topic, "papers": ids})
        try:
            b = _backend(root, backend)
            result = C.merge_model_answer(result, b.run(t).data, b.label)
        except PapervaultError as exc:
            result.notes.append(f"the {backend} backend failed ({exc}); themes and statements are extractive")
    return result.as_dict()


@task(name="outline", retries=1, cache_key_fn=_inputs_key, persist_result=True)
def outline(root: str, topic: str, ids: list[str], backend: str, correlation: dict[str, Any],
            existing: str | None) -> dict[str, Any]:
    """The outline: a person's edited `outline.md` is kept; otherwise a new one from the correlation."""
    from papervault.survey import outline as O
    from papervault.survey.correlate import Correlation

    ws = _ws(root)
    corr = Correlation.from_dict(correlation)
    papers = _papers(root, ids)
    if existing and O.is_edited(existing):
        kept, how = O.choose_outline(existing, O.Outline(topic, []))
        return {"outline": kept.as_dict(), "how": how}
    fresh = O.make_outline(topic, corr, papers)
    if backend != "extractive":
        from papervault.agents.base import Task
        from papervault.survey.export import render

        tdir = ws.root / "templates" / "survey"
        t = Task(kind="survey-outline", key=f"outline:{topic[:40]}", system=render("system.md.j2", tdir),
                 prompt=render("outline.prompt.md.j2", tdir, topic=topic, papers=papers, correlation=corr),
                 schema=O.OUTLINE_SCHEMA, inputs={"topic": topic})
        try:
            b = _backend(root, backend)
            got = O.outline_from_answer(topic, b.run(t).data, set(ids), b.label)
            if got.sections:
                fresh = got
        except PapervaultError:
            pass  # the extractive outline stands; the report of the run says which backend made it
    return {"outline": fresh.as_dict(), "how": "new"}


@task(name="draft", retries=2, retry_delay_seconds=5, cache_key_fn=_inputs_key, persist_result=True)
def draft(root: str, section: dict[str, Any], topic: str, ids: list[str], backend: str,
          correlation: dict[str, Any], inputs: str) -> dict[str, Any]:
    """One section: quotations of its papers (extractive) or prose from their passages (a model)."""
    from papervault.survey import draft as D
    from papervault.survey.correlate import Correlation
    from papervault.survey.outline import Section

    sec = Section(**section)
    papers = {p.id: p for p in _papers(root, ids)}
    corr = Correlation.from_dict(correlation)
    result = D.draft_section(sec, topic, papers, corr)
    if backend != "extractive" and sec.kind not in ("comparison",):
        from papervault.agents.base import Task
        from papervault.survey.export import render

        ws = _ws(root)
        tdir = ws.root / "templates" / "survey"
        evidence = D.evidence_for(sec, topic, papers)
        t = Task(kind="survey-section", key=f"section:{sec.title[:40]}", system=render("system.md.j2", tdir),
                 prompt=render("draft.prompt.md.j2", tdir, topic=topic, section=sec, evidence=evidence),
                 schema=D.SECTION_SCHEMA, inputs={"section": section, "evidence": evidence})
        try:
            b = _backend(root, backend)
            text = b.run(t).data["markdown"].strip()
            if text:
                result = D.SectionDraft(sec.title, text + "\n", list(sec.cites), b.label, evidence)
        except PapervaultError:
            pass  # keep the extractive section: quoted, cited, never invented
    return result.as_dict()


@task(name="polish", retries=1)
def polish(root: str, slug: str, ids: list[str], body: str, threshold: float) -> dict[str, Any]:
    """Check citations, support, figures, formulas and duplicates of the drafted body; fix or flag."""
    from papervault.survey import polish as P
    from papervault.survey.evidence import best_support

    ws = _ws(root)
    v = ws.vault
    known = set(v.paper_ids())
    texts: dict[str, str] = {}

    def support(claim: str, pid: str):
        if pid not in texts:
            texts[pid] = v.read_fulltext(pid) if pid in known else ""
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


# --- the flow --------------------------------------------------------------------------------------

def _gather(futures, ids: list[str]) -> list[dict[str, Any]]:
    """Results of a per-paper map; a task that failed after its retries is one paper's problem, not the run's."""
    out = []
    for pid, f in zip(ids, futures):
        try:
            out.append(f.result())
        except Exception as exc:
            out.append({"id": pid, "status": "failed", "message": f"{type(exc).__name__}: {exc}"})
    return out


def _write(path: Path, text: str) -> None:
    from papervault.vault.store import atomic_write

    atomic_write(path, text)


@flow(name="survey", task_runner=ThreadPoolTaskRunner(max_workers=4), log_prints=True)
def survey(topic: str, slug: str | None = None, papers: list[str] | None = None, backend: str | None = None,
           workspace: str | None = None, arxiv_max: int = 10, threshold: float | None = None,
           max_papers: int | None = None) -> dict[str, Any]:
    """Write a literature survey of vault papers on `topic` into `vault/surveys/<slug>/`."""
    from papervault.survey import export as E
    from papervault.survey.correlate import Correlation
    from papervault.survey.outline import Outline, Section, render_outline
    from papervault.survey.polish import SUPPORT_THRESHOLD
    from papervault.survey.select import load_papers, selection_digest

    t_start = time.perf_counter()
    ws = Workspace.resolve(workspace).require()
    root = str(ws.root)
    backend = (backend or ws.settings.agents.backend or "extractive").lower()
    slug = slug or slugify(topic)
    threshold = SUPPORT_THRESHOLD if threshold is None else threshold
    specs = list(papers or [])
    sdir = ws.vault.survey_dir(slug)
    tdir = ws.root / "templates" / "survey"
    log = _log()
    timings: dict[str, float] = {}
    commits: list[str] = []

    def stage_done(name: str, t0: float, message: str | None = None, paths: list[Path] | None = None) -> None:
        timings[name] = round(time.perf_counter() - t0, 2)
        if message:
            sha = _commit(root, message, paths)
            if sha:
                commits.append(sha)

    with ws.write_lock("survey"):
        sdir.mkdir(parents=True, exist_ok=True)
        # 1. retrieve
        t0 = time.perf_counter()
        sel = retrieve(root, specs, backend, slug, arxiv_max, topic, max_papers)
        ids = sel["ids"]
        if not ids:
            raise PapervaultError(f"no papers selected by {', '.join(specs) or 'the topic'}",
                                  fix="add papers with `papervault add`, add some to selection.md, or choose "
                                      "another --papers selection")
        stage_done("retrieve", t0, f"survey {slug}: select {len(ids)} papers ({sel['how']}"
                   + (f"; {len(sel['edits']['added'])} added, {len(sel['edits']['struck'])} struck out in "
                      "selection.md" if any(sel["edits"].values()) else "") + ")", [sdir / "selection.md"])

        # 2. parse, per paper
        t0 = time.perf_counter()
        parsed = _gather(parse_paper.map(unmapped(root), ids), ids)
        newly = [p["id"] for p in parsed if p["status"] == "parsed"]
        stage_done("parse", t0, f"survey {slug}: parse {len(newly)} selected paper(s) lacking full text "
                   f"({', '.join(newly[:5])})" if newly else None, [ws.vault.papers_dir])

        # 3. analyse, per paper (skipped when the note is current)
        t0 = time.perf_counter()
        analysed = _gather(analyse.map(unmapped(root), ids, unmapped(backend)), ids)
        done = [a["id"] for a in analysed if a["status"] in ("analysed", "kept-edit")]
        current = [a["id"] for a in analysed if a["status"] == "skipped"]
        failed = [a for a in analysed if a["status"] == "failed"]
        msg = (f"survey {slug}: analyse {len(done)} paper(s) with {backend} ({', '.join(done[:5])}"
               f"{' and more' if len(done) > 5 else ''}); {len(current)} already current"
               + (f"; {len(failed)} failed" if failed else "")) if done else None
        stage_done("analyse", t0, msg, [ws.vault.papers_dir])

        # 4. index
        t0 = time.perf_counter()
        try:
            indexed = index(root, ids)
        except Exception as exc:  # polishing falls back to the papers' own sentences
            log.warning("index sync failed: %s", exc)
            indexed = {"error": str(exc)}
        stage_done("index", t0)

        survey_papers, problems = load_papers(ws.vault, ids)
        inputs = selection_digest(survey_papers)

        # 5. correlate
        t0 = time.perf_counter()
        corr_d = correlate(root, topic, ids, backend, inputs)
        corr = Correlation.from_dict(corr_d)
        _write(sdir / "correlation.md", E.render("correlation.md.j2", tdir, c=corr, topic=topic, slug=slug, inputs=inputs))
        create_table_artifact(
            key=f"survey-{slug}-comparison"[:100].lower(),
            table=[{"paper": r.paper_id, "method": (r.method or "")[:120], "datasets": "; ".join(r.datasets),
                    "metrics": "; ".join(r.metrics), "results": "; ".join(r.results)[:200]} for r in corr.comparison],
            description=f"Comparison table of the survey “{topic}”")
        stage_done("correlate", t0, f"survey {slug}: correlate {len(ids)} papers ({len(corr.clusters)} themes, "
                   f"{len(corr.lineages)} lineages, {len(corr.gaps)} gaps) to plan the outline",
                   [sdir / "correlation.md"])

        # 6. outline (a person's edited outline is kept)
        t0 = time.perf_counter()
        opath = sdir / "outline.md"
        existing = opath.read_text(encoding="utf-8") if opath.is_file() else None
        out = outline(root, topic, ids, backend, corr_d, existing)
        o = Outline(topic=out["outline"]["topic"] or topic,
                    sections=[Section(**s) for s in out["outline"]["sections"]],
                    edited=out["outline"]["edited"], backend=out["outline"]["backend"])
        if out["how"] == "new":
            _write(opath, render_outline(o, slug=slug, inputs=inputs, template_dir=tdir))
        create_markdown_artifact(key=f"survey-{slug}-outline"[:100].lower(), markdown=opath.read_text(encoding="utf-8"),
                                 description=f"Outline of the survey “{topic}”")
        stage_done("outline", t0, f"survey {slug}: outline of {len(o.sections)} sections" +
                   (" (kept the edited outline)" if out["how"] == "kept" else " (new; edit it and run again to change the survey)"),
                   [opath])

        # 7. draft, per section
        t0 = time.perf_counter()
        sec_dicts = [s.__dict__ | {} for s in o.sections]
        drafts = [f.result() for f in draft.map(unmapped(root), sec_dicts, unmapped(topic), unmapped(ids),
                                                unmapped(backend), unmapped(corr_d), unmapped(inputs))]
        body = E.assemble(topic, [(d["title"], d["markdown"]) for d in drafts])
        cited = set(E.citations(body))
        bib_papers = [p for p in survey_papers if p.id in cited] or survey_papers
        known = set(ws.vault.paper_ids())
        extra = [p for p in load_papers(ws.vault, sorted(cited - {p.id for p in survey_papers} & known))[0]]
        bib_papers += extra
        _write(sdir / "references.bib", E.bibtex(bib_papers))
        _write(sdir / "references.json", json.dumps(E.csl_json(bib_papers), indent=2, ensure_ascii=False) + "\n")
        title = f"{topic[:1].upper()}{topic[1:]}: a survey"
        header = E.yaml_header(title, slug, {"csl-json": "references.json"})
        doc = E.render("survey.md.j2", tdir, header=header, title=title, papers=survey_papers, backend=backend, body=body)
        _write(sdir / "survey.md", doc)
        stage_done("draft", t0, f"survey {slug}: draft {len(drafts)} sections citing {len(cited)} papers "
                   f"(before polishing)", [sdir])

        # 8. polish
        t0 = time.perf_counter()
        res = polish(root, slug, ids, body, threshold)
        from papervault.survey.polish import Change, Flag, PolishResult

        pr = PolishResult(markdown=res["markdown"], changes=[Change(**c) for c in res["changes"]],
                          flags=[Flag(**f) for f in res["flags"]], claims=res["claims"], supported=res["supported"])
        doc = E.render("survey.md.j2", tdir, header=header, title=title, papers=survey_papers, backend=backend,
                       body=pr.markdown)
        _write(sdir / "survey.md", doc)
        _write(sdir / "polish-report.md", E.render("polish-report.md.j2", tdir, r=pr, slug=slug, topic=topic,
                                                   threshold=threshold, citations=E.citations(pr.markdown)))
        stage_done("polish", t0, f"survey {slug}: polish ({pr.claims} cited claims checked, {len(pr.changes)} "
                   f"fixed, {len(pr.flags)} still flagged)", [sdir])

    return {
        "slug": slug, "topic": topic, "backend": backend, "dir": str(sdir), "papers": ids,
        "retrieved": sel["retrieved"], "problems": sel["problems"] + problems, "selection": sel["how"],
        "edits": sel["edits"],
        "parsed": newly, "analysed": done, "current": current,
        "failed": [{"id": a["id"], "message": a.get("message", "")} for a in failed],
        "index": indexed, "themes": len(corr.clusters), "lineages": len(corr.lineages),
        "outline": out["how"], "sections": len(o.sections), "claims": pr.claims, "supported": pr.supported,
        "changes": len(pr.changes), "flags": len(pr.flags), "commits": commits, "timings": timings,
        "seconds": round(time.perf_counter() - t_start, 2),
    }


def _api_for_workers():
    """Dask workers are other processes and must reach the API the flow uses. With no server configured, start
    Prefect's temporary local server here (it would otherwise be private to this process) and point the
    workers at it through the environment they inherit. Returns the variables to restore afterwards."""
    from prefect.settings import PREFECT_API_URL

    if PREFECT_API_URL.value():
        return None
    from prefect.server.api.server import SubprocessASGIServer

    server = SubprocessASGIServer()
    server.start(timeout=int(os.environ.get("PREFECT_SERVER_EPHEMERAL_STARTUP_TIMEOUT_SECONDS", "180")))
    previous = os.environ.get("PREFECT_API_URL")
    os.environ["PREFECT_API_URL"] = server.api_url
    return server.api_url, previous


def run_survey(topic: str, *, task_runner: str = "thread", workers: int | None = None, **params: Any) -> dict[str, Any]:
    """Run the flow in this process with the chosen task runner (`thread`, or `dask` for a local cluster)."""
    if task_runner == "dask":
        try:
            from prefect_dask import DaskTaskRunner
        except ImportError:
            raise PapervaultError("the dask task runner needs prefect-dask", fix="pip install prefect-dask") from None
        import logging

        from prefect.settings import PREFECT_API_URL, temporary_settings

        runner = DaskTaskRunner(cluster_kwargs={"n_workers": workers or 2, "threads_per_worker": 2,
                                                "processes": True, "dashboard_address": None,
                                                "silence_logs": logging.WARNING})
        api = _api_for_workers()
        if api is None:
            return survey.with_options(task_runner=runner)(topic, **params)
        url, previous = api
        try:
            with temporary_settings({PREFECT_API_URL: url}):
                return survey.with_options(task_runner=runner)(topic, **params)
        finally:
            if previous is None:
                os.environ.pop("PREFECT_API_URL", None)
            else:
                os.environ["PREFECT_API_URL"] = previous
    if workers:
        return survey.with_options(task_runner=ThreadPoolTaskRunner(max_workers=workers))(topic, **params)
    return survey(topic, **params)
