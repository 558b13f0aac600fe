"""The survey, declared once: its eight stages in order, each a function of the run's context and a typed input
(`papervault.app.survey`), with what the writer does after it (the stage's artefacts in
`vault/surveys/<slug>/` and one commit). `run_survey` runs the declaration through an executor: in this
process by default, or Prefect's (`flows/executor.py`: tasks with retries and cache keys, on threads or a Dask
cluster), which the command line passes for `--task-runner`.

    retrieve -> parse* -> analyse* -> index -> correlate -> outline -> draft* -> polish      (* per paper/section)
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable

from papervault.agents import capabilities
from papervault.app import survey as S
from papervault.errors import PapervaultError
from papervault.pipeline.executors import InProcess
from papervault.pipeline.runner import Run, results, run
from papervault.pipeline.stage import Pipeline, Stage
from papervault.survey import export as E
from papervault.survey.correlate import Correlation
from papervault.survey.figures import write_figures
from papervault.survey.outline import Outline, Section, render_outline
from papervault.survey.polish import SUPPORT_THRESHOLD, Change, Flag, PolishResult
from papervault.survey.select import load_papers, selection_digest
from papervault.vault.paths import is_safe
from papervault.wording import plural
from papervault.workspace import Workspace


@dataclass
class SurveyState:
    """What one survey run knows so far; each stage's `then` adds to it in the writer's process."""
    ctx: S.SurveyContext
    selection: S.Selection
    threshold: float
    select_only: bool = False
    run: Run | None = None
    stopped: bool = False
    sel: dict[str, Any] = field(default_factory=dict)
    ids: list[str] = field(default_factory=list)
    parsed: list[str] = field(default_factory=list)
    analysed: list[dict[str, Any]] = field(default_factory=list)
    indexed: dict[str, Any] = field(default_factory=dict)
    papers: list = field(default_factory=list)
    problems: list[str] = field(default_factory=list)
    inputs: str = ""
    corr_d: dict[str, Any] = field(default_factory=dict)
    corr: Correlation | None = None
    figures_md: str = ""
    out: dict[str, Any] = field(default_factory=dict)
    outline: Outline | None = None
    doc: dict[str, Any] = field(default_factory=dict)
    polished: PolishResult | None = None
    commits: list[str] = field(default_factory=list)
    unfinished: dict[str, dict] = field(default_factory=dict)   # selected papers still read by their first pass

    @property
    def ws(self) -> Workspace:
        return self.ctx.ws

    @property
    def sdir(self) -> Path:
        return self.ws.vault.survey_dir(self.ctx.slug)

    @property
    def tdir(self) -> Path:
        return self.ws.root / "templates" / "survey"

    def commit(self, message: str | None, paths: list[Path]) -> None:
        """Commit a stage's artefacts (`paths` only) with `message`; nothing when there is no message."""
        if not message:
            return
        sha = self.ws.vault.commit(message, paths)
        if sha:
            self.run.log.info("commit %s: %s", sha[:8], message.splitlines()[0])
            self.commits.append(sha)


# --- after each stage, in the writer ---------------------------------------------------------------

def _selected(st: SurveyState, sel: dict[str, Any]) -> None:
    """1. The selection (`selection.md`); no paper selected is an error naming what to do."""
    from papervault.parse.firstpass import unfinished   # deferred: the parser itself stays unloaded

    st.sel, st.ids = sel, sel["ids"]
    st.unfinished = unfinished(st.ws, st.ids)
    if not st.ids:
        raise PapervaultError(f"no papers selected by {', '.join(st.selection.specs) or 'the topic'}",
                              fix="add papers with `papervault add`, add some to selection.md, or choose "
                                  "another --papers selection")
    edits = sel["edits"]
    st.commit(f"survey {st.ctx.slug}: select {plural(len(st.ids), 'paper')} ({sel['how']}"
              + (f"; {sel['review']}" if sel.get("review") else "")
              + (f"; {len(edits['added'])} added, {len(edits['struck'])} struck out in selection.md"
                 if any(edits.values()) else "") + ")", [st.sdir / "selection.md"])
    st.stopped = st.select_only


def _failed(status: str) -> Callable[[str, Any], dict[str, Any]]:
    return lambda pid, f: {"id": pid, "status": status, "message": f.error}


