"""Citation contexts: what the vault's papers say about a paper when they cite it.

A paper with a full text and a reference list cites its references in sentences: "Paxos [12] solves consensus
...", "see work by Cartwright and Fagan [CF91]", "(Lamport, 1998)". The sentence around each in-text marker is
attached to the vault paper the marked entry names (matched as the citation graph matches reference lists,
papervault.survey.citations: DOI, arXiv id or title), so a paper known to the vault by its title alone (a record
transcribed from a reference list) gains a text: what the papers that cite it say about it. Topic selection
(papervault.survey.topic) compares these sentences with the topic: a reference that a topic's survey cites in a
sentence about the topic is the topic's, one it cites in a sentence about its systems or its tools is its
surroundings.

Markers understood: numeric ("[12]", "[3, 7-9]"), alphanumeric labels ("[CF91]", "[Fag91; AM91]", when the
reference list's entries start with them) and author-year ("(Lamport, 1998)", "Lamport [1998]", "Lamport et al.
1998": the first author's surname and the year of an entry, when its entries carry no label). Text level only:
this module reads `paper.md` and nothing else. Extraction is cached in the workspace's derived state, keyed by
the citing paper's full-text hash (`contexts/<sha256>.json`), so the vault's reference lists are read once.
"""

from __future__ import annotations

import hashlib
import json
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Iterable

from papervault.errors import PapervaultError
from papervault.parse.text import dehyphen, one_line
from papervault.survey.citations import Matcher, reference_lines
from papervault.vault import paper as paper_md

VERSION = 1                 # of the cached extraction; a new rule of extraction changes it
PER_CITING = 4              # sentences kept per (citing paper, cited paper)
SENTENCE_CHARS = 400        # a context is at most this long (cut around its marker)

_PARAGRAPH = re.compile(r"\S(?:[^\n]|\n(?![ \t]*\n))*")
_SENTENCE = re.compile(r"(?<=[.!?])\s+(?=[A-Z\"“(\[])")
# an entry of the reference list that starts with its label: "[12] ...", "- [CF91] ...", "[Aba+95] ..."
_ENTRY_LABEL = re.compile(r"(?:^|\s)(?:[-•]\s+)?\[([A-Za-z0-9][A-Za-z0-9+.\-]{0,14})\]\s")
_GROUP = re.compile(r"\[([^\[\]\n]{1,160})\]")
_RANGE = re.compile(r"^(\d{1,3})\s*[–-]\s*(\d{1,3})$")
_YEAR = re.compile(r"\b((?:19|20)\d{2})[a-z]?\b")
_SURNAME = re.compile(r"[A-Z][A-Za-zÀ-ÿ'’\-]+")
_NOT_SURNAME = frozenset("In The A An And Of On For Proc Proceedings Tech Report".split())


@dataclass(frozen=True)
class Context:
    """A sentence of `citing` (on PDF page `page`) that cites the paper it is attached to."""

    citing: str
    text: str
    page: int | None


# --- extraction (text level, cacheable) -------------------------------------------------------------

def _labelled_entries(fulltext: str) -> list[tuple[str, str]]:
    """The reference list's entries with their labels ("12", "CF91"), or [] when fewer than three entries start
    with one (an author-year list)."""
    doc = paper_md.read(fulltext)
    raw = doc.references_text()
    if not raw:
        return []
    flat = dehyphen(one_line(paper_md.without_anchors(raw)))
    marks = list(_ENTRY_LABEL.finditer(flat))
    if len(marks) < 3:
        return []
    out = []
    for a, b in zip(marks, marks[1:] + [None]):
        out.append((a.group(1), flat[a.end():b.start() if b else len(flat)][:1000]))
    return out


def _author_year_entries(fulltext: str) -> list[tuple[str, str]]:
    """Entries of an unlabelled list, labelled "Surname|year" by their first author and year."""
    out = []
    for r in reference_lines(fulltext):
        text = re.sub(r"^[-•\d.\s]+", "", r.text)
        name = next((m.group(0) for m in _SURNAME.finditer(text[:80]) if m.group(0) not in _NOT_SURNAME), None)
        year = _YEAR.search(text)
        if name and year and len(name) > 1:
            out.append((f"{name}|{year.group(1)}", r.text))
    return out


