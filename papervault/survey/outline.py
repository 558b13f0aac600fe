"""Stage 5 of a survey: the outline, a list of sections with their purpose and the papers each will cite.

`outline.md` is meant to be edited. Its frontmatter records the hash of the body the tool wrote; when the
body no longer matches, a person changed it, and the next run drafts from their outline instead of making
a new one.
"""

from __future__ import annotations

import re
from dataclasses import asdict, dataclass, field
from typing import Any

from papervault.survey.correlate import Correlation
from papervault.survey.export import render
from papervault.survey.papers import SurveyPaper
from papervault.vault import frontmatter

KINDS = ("intro", "theme", "comparison", "consensus", "gaps", "conclusion", "custom")


@dataclass
class Section:
    title: str
    purpose: str
    cites: list[str] = field(default_factory=list)
    kind: str = "custom"
    theme: int | None = None         # index of the correlation cluster a theme section covers

    @property
    def key(self) -> str:
        return re.sub(r"[^a-z0-9]+", "-", self.title.lower()).strip("-")[:60] or "section"


@dataclass
class Outline:
    topic: str
    sections: list[Section]
    edited: bool = False             # True: read back from an outline a person changed
    backend: str = "extractive"

    def as_dict(self) -> dict[str, Any]:
        return asdict(self)


def make_outline(topic: str, correlation: Correlation, papers: list[SurveyPaper]) -> Outline:
    """The default outline: introduction, one section per theme, comparison, consensus and conflict, gaps, conclusion."""
    ids = [p.id for p in papers]
    secs = [Section("Introduction", f"Introduce {topic} and the {len(ids)} papers this survey covers.", ids, "intro")]
    for i, c in enumerate(correlation.clusters):
        name = c.label if c.label else f"Theme {i + 1}"
        first = name.split()[0]
        # "Failures and replication" reads "the papers on failures and replication" inside a sentence
        inline = name if first.isupper() or any(ch.isupper() for ch in first[1:]) else name[0].lower() + name[1:]
        secs.append(Section(f"Theme: {name}", f"What the papers on {inline} contribute to {topic}.",
                            list(c.paper_ids), "theme", i))
    secs.append(Section("Methods compared", "Methods, datasets, metrics and reported results side by side, and "
                        "which papers build on which.", ids, "comparison"))
    if correlation.consensus or correlation.conflicts:
        cites = sorted({c for s in correlation.consensus + correlation.conflicts for c in s.cites})
        secs.append(Section("Consensus and conflict", "Where the papers agree and where they disagree.", cites, "consensus"))
    if correlation.gaps:
        cites = sorted({c for s in correlation.gaps for c in s.cites})
        secs.append(Section("Open problems", "What the papers themselves leave open.", cites, "gaps"))
    secs.append(Section("Conclusion", f"What the papers conclude about {topic}.", ids, "conclusion"))
    return Outline(topic=topic, sections=secs)


def render_body(outline: Outline, template_dir=None) -> str:
    """The editable body of `outline.md`, from the `outline.md.j2` template."""
    return render("outline.md.j2", template_dir, outline=outline).rstrip() + "\n"


def render_outline(outline: Outline, *, slug: str, inputs: str, template_dir=None) -> str:
    """`outline.md`: frontmatter (survey, topic, inputs hash, hash of the body written) and the editable body."""
    body = render_body(outline, template_dir)
    meta = {"survey": slug, "topic": outline.topic, "kind": "outline", "backend": outline.backend,
            "inputs": inputs, "generated_hash": frontmatter.body_hash(body)}
    return frontmatter.join(meta, body)


_HEAD = re.compile(r"^##\s+(?:\d+[.)]?\s+)?(?P<title>.+?)\s*$")
_KIND = re.compile(r"<!--\s*kind:\s*(?P<kind>\w+)(?:\s+theme:\s*(?P<theme>\d+))?\s*-->")
_CITE = re.compile(r"@([A-Za-z0-9][A-Za-z0-9_.:-]*[A-Za-z0-9])")


def is_edited(text: str) -> bool:
    """True when a person changed the outline body after the tool wrote it."""
    try:
        meta, body = frontmatter.split(text)
    except ValueError:
        return True
    return meta.get("generated_hash") != frontmatter.body_hash(body)


def parse_outline(text: str) -> tuple[Outline, dict[str, Any]]:
    """Read `outline.md` back (a person's edits included); returns (outline, frontmatter)."""
    try:
        meta, body = frontmatter.split(text)
    except ValueError:
        meta, body = {}, text
    topic = str(meta.get("topic") or "")
    sections: list[Section] = []
    cur: Section | None = None
    purpose: list[str] = []
    in_purpose = False
    for line in body.splitlines():
        if line.startswith("# ") and not topic:
            topic = line[2:].removeprefix("Outline:").strip()
            continue
        m = _HEAD.match(line)
        if m:
            if cur is not None:
                cur.purpose = " ".join(purpose).strip()
            cur = Section(title=m.group("title").strip(), purpose="")
            sections.append(cur)
            purpose, in_purpose = [], False
            continue
        if cur is None:
            continue
        k = _KIND.search(line)
        if k:
            kind = k.group("kind")
            cur.kind = kind if kind in KINDS else "custom"
            cur.theme = int(k.group("theme")) if k.group("theme") else None
            continue
        s = line.strip()
        if s.lower().startswith("purpose:"):
            purpose, in_purpose = [s[8:].strip()], True
        elif s.lower().startswith("cites:"):
            cur.cites = list(dict.fromkeys(_CITE.findall(s)))
            in_purpose = False
        elif in_purpose and s and not s.startswith("<!--"):
            purpose.append(s)
        elif not s:
            in_purpose = False
    if cur is not None:
        cur.purpose = " ".join(purpose).strip()
    return Outline(topic=topic, sections=sections, edited=is_edited(text), backend=str(meta.get("backend") or "")), meta


def choose_outline(existing: str | None, fresh: Outline) -> tuple[Outline, str]:
    """Keep a person's edited outline, else use the fresh one; returns (outline, "kept" | "new")."""
    if existing and is_edited(existing):
        outline, _ = parse_outline(existing)
        if outline.sections:
            outline.edited = True
            return outline, "kept"
    return fresh, "new"


OUTLINE_SCHEMA: dict[str, Any] = {
    "type": "object", "required": ["sections"],
    "properties": {"sections": {"type": "array", "minItems": 1, "items": {
        "type": "object", "required": ["title", "purpose", "cites"],
        "properties": {"title": {"type": "string"}, "purpose": {"type": "string"},
                       "cites": {"type": "array", "items": {"type": "string"}},
                       "kind": {"type": "string", "enum": list(KINDS)}}}}},
}


def outline_from_answer(topic: str, answer: dict[str, Any], known: set[str], backend: str) -> Outline:
    """A model's outline, with cites limited to the selected papers."""
    secs = []
    for s in answer.get("sections", []):
        cites = [c.lstrip("@") for c in s.get("cites", []) if c.lstrip("@") in known]
        secs.append(Section(s["title"].strip(), s["purpose"].strip(), cites, s.get("kind") or "custom"))
    return Outline(topic=topic, sections=secs, backend=backend)