def _parsed(st: SurveyState, outs: list) -> None:
    """2. The selected papers newly parsed; a refused note path or a failed parse is one line each."""
    outs = results(outs, _failed("failed"))
    st.parsed = [p["id"] for p in outs if p["status"] == "parsed"]
    for p in outs:
        if p.get("message"):
            st.run.log.warning("parse %s: %s", p["id"], p["message"])
    st.commit(f"survey {st.ctx.slug}: parse {plural(len(st.parsed), 'selected paper')} lacking full text "
              f"({', '.join(st.parsed[:5])})" if st.parsed else None, [st.ws.vault.papers_dir])


def _analysed(st: SurveyState, outs: list) -> None:
    """3. The notes analysed (a current note is skipped); one paper's failure is reported, not raised."""
    st.analysed = outs = results(outs, _failed("failed"))
    done = [a["id"] for a in outs if a["status"] in ("analysed", "kept-edit")]
    current = [a["id"] for a in outs if a["status"] == "skipped"]
    failed = [a for a in outs if a["status"] == "failed"]
    waiting = [a for a in outs if a["status"] == "first-pass"]    # analysed after their full parse, not here
    st.commit((f"survey {st.ctx.slug}: analyse {plural(len(done), 'paper')} with {st.ctx.backend} "
               f"({', '.join(done[:5])}{' and more' if len(done) > 5 else ''}); {len(current)} already current"
               + (f"; {len(failed)} failed" if failed else "")
               + (f"; {len(waiting)} read by the text layer only, not analysed yet" if waiting else ""))
              if done else None, [st.ws.vault.papers_dir])


def _index(run_: Run, ids: list[str]) -> dict[str, Any]:
    """4. The index brought up to date; a failure only costs polishing its evidence search."""
    try:
        return run_.executor.call(INDEX, run_.context, ids)
    except Exception as exc:  # polishing falls back to the papers' own sentences
        run_.log.warning("index sync failed: %s", exc)
        return {"error": str(exc)}


def _indexed(st: SurveyState, report: dict[str, Any]) -> None:
    st.indexed = report
    st.papers, st.problems = load_papers(st.ws.vault, st.ids)
    st.inputs = selection_digest(st.papers)


def _correlated(st: SurveyState, corr_d: dict[str, Any]) -> None:
    """5. `correlation.md`, the lineage graph and timeline, the comparison table."""
    st.corr_d, st.corr = corr_d, Correlation.from_dict(corr_d)
    S._write(st.ws.vault, st.sdir / "correlation.md", E.render("correlation.md.j2", st.tdir, c=st.corr,
             topic=st.ctx.topic, slug=st.ctx.slug, inputs=st.inputs))
    st.figures_md, figure_paths = write_figures(st.ws.vault, st.ctx.slug, st.corr, st.papers)
    st.run.artifact("table", f"survey-{st.ctx.slug}-comparison"[:100].lower(),
                    [{"paper": r.paper_id, "method": (r.method or "")[:120], "datasets": "; ".join(r.datasets),
                      "metrics": "; ".join(r.metrics), "results": "; ".join(r.results)[:200]}
                     for r in st.corr.comparison], f"Comparison table of the survey “{st.ctx.topic}”")
    st.commit(f"survey {st.ctx.slug}: correlate {plural(len(st.ids), 'paper')} "
              f"({plural(len(st.corr.clusters), 'theme')}, {len(st.corr.lineages)} lineages, {len(st.corr.gaps)} "
              "gaps) to plan the outline",
              [st.sdir / "correlation.md", *figure_paths])


def _outline_input(st: SurveyState) -> S.OutlineInput:
    opath = st.sdir / "outline.md"
    existing = opath.read_text(encoding="utf-8") if opath.is_file() and is_safe(st.ws.vault.root, opath) else None
    return S.OutlineInput(st.ids, st.corr_d, existing)


def _outlined(st: SurveyState, out: dict[str, Any]) -> None:
    """6. `outline.md` (new), or a person's edited outline kept."""
    opath = st.sdir / "outline.md"
    st.out = out
    st.outline = o = Outline(topic=out["outline"]["topic"] or st.ctx.topic,
                             sections=[Section(**s) for s in out["outline"]["sections"]],
                             edited=out["outline"]["edited"], backend=out["outline"]["backend"])
    if out["how"] == "new":
        S._write(st.ws.vault, opath, render_outline(o, slug=st.ctx.slug, inputs=st.inputs, template_dir=st.tdir))
    st.run.artifact("markdown", f"survey-{st.ctx.slug}-outline"[:100].lower(), opath.read_text(encoding="utf-8"),
                    f"Outline of the survey “{st.ctx.topic}”")
    st.commit(f"survey {st.ctx.slug}: outline of {len(o.sections)} sections" +
              (" (kept the edited outline)" if out["how"] == "kept"
               else " (new; edit it and run again to change the survey)"), [opath])


