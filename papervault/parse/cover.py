"""A cover page that labels its fields (a digital archive's or a book series' first page: "Author(s): ...",
"Source: ...", "Chapter Title: ..."): the paper's identity as the page states it, the strongest evidence there is."""

from __future__ import annotations

import re
from dataclasses import dataclass, field

from papervault.lineshapes import is_institution, is_person_name

_LABEL = re.compile(r"^\s*(chapter\s+title|title|chapter\s+authors?(?:\s*\(s\))?|authors?\s*\(s\)|authors?|source|"
                    r"published\s+by|stable\s+url|accessed|volume\s+title|volume\s+author/editor|volume\s+publisher|"
                    r"volume\s+isbn|volume\s+url|publication\s+date|chapter\s+url|chapter\s+pages\s+in\s+book|"
                    r"reviewed\s+work\(s\)|doi|url)\s*:\s*(.*)$", re.I)
_URL = re.compile(r"^\s*(?:https?://|www\.)\S*\s*$", re.I)


@dataclass
class Cover:
    title: str = ""
    authors: list[str] = field(default_factory=list)
    venue: str | None = None


def _fields(lines: list[str]) -> tuple[dict[str, str], list[str]]:
    """The labelled fields (label -> value, continuation lines joined) and the unlabelled lines before the first."""
    out: dict[str, str] = {}
    before: list[str] = []
    label = None
    for raw in lines[:60]:
        t = " ".join(raw.split())
        if not t:
            continue
        m = _LABEL.match(t)
        if m:
            label = re.sub(r"\s+", " ", m.group(1).lower())
            out.setdefault(label, m.group(2).strip())
        elif label is None:
            if not _URL.match(t):
                before.append(t)
        elif label in ("chapter title", "title", "volume title", "source", "author(s)", "chapter author",
                       "chapter authors", "chapter author(s)") and not _URL.match(t) and len(out[label]) < 300:
            out[label] = f"{out[label]} {t}".strip()
        else:
            label = "~"                 # the fields are over: a notice follows
            out.setdefault("~", "")
    return out, before


def _names(value: str) -> list[str]:
    parts = re.split(r"\s*(?:,|;|\band\b|&)\s*", value)
    return [p.strip(" .") for p in parts if is_person_name(p.strip(" ."))]


def read_cover(lines: list[str]) -> Cover | None:
    """The identity a labelled cover page states, or None when the page labels no author and no title."""
    fields, before = _fields(lines)
    author_key = next((k for k in ("chapter author(s)", "chapter authors", "chapter author", "author(s)", "authors",
                                   "author") if fields.get(k)), None)
    title = fields.get("chapter title") or fields.get("title") or ""
    if not title and author_key in ("author(s)", "authors", "author") and 0 < len(before) <= 3:
        # an archive's cover: the publisher's name, the title, then "Author(s): ..."
        title = " ".join(t for t in before if not (is_institution(t) and len(t.split()) <= 8 and ":" not in t))
    if not title or not author_key or "source" not in fields and "chapter title" not in fields:
        return None
    venue = re.split(r"\s*,\s*(?:vol\b|\(|[A-Z][a-z]{2}\.?,?\s)", fields.get("source") or "", flags=re.I)[0] or None
    return Cover(title=title.rstrip(" ."), authors=_names(fields[author_key]), venue=venue or fields.get("volume title"))
