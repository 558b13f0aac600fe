"""`selection.md`: the papers a survey covers, each with the reason it was chosen; a person edits it.

The file is written by stage 1 (retrieve) into `vault/surveys/<slug>/`. Each paper is one line

    - [x] @id — Title (2021) · score 0.620 on its title and abstract

followed by indented reason lines (the passages that matched, with their page, or the citation link that brought
the paper in). The score says what it rests on: the paper's full text, its title and abstract, or its title
only (a record with neither abstract nor full text, which its score alone does not choose). Papers just below the cut-off are listed unticked under "Near misses", and after them the papers
that citation evidence almost brought in (cited by a selected paper, not by enough of them).

A person changes the selection by ticking or unticking boxes, deleting a selected paper's line (struck out) or
adding a line `- [x] @id` (added). The frontmatter records what the tool selected (`generated`) and the
decisions a person made on earlier runs (`added`, `struck`); the next run reads both, applies them to its fresh
selection and writes the file again with the decisions kept, so an edit is never lost and never has to be made
twice. To undo a decision, tick (or untick) the paper again, or delete `selection.md`.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Any, Iterable

from papervault.vault import frontmatter

FILENAME = "selection.md"
_LINE = re.compile(r"^\s{0,3}[-*+]\s+\[(?P<mark>[ xX])\]\s+@(?P<id>[A-Za-z0-9][A-Za-z0-9_.:-]*[A-Za-z0-9_]|[A-Za-z0-9])")
_MAX_PASSAGE = 280


@dataclass
class Reason:
    """Why a paper is in the selection: a matched passage (kind "passage"), the topic's words in its title
    ("title"), a citation link ("cited": a selected paper cites it; "citing": it cites a selected paper),
    citation evidence ("cocited": cited by k of the n selected papers, `other` = their ids; "chain": cited by the
    paper `other` that citation evidence chose; "citations": the evidence line every listed paper gets, `other` the
    selected papers that cite it and `section` those it cites; "survey": cited
    by `other`, the topic's own survey; "context": a sentence of `other` that cites it, on page `page`; "said":
    cited by `other`, a core paper, in that sentence, near the topic; "alongside": cited by `other` in that sentence
    with the selected papers whose ids `section` holds), "unspecific" (a near miss that stands out by
    score but names none of the topic's words that tell it from its field), "basis" (a near miss known only by
    its title, which does not choose a paper by score), or a
    person's or a `--papers` choice ("person", "spec"), or a model's verdict ("model", papervault.survey.judge)."""

    kind: str
    text: str = ""
    page: int | None = None
    section: str = ""
    other: str = ""          # the paper at the other end of a citation link

    def as_dict(self) -> dict[str, Any]:
        return {"kind": self.kind, "text": self.text, "page": self.page, "section": self.section, "other": self.other}


@dataclass
class Entry:
    id: str
    title: str = ""
    year: int | None = None
    score: float | None = None
    reasons: list[Reason] = field(default_factory=list)
    basis: str = ""          # what the score rests on: "title only", "title and abstract", "full text"

    def as_dict(self) -> dict[str, Any]:
        return {"id": self.id, "title": self.title, "year": self.year, "score": self.score, "basis": self.basis,
                "reasons": [r.as_dict() for r in self.reasons]}


@dataclass
class Edits:
    """A person's decisions about a selection: papers added and papers struck out."""

    added: list[str] = field(default_factory=list)
    struck: list[str] = field(default_factory=list)

    def apply(self, ids: list[str]) -> list[str]:
        """`ids` with the struck papers removed and the added ones appended (in the person's order)."""
        struck = set(self.struck)
        out = [i for i in ids if i not in struck]
        return out + [a for a in self.added if a not in out and a not in struck]


def _one_line(text: str, limit: int = _MAX_PASSAGE) -> str:
    """Text from a paper or its metadata, made safe for one Markdown line: no line breaks, no HTML, no link or
    emphasis syntax, no citation (`@id`) or checkbox that the reader of this file would take for a paper."""
    s = re.sub(r"\s+", " ", str(text or "")).strip()
    if len(s) > limit:
        s = s[:limit].rsplit(" ", 1)[0] + " …"
    s = s.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")
    s = re.sub(r"([\\`*_\[\]|#])", r"\\\1", s)
    return s.replace("@", "&#64;")


_ID = re.compile(r"[A-Za-z0-9][A-Za-z0-9_.:-]*[A-Za-z0-9_]|[A-Za-z0-9]")


def _ids(other: str, limit: int = 8) -> str:
    """ ": @a, @b" for the comma-separated paper ids of a citation reason (a paper id is the vault's own; anything
    else is left out)."""
    ids = [i for i in (other or "").split(",") if _ID.fullmatch(i)]
    if not ids:
        return ""
    more = f" and {len(ids) - limit} more" if len(ids) > limit else ""
    return ": " + ", ".join(f"@{i}" for i in ids[:limit]) + more