def _drafted(st: SurveyState, drafts: list) -> None:
    """7. The sections assembled into `survey.md` (before polishing) with its references."""
    for d in drafts:
        if not isinstance(d, dict):     # a section task that failed after its retries fails the survey
            raise PapervaultError(f"drafting a section failed: {d.error}", fix="run the survey again")
    st.doc = S.assemble_survey(st.ws, st.ctx.slug, st.ctx.topic, st.ctx.backend, drafts, st.papers,
                               figures=st.figures_md, unfinished=len(st.unfinished))
    st.commit(f"survey {st.ctx.slug}: draft {plural(len(drafts), 'section')} citing "
              f"{plural(len(st.doc['cited']), 'paper')} (before polishing)", [st.sdir])


def _polished(st: SurveyState, res: dict[str, Any]) -> None:
    """8. The final `survey.md` and `polish-report.md`."""
    st.polished = pr = PolishResult(markdown=res["markdown"], changes=[Change(**c) for c in res["changes"]],
                                    flags=[Flag(**f) for f in res["flags"]], claims=res["claims"],
                                    supported=res["supported"], attributed=res["attributed"],
                                    scores=res["scores"])
    S.write_survey(st.ws, st.ctx.slug, st.doc, pr.markdown, st.papers, st.ctx.backend)
    S._write(st.ws.vault, st.sdir / "polish-report.md",
             E.render("polish-report.md.j2", st.tdir, r=pr, slug=st.ctx.slug, topic=st.ctx.topic,
                      threshold=st.threshold, citations=E.citations(pr.markdown)))
    st.commit(f"survey {st.ctx.slug}: polish ({pr.claims} cited claims checked, {len(pr.changes)} fixed, "
              f"{len(pr.flags)} still flagged)", [st.sdir])


def _key(name: str) -> Callable[[S.SurveyContext, Any], str | None]:
    return lambda ctx, given: S.cache_key(name, ctx, given)


# --- the declaration --------------------------------------------------------------------------------

INDEX = Stage("index", S.index, retries=1, retry_delay=5)

SURVEY = Pipeline("survey", (
    Stage("retrieve", S.retrieve, retries=2, retry_delay=5, given=lambda st: st.selection, then=_selected),
    Stage("parse", S.parse_paper, per_paper=True, retries=1, retry_delay=2, threads=False,
          given=lambda st: st.ids, then=_parsed),
    Stage("analyse", S.analyse_paper, per_paper=True, retries=1, retry_delay=5, cache_key=S.analyse_key,
          given=lambda st: st.ids, then=_analysed),
    Stage("index", _index, writer=True, parts=(INDEX,), given=lambda st: st.ids, then=_indexed),
    Stage("correlate", S.correlate, retries=1, cache_key=_key("correlate"),
          given=lambda st: S.Corpus(st.ids, st.inputs), then=_correlated),
    Stage("outline", S.outline, retries=1, cache_key=_key("outline"), given=_outline_input, then=_outlined),
    Stage("draft", S.draft, per_paper=True, retries=2, retry_delay=5, cache_key=_key("draft"),
          given=lambda st: [S.SectionInput(s.__dict__ | {}, st.ids, st.corr_d, st.inputs)
                            for s in st.outline.sections], then=_drafted),
    Stage("polish", S.polish, retries=1, given=lambda st: S.PolishInput(st.ids, st.doc["body"], st.threshold),
          then=_polished),
), doc="a literature survey of vault papers on a topic, in vault/surveys/<slug>/")


