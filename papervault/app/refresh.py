"""`papervault survey --refresh SLUG`: what a survey's `selection.md` would get if the survey ran again now.

The survey's topic (and its `--papers` selection, recorded in `selection.md`'s frontmatter) is resolved again
against the vault as it is, with the person's edits applied as a run would, without writing anything; the
papers that would enter and leave the selection are listed with their reasons. `sync` uses the same to flag a
survey whose topic gained papers in a pass (`surveys_gained` in `sync --json`, the sync log and `changes`).
`arxiv:` selections are not run again by a preview (they import papers): a run does that.
"""

from __future__ import annotations

from typing import Any

from papervault.errors import NotFoundError, PapervaultError
from papervault.survey import judge
from papervault.survey.select import resolve
from papervault.survey.selection import FILENAME, _reason_line, parse_ids
from papervault.vault import frontmatter
from papervault.workspace import Workspace


def _reason_text(entry) -> str:
    if entry is None or not entry.reasons:
        return ""
    return "; ".join(_reason_line(r) for r in entry.reasons[:2])


def read_selection(ws: Workspace, slug: str) -> tuple[dict[str, Any], list[str]]:
    """(frontmatter, ticked ids) of a survey's `selection.md`; a survey without one is a one-line error."""
    path = ws.vault.guard(ws.vault.survey_dir(slug) / FILENAME)
    if not path.is_file():
        raise NotFoundError(f"no survey {slug!r} with a selection.md",
                            fix="list the surveys in vault/surveys/, or write one with papervault survey TOPIC")
    text = path.read_text(encoding="utf-8")
    try:
        meta, body = frontmatter.split(text)
    except ValueError:
        meta, body = {}, text
    return (meta if isinstance(meta, dict) else {}), parse_ids(body)[0]


def preview(ws: Workspace, slug: str) -> dict[str, Any]:
    """What `selection.md` of survey `slug` would get now: {survey, topic, papers (specs), now, would,
    entering: [{id, title, score, reason}], leaving: [{id, title, reason}], problems}."""
    ws.require()
    meta, current = read_selection(ws, slug)
    topic = str(meta.get("topic") or "").strip()
    specs = [str(s) for s in meta.get("papers") or [] if isinstance(s, str)]
    problems = []
    if any(s.startswith("arxiv:") for s in specs):
        problems.append("arxiv: selections are not searched again by a preview; --run does")
        specs = [s for s in specs if not s.startswith("arxiv:")]
    if not topic and not specs:
        raise PapervaultError(f"selection.md of {slug!r} names no topic", fix="run papervault survey TOPIC --slug "
                              f"{slug} again")
    # a model backend reviews the selection here as the run does, or the preview would show its verdicts as changes
    got = resolve(ws, topic, specs or None, slug=slug, write=False, reviewer=judge.reviewer(ws, None))
    new = got.ids
    entering = []
    for pid in new:
        if pid in current:
            continue
        e = got.entries.get(pid)
        entering.append({"id": pid, "title": getattr(e, "title", "") or pid, "score": getattr(e, "score", None),
                         "reason": _reason_text(e) or "chosen by the topic"})
    leaving = []
    for pid in current:
        if pid in new:
            continue
        e = got.entries.get(pid)
        if not ws.vault.has_paper(pid):
            why = "no longer in the vault"
        elif e is not None and e.score is not None:
            why = f"now a near miss (score {e.score:.3f})"
        else:
            why = "no longer among the topic's papers"
        title = getattr(e, "title", "") if e is not None else ""
        if not title and ws.vault.has_paper(pid):
            try:
                title = ws.vault.read_meta(pid).title or ""
            except PapervaultError:
                title = ""
        leaving.append({"id": pid, "title": title or pid, "reason": why})
    return {"survey": slug, "topic": topic, "papers": specs, "now": len(current), "would": len(new),
            "entering": entering, "leaving": leaving, "problems": problems + got.problems}


def surveys_gained(ws: Workspace, added: set[str]) -> list[dict[str, Any]]:
    """The surveys whose selection a pass's new papers (`added`) would enter: {survey, topic, entering}."""
    root = ws.vault.root / "surveys"
    if not added or not root.is_dir():
        return []
    out = []
    for sdir in sorted(p for p in root.iterdir() if p.is_dir() and (p / "selection.md").is_file()):
        try:
            diff = preview(ws, sdir.name)
        except PapervaultError:
            continue            # a survey that cannot be previewed is not news for a sync pass
        entering = [e for e in diff["entering"] if e["id"] in added]
        if entering:
            out.append({"survey": sdir.name, "topic": diff["topic"], "entering": entering,
                        "reason": f"{len(entering)} new paper(s) on its topic: papervault survey --refresh {sdir.name}"})
    return out