def _reason_line(r: Reason) -> str:
    if r.kind == "passage":
        where = []
        if r.page:
            where.append(f"p. {r.page}")
        if r.section:
            where.append(f"§ {_one_line(r.section, 80)}")
        loc = f" ({', '.join(where)})" if where else ""
        return f"matched{loc}: “{_one_line(r.text)}”"
    if r.kind == "title":
        return f"its title names the topic's words: {_one_line(r.text, 160)}"
    if r.kind == "context":
        where = f" in @{r.other}" if _ID.fullmatch(r.other or "") else ""
        return f"cited as: “{_one_line(r.text, 300)}”{where}" + (f", p. {int(r.page)}" if r.page else "")
    if r.kind == "cited":
        return f"cited by @{r.other}, a selected paper ({_one_line(r.text, 120) or 'its reference list'})"
    if r.kind == "said":
        loc = f", p. {int(r.page)}" if r.page else ""
        return f"cited by @{r.other}, a core paper, in a sentence on the topic{loc}: {_one_line(r.text, 300)}"
    if r.kind == "alongside":
        loc = f", p. {int(r.page)}" if r.page else ""
        with_ids = [i for i in (r.section or "").split() if _ID.fullmatch(i)]
        return (f"cited by @{r.other} in one sentence with the selected " + ", ".join(f"@{i}" for i in with_ids)
                + f"{loc}: {_one_line(r.text, 300)}")
    if r.kind == "survey":
        return f"cited by @{r.other}, the topic's survey ({_one_line(r.text, 120)})"
    if r.kind == "citing":
        return f"cites @{r.other}, a selected paper ({_one_line(r.text, 120) or 'its reference list'})"
    if r.kind == "cocited":
        return f"{_one_line(r.text, 200)}{_ids(r.other)}"
    if r.kind == "chain":
        return (f"cited by @{r.other}, which citation evidence chose ({_one_line(r.text, 160)})"
                if _ID.fullmatch(r.other) else _one_line(r.text, 200))
    if r.kind == "citations":
        # "cited by 2 of the 5 selected papers: @a, @b; cites 1 of them: @c": each list after what it counts
        cited_by, sep, cites = r.text.partition("; cites ")
        return (f"citations: {_one_line(cited_by, 200)}{_ids(r.other)}"
                + (f"; cites {_one_line(cites, 200)}{_ids(r.section)}" if sep else ""))
    if r.kind == "model":
        return _one_line(r.text, 300)
    if r.kind == "person":
        return "added by you in selection.md"
    if r.kind == "spec":
        return f"selected by --papers {_one_line(r.text, 120)}"
    return _one_line(r.text)


def _entry_line(e: Entry, mark: str, unfinished: dict[str, dict] | None = None) -> list[str]:
    head = f"- [{mark}] @{e.id} — {_one_line(e.title, 200) or '(no title)'}"
    if e.year:
        head += f" ({int(e.year)})"
    if e.score is not None:
        head += f" · score {e.score:.3f}" + (f" on its {_one_line(e.basis, 40)}" if e.basis else "")
    lines = [head] + [f"    - {_reason_line(r)}" for r in e.reasons]
    if unfinished and e.id in unfinished:
        from papervault.parse.firstpass import unfinished_words  # deferred: only for a paper still arriving

        lines.append(f"    - not finished: {unfinished_words(unfinished[e.id])}")
    return lines