def run_survey(ws: Workspace, topic: str, *, executor: Any = None, on_stage: Callable[[str, float], None] | None = None,
               slug: str | None = None, papers: list[str] | None = None, backend: str | None = None,
               arxiv_max: int = 10, threshold: float | None = None, max_papers: int | None = None,
               select_only: bool = False) -> dict[str, Any]:
    """Write a literature survey of vault papers on `topic` into `vault/surveys/<slug>/`: SURVEY run through
    `executor` (in this process when None, `[agents] concurrency` papers or sections at once) under the
    workspace write lock. Without `papers`, stage 1 selects
    the vault papers about the topic; `select_only` stops after it, for a person to review `selection.md`.
    `on_stage(name, seconds)` is told as each stage ends (the CLI's `[3/8] analyse  2.1 s` lines)."""
    t_start = time.perf_counter()
    ws.require()
    name = (backend or ws.settings.agents.backend or "extractive").lower()
    capabilities(name)           # an unknown backend fails before any work
    ctx = S.SurveyContext(ws, topic, slug or S.slugify(topic), name)
    st = SurveyState(ctx, S.Selection(list(papers or []), arxiv_max, max_papers),
                     SUPPORT_THRESHOLD if threshold is None else threshold, select_only)
    with ws.write_lock("survey"):
        ws.vault.guard(st.sdir)  # a survey folder that is a link out of the vault is refused, not written
        st.sdir.mkdir(parents=True, exist_ok=True)
        done = run(SURVEY, ctx, st, executor or InProcess(ws.settings.agents.concurrency), on_stage=on_stage)
    return _report(st, done, t_start)


def _report(st: SurveyState, done: Run, t_start: float) -> dict[str, Any]:
    """What a run reports: the survey, its selection, commits and times, and after a whole run its stages'."""
    sel = st.sel
    out = {"slug": st.ctx.slug, "topic": st.ctx.topic, "backend": st.ctx.backend, "dir": str(st.sdir),
           "papers": sel["ids"], "retrieved": sel["retrieved"], "problems": sel["problems"] + st.problems,
           "selection": sel["how"], "review": sel.get("review", ""),
           "review_cost": sel.get("review_cost", {}), "missing": sel.get("missing", []),
           "edits": sel["edits"], "unfinished": _unfinished(st)}
    if st.select_only:
        out["stopped_after"] = "retrieve"
    else:
        pr = st.polished
        out |= {"parsed": st.parsed,
                "analysed": [a["id"] for a in st.analysed if a["status"] in ("analysed", "kept-edit")],
                "current": [a["id"] for a in st.analysed if a["status"] == "skipped"],
                "failed": [{"id": a["id"], "message": a.get("message", "")} for a in st.analysed
                           if a["status"] == "failed"],
                "index": st.indexed, "themes": len(st.corr.clusters), "lineages": len(st.corr.lineages),
                "outline": st.out["how"], "sections": len(st.outline.sections), "claims": pr.claims,
                "supported": pr.supported, "changes": len(pr.changes), "flags": len(pr.flags)}
    return out | {"commits": st.commits, "timings": done.timings,
                  "seconds": round(time.perf_counter() - t_start, 2)}


def _unfinished(st: SurveyState) -> dict[str, Any]:
    """What the survey read before it was finished: the selected papers still read by their first pass (text
    layer only, pages waiting for OCR, not analysed), the paragraphs of the selection whose vectors the
    background fill has not made yet, and how to get the complete survey (`hint`, when anything is unfinished)."""
    from papervault.parse.firstpass import behind, unfinished_words  # deferred: the parser stays unloaded

    papers = [{"id": pid, "pending_pages": info["pending_pages"], "stage": "text layer",
               "note": unfinished_words(info)} for pid, info in st.unfinished.items()]
    pending = int(st.indexed.get("pending") or 0) if isinstance(st.indexed, dict) else 0
    out: dict[str, Any] = {"papers": papers, "paragraphs_pending": pending}
    if papers or pending:
        why = []
        if papers:
            why.append(f"{plural(len(papers), 'selected paper')} read by the text layer only ({behind(st.ws)})")
        if pending:
            why.append(f"{plural(pending, 'paragraph')} of the selection not embedded yet (found by their words "
                       "meanwhile; the background fill embeds them, a first-pass paper's after its full parse)")
        out["hint"] = ("; ".join(why) + ". For the complete survey, wait until `papervault status` shows every "
                       f"paper complete and nothing pending, then run `papervault survey` with --slug {st.ctx.slug} "
                       "again (the selection and your edits are kept; what did not change is not redone).")
    return out


def run_survey_inprocess(topic: str, *, workspace: str | Path | None = None,
                         progress: Callable[[str, float], None] | None = None, **params: Any) -> dict[str, Any]:
    """A whole survey in this process (the in-process executor), from a workspace folder."""
    ws = Workspace.resolve(str(workspace) if workspace is not None else None).require()
    return run_survey(ws, topic, on_stage=progress, **params)
