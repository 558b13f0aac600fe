"""`export`: the library, a tag, a collection or a survey's references as BibTeX or CSL-JSON, written by the
same code as a survey's `references.bib` / `references.json` (papervault.survey.export)."""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any

from papervault.app.ids import alias_map
from papervault.errors import InputError, NotFoundError
from papervault.workspace import Workspace
from papervault.survey import export as E
from papervault.survey.polish import cite_keys
from papervault.survey.select import load_papers

FORMATS = ("bibtex", "csl")


@dataclass
class Export:
    """What `export` wrote: the text, the papers in it (vault ids) and the ones that could not be read."""

    text: str
    format: str
    ids: list[str] = field(default_factory=list)
    problems: list[str] = field(default_factory=list)

    def as_dict(self) -> dict[str, Any]:
        return {"format": self.format, "papers": self.ids, "count": len(self.ids), "problems": self.problems}


def survey_ids(ws: Workspace, slug: str) -> list[str]:
    """The papers a survey cites: the ids of its `references.json` (else the citations in `survey.md`)."""
    sdir = ws.vault.survey_dir(slug)
    if not (sdir / "survey.md").is_file():
        raise NotFoundError(f"no survey {slug!r} in the vault",
                            fix="see the folders under vault/surveys/ or run `papervault survey TOPIC`")
    refs = sdir / "references.json"
    if refs.is_file():
        try:
            items = json.loads(refs.read_text(encoding="utf-8"))
            return [str(i["id"]) for i in items if isinstance(i, dict) and i.get("id")]
        except (ValueError, TypeError, KeyError):
            pass
    return list(dict.fromkeys(cite_keys((sdir / "survey.md").read_text(encoding="utf-8"))))


def select(ws: Workspace, *, tag: str | None = None, collection: str | None = None,
           survey: str | None = None) -> list[str]:
    """The ids to export: every paper, or those with `tag`, in `collection` (or a sub-collection), or cited by
    `survey`; the filters combine (a paper must pass all that are given). A collection is matched by name
    (case-insensitive) among the Zotero collections each paper was imported from."""
    ws.require()
    metas = list(ws.vault.iter_meta())
    keep = {m.id for m in metas}
    if tag:
        keep &= {m.id for m in metas if tag in m.tags}
    if collection:
        want = collection.strip("/").lower()
        leaf = want.rsplit("/", 1)[-1]   # "Parent/Child" names the collection Child
        keep &= {m.id for m in metas if any(c.strip("/").lower() in (want, leaf) for c in m.collections)}
    if survey:
        cited = survey_ids(ws, survey)
        former = alias_map(ws.vault) if any(c not in keep for c in cited) else {}
        keep &= {former.get(c, c) for c in cited}     # a survey citing a paper by a former id still exports it
    return sorted(keep)


def export(ws: Workspace, *, fmt: str = "bibtex", tag: str | None = None, collection: str | None = None,
           survey: str | None = None) -> Export:
    """BibTeX (`fmt="bibtex"`) or CSL-JSON (`fmt="csl"`) of the selected papers, keyed by vault id."""
    if fmt not in FORMATS:
        raise InputError(f"unknown export format {fmt!r}", fix="use --format bibtex or --format csl")
    ids = select(ws, tag=tag, collection=collection, survey=survey)
    papers, problems = load_papers(ws.vault, ids)
    if fmt == "bibtex":
        text = E.bibtex(papers)
    else:
        text = json.dumps(E.csl_json(papers), indent=2, ensure_ascii=False) + "\n"
    return Export(text=text, format=fmt, ids=[p.id for p in papers], problems=problems)