def render(topic: str, selected: list[Entry], near: list[Entry], *, slug: str, edits: Edits, generated: list[str],
           method: dict[str, Any] | None = None, specs: list[str] | None = None, missing: list[Any] = (),
           unfinished: dict[str, dict] | None = None) -> str:
    """The whole `selection.md`: frontmatter (what was generated, the person's decisions) and the body.
    `unfinished`: the selected papers still read by their first pass ({id: {"pending_pages": [...]}},
    papervault.parse.firstpass.unfinished), each said so under its line and counted under the title."""
    struck = set(edits.struck)
    lines = [f"# Selection: {_one_line(topic, 200)}", "",
             f"{len(selected)} papers selected. Untick a box (or delete the line) to strike a paper out; tick a near "
             "miss or add a line `- [x] @id` to add one. The next `papervault survey` run keeps your changes.", ""]
    waiting = [e.id for e in selected if unfinished and e.id in unfinished]
    if waiting:
        lines += [f"{len(waiting)} of them {'is' if len(waiting) == 1 else 'are'} still read by the text layer only "
                  "(its full parse, with headings, figures, tables and the OCR of scanned pages, and its analysis "
                  "follow behind): the survey reads that text. For the complete survey, run it again once "
                  "`papervault status` shows every paper complete.", ""]
    if method:
        desc = "; ".join(f"{k}: {_one_line(v, 200)}" for k, v in method.items() if v not in (None, "", []))
        if desc:
            lines += [f"<!-- how: {desc.replace('--', '- -')} -->", ""]
    lines += ["## Selected", ""]
    for e in selected:
        lines += _entry_line(e, "x", unfinished)
    if not selected:
        lines.append("(none)")
    lines.append("")
    gone = [e for e in near if e.id in struck]
    rest = [e for e in near if e.id not in struck]
    if gone:
        lines += ["## Struck out by you", ""]
        for e in gone:
            lines += _entry_line(e, " ")
        lines.append("")
    if rest:
        lines += ["## Near misses (not selected)", ""]
        cited = [e for e in rest if any(r.kind in ("cocited", "chain") for r in e.reasons)]
        scored = [e for e in rest if all(e is not x for x in cited)]
        if cited and scored:
            lines += ["### Just below the cut-off", ""]
        for e in scored:
            lines += _entry_line(e, " ")
        if cited:
            lines += ([""] if scored else []) + [
                "### Cited by the selection, not enough to be chosen", "",
                "Citation evidence almost brought these in: cited by too few of the selected papers, or by many "
                "other papers of the vault too.", ""]
        for e in cited:
            lines += _entry_line(e, " ")
        lines.append("")
    if missing:
        lines += ["## Cited by the selection, not in the vault", "",
                  "Works the selected papers cite that the vault does not hold: a survey of the topic may need "
                  "them. `papervault inbox` offers each one with a DOI or an arXiv id to accept.", ""]
        for w in missing:
            lines.append(f"- {_one_line(w.line(len(selected)), 400)}")
            lines.append(f"    - cited by{_ids(','.join(w.cited_by))}"
                         + (f"; entry (p. {int(w.page)}): " if w.page else "; entry: ") + f"“{_one_line(w.entry, 240)}”")
        lines.append("")
    body = "\n".join(lines).rstrip() + "\n"
    meta = {"survey": slug, "topic": topic, "kind": "selection", "generated": list(generated),
            "added": list(edits.added), "struck": list(edits.struck), "generated_hash": frontmatter.body_hash(body)}
    if missing:         # read back by the MCP server and the inbox (data, never rendered unescaped)
        meta["missing"] = [{k: w.as_dict()[k] for k in ("key", "title", "author", "year", "doi", "arxiv", "cited_by")}
                           for w in missing]
    if specs:
        meta["papers"] = list(specs)        # the --papers selection, so `survey --refresh` chooses the same way
    return frontmatter.join(meta, body)


def read_edits(text: str | None) -> Edits:
    """A person's decisions recorded in (or made to) an existing `selection.md`.

    Decisions of earlier runs come from the frontmatter; when the body no longer matches the hash the tool
    wrote, the ticked and unticked lines are compared with what the tool had selected: a ticked paper it had
    not selected is added, a paper it had selected that is unticked or gone is struck. Ticking a struck paper
    again (or unticking an added one) undoes the earlier decision."""
    if not text:
        return Edits()
    try:
        meta, body = frontmatter.split(text)
    except ValueError:   # a broken frontmatter: the ticked lines are the person's whole selection
        meta, body = {}, text
    def _ids(value: Any) -> list[str]:
        return [str(v) for v in value] if isinstance(value, list) else []

    added, struck = _ids(meta.get("added")), _ids(meta.get("struck"))
    generated = _ids(meta.get("generated"))
    if meta and meta.get("generated_hash") == frontmatter.body_hash(body):
        return Edits(added, struck)
    ticked, unticked = parse_ids(body)
    if not meta:
        return Edits(added=ticked, struck=[])
    was_in = set(Edits(added, struck).apply(generated))
    new_added = [i for i in added if i in ticked] + [i for i in ticked
                                                     if i not in was_in and i not in added and i not in generated]
    new_struck = [i for i in struck if i not in ticked] + [i for i in generated if i not in ticked and i not in struck]
    new_added = [i for i in dict.fromkeys(new_added) if i not in new_struck]
    return Edits(new_added, list(dict.fromkeys(new_struck)))


def parse_ids(text: str) -> tuple[list[str], list[str]]:
    """(ticked, unticked) paper ids of a `selection.md` body, in order."""
    ticked, unticked = [], []
    for line in text.splitlines():
        m = _LINE.match(line)
        if m:
            (ticked if m.group("mark") in "xX" else unticked).append(m.group("id"))
    return list(dict.fromkeys(ticked)), list(dict.fromkeys(unticked))