def _labels_in(sentence: str, labels: set[str]) -> list[str]:
    """The labels a sentence's bracketed markers name: "[3, 7-9]" -> 3, 7, 8, 9; "[Fag91; CF91]"."""
    out: list[str] = []
    for g in _GROUP.finditer(sentence):
        for part in re.split(r"\s*[,;]\s*", g.group(1)):
            part = re.sub(r"^(?:e\.g\.|see|cf\.)\s*", "", part.strip())
            r = _RANGE.match(part)
            if r and 0 < int(r.group(2)) - int(r.group(1)) < 30:
                out += [str(k) for k in range(int(r.group(1)), int(r.group(2)) + 1) if str(k) in labels]
            elif part in labels:
                out.append(part)
    return list(dict.fromkeys(out))


def _author_year_in(sentence: str, labels: dict[str, list[str]]) -> list[str]:
    """The "Surname|year" labels a sentence names: the surname followed, within a few words, by the year
    ("Lamport, 1998", "Lamport [1998]", "Lamport et al. (1998)")."""
    out = []
    for m in _YEAR.finditer(sentence):
        for label in labels.get(m.group(1), ()):
            name = label.split("|")[0]
            at = sentence.rfind(name, max(0, m.start() - 60), m.start())
            if at >= 0:
                out.append(label)
    return list(dict.fromkeys(out))


def _cut(sentence: str, at: int) -> str:
    if len(sentence) <= SENTENCE_CHARS:
        return sentence
    start = max(0, min(at - SENTENCE_CHARS // 2, len(sentence) - SENTENCE_CHARS))
    return ("…" if start else "") + sentence[start:start + SENTENCE_CHARS].strip() + "…"


def extract(fulltext: str) -> dict:
    """A paper's reference entries and the sentences citing each: {"entries": [[label, text]], "contexts":
    {label: [[sentence, page]]}}. JSON-ready (the cache's form)."""
    entries = _labelled_entries(fulltext)
    author_year = not entries
    if author_year:
        entries = _author_year_entries(fulltext)
    out: dict = {"entries": [list(e) for e in entries], "contexts": {}}
    if not entries:
        return out
    doc = paper_md.read(fulltext)
    end = doc.references_start if doc.references_start is not None else len(fulltext)
    labels = {label for label, _ in entries}
    by_year: dict[str, list[str]] = {}
    for label in labels:
        if "|" in label:
            by_year.setdefault(label.split("|")[1], []).append(label)
    contexts: dict[str, list[list]] = out["contexts"]
    for m in _PARAGRAPH.finditer(fulltext[:end]):
        para = m.group(0)
        if para.startswith(("#", "![", "|", "$$", "```")):
            continue
        flat = dehyphen(one_line(paper_md.without_anchors(para)))
        if "[" not in flat and not author_year:
            continue
        page = doc.page_at(m.start() + 1)
        for sentence in _SENTENCE.split(flat):
            cited = _author_year_in(sentence, by_year) if author_year else _labels_in(sentence, labels)
            for label in cited:
                have = contexts.setdefault(label, [])
                if len(have) < PER_CITING and all(s != sentence for s, _ in have):
                    at = sentence.find(label.split("|")[0]) if author_year else sentence.find("[")
                    have.append([_cut(sentence, max(0, at)), page])
    return out


def _cached_extract(fulltext: str, cache_dir: Path | None) -> dict:
    if cache_dir is None:
        return extract(fulltext)
    key = hashlib.sha256(f"{VERSION}\n{fulltext}".encode("utf-8")).hexdigest()
    path = cache_dir / f"{key}.json"
    try:
        return json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        pass
    got = extract(fulltext)
    try:
        cache_dir.mkdir(parents=True, exist_ok=True)
        tmp = path.with_suffix(".tmp")
        tmp.write_text(json.dumps(got), encoding="utf-8")
        tmp.replace(path)
    except OSError:
        pass                    # a read-only workspace extracts again next time
    return got


# --- matched against the vault -----------------------------------------------------------------------

def build_contexts(vault, matcher: Matcher, citing: Iterable[str], cache_dir: Path | None = None
                   ) -> dict[str, list[Context]]:
    """{cited vault paper: the sentences of the vault's papers that cite it}, over the papers of `citing` (those
    with a reference list). An entry names a vault paper as the citation graph's matcher says; a paper whose full
    text cannot be read says nothing."""
    out: dict[str, list[Context]] = {}
    for pid in citing:
        try:
            got = _cached_extract(vault.read_fulltext(pid), cache_dir)
        except (OSError, PapervaultError):
            continue
        for label, text in got["entries"]:
            sentences = got["contexts"].get(label)
            if not sentences:
                continue
            for cited in sorted(matcher.named(text) - {pid}):
                have = out.setdefault(cited, [])
                for s, page in sentences:
                    have.append(Context(pid, s, page))
    return out
