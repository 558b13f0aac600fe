"""The candidates table of topic selection: every paper of the vault as a row (its id, title, year, identifiers,
text, authors, unit title/abstract vector and what its score rests on), read once through the index's public
API; a scored paper (`Candidate`) and the answer (`TopicSelection`); and the list operations the selection's
steps share."""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from papervault.errors import PapervaultError
from papervault.survey.contexts import Context
from papervault.survey.selection import Entry, Reason
from papervault.survey.topic.params import DEFAULT, FULL_TEXT, TopicParams
from papervault.survey.topic.text import basis_of, words

COLUMNS = ["paper_id", "title", "authors", "year", "doi", "arxiv", "tags", "has_fulltext", "text", "vector"]


@dataclass
class Candidate:
    id: str
    title: str = ""
    year: int | None = None
    dense: float = 0.0          # cosine of the expanded topic with the paper (title/abstract, best passage)
    lexical: float = 0.0        # full-text score, normalised
    score: float = 0.0
    z: float = 0.0
    passages: list[dict[str, Any]] = field(default_factory=list)
    links: list[Reason] = field(default_factory=list)
    has_fulltext: bool = False
    doi: str = ""
    arxiv: str = ""
    title_words: list[str] = field(default_factory=list)   # the topic's words its title names
    context: Context | None = None   # the sentence citing it that is nearest the topic (papervault.survey.contexts)
    evidence: list[Reason] = field(default_factory=list)    # citation evidence (kinds "cocited", "chain", "citations")
    basis: str = ""             # what its score rests on: TITLE_ONLY, ABSTRACT or FULL_TEXT

    def entry(self, passages: int = DEFAULT.passages) -> Entry:
        named = [Reason("title", ", ".join(self.title_words))] if self.title_words else []
        reasons = named + [Reason("passage", p["text"], p.get("page"), p.get("section", ""))
                           for p in self.passages[:passages]]
        said = {r.other for r in self.links if r.kind == "said"}
        if self.context is not None and self.context.citing not in said:
            reasons.append(Reason("context", self.context.text, self.context.page, other=self.context.citing))
        return Entry(self.id, self.title, self.year, round(self.score, 4), self.evidence + self.links + reasons,
                     basis=self.basis)


@dataclass
class TopicSelection:
    topic: str
    selected: list[Candidate]
    near: list[Candidate]
    cutoff: float
    median: float
    spread: float
    expansion: list[str]
    candidates: int
    capped: bool = False
    citing: int = 0             # papers of the vault with a reference list (0: no citation evidence at all)
    title_cutoff: float = 0.0   # the cut-off for a record known by its title alone (title_only_fraction)
    pool: list[Candidate] = field(default_factory=list)    # the next papers by score, for a model's review

    @property
    def ids(self) -> list[str]:
        return [c.id for c in self.selected]

    def method(self) -> dict[str, Any]:
        return {"cut-off score": f"{self.cutoff:.3f}",
                "cut-off score of a record known by its title only": f"{max(self.title_cutoff, self.cutoff):.3f}",
                "vault median": f"{self.median:.3f}",
                "topic expanded with": ", ".join(self.expansion),
                "papers scored": self.candidates, "capped by max papers": "yes" if self.capped else "",
                "papers with a reference list": self.citing}


class PaperTable:
    """The vault's papers as columns (row `i` of each is one paper), from the index's papers table."""

    def __init__(self, searcher, params: TopicParams):
        t = searcher.paper_columns(COLUMNS)
        if t is None:
            raise PapervaultError("a survey without --papers selects papers from the index, which is empty",
                                  fix="run `papervault index` first (or choose papers with --papers)")
        self.ids: list[str] = t.column("paper_id").to_pylist()
        self.pos = {pid: i for i, pid in enumerate(self.ids)}
        self.titles = t.column("title").to_pylist()
        self.years = t.column("year").to_pylist()
        self.dois = [(d or "").lower() for d in t.column("doi").to_pylist()]
        self.arxivs = [a or "" for a in t.column("arxiv").to_pylist()]
        self.tags = t.column("tags").to_pylist()
        self.fulltext = t.column("has_fulltext").to_pylist()
        self.texts = t.column("text").to_pylist()
        self.authors = t.column("authors").to_pylist()
        vec = t.column("vector").combine_chunks().flatten().to_numpy().reshape(len(self.ids), -1).astype(np.float32)
        norms = np.linalg.norm(vec, axis=1, keepdims=True)
        self.mat = vec / np.where(norms == 0, 1, norms)
        self.basis = [FULL_TEXT if f else basis_of(text or "", title or "", authors or [], params.abstract_words)
                      for f, text, title, authors in zip(self.fulltext, self.texts, self.titles, self.authors)]
        self._df: dict[str, int] = {}
        self._lower: list[str] | None = None
        self._title_words: list[frozenset[str]] | None = None
        self._title_vocab: Counter = Counter()

    def __len__(self) -> int:
        return len(self.ids)

    def title_words(self) -> tuple[list[frozenset[str]], Counter]:
        """Each title's words, and how many titles name each word (on first use)."""
        if self._title_words is None:
            self._title_words = [frozenset(words(t or "")) for t in self.titles]
            self._title_vocab = Counter(w for ws in self._title_words for w in ws)
        return self._title_words, self._title_vocab

    def doc_freq(self, wanted) -> dict[str, int]:
        """How many paper rows hold each word (as a substring of the lower-cased text), counted once per word."""
        if self._lower is None:
            self._lower = [(t or "").lower() for t in self.texts]
        out = {}
        for w in wanted:
            if w not in self._df:
                self._df[w] = sum(1 for t in self._lower if w in t)
            out[w] = self._df[w]
        return out

    def text_of(self, i: int) -> str:
        """The title and the paper row's text of row `i`."""
        return f"{self.titles[i] or ''} {self.texts[i] or ''}"

    def abstract(self, i: int, text: str) -> str:
        """A paper row's text without the title and author names it starts with (the chunk repeats them)."""
        rest = (text or "").lstrip()
        title = (self.titles[i] or "").strip()
        if title and rest.startswith(title):
            rest = rest[len(title):].lstrip(" .:\n")
        names = ", ".join(self.authors[i] or [])
        if names and rest.startswith(names):
            rest = rest[len(names):].lstrip(" .;\n")
        return rest or text or title


def unit(v: np.ndarray) -> np.ndarray:
    n = float(np.linalg.norm(v))
    return v / n if n else v


def dot(mat: np.ndarray, q: np.ndarray) -> np.ndarray:
    # Element-wise product and sum rather than `mat @ q`: a BLAS call wakes OpenBLAS's spinning threads
    # (see index/search.py).
    return np.multiply(mat, q).sum(axis=1)


def capped(selected: list[Candidate], near: list[Candidate], max_papers: int | None
           ) -> tuple[list[Candidate], list[Candidate], bool]:
    """The first `max_papers` of the selection, the rest first among the near misses, and whether it cut."""
    if max_papers is None or len(selected) <= max_papers:
        return selected, near, False
    return selected[:max_papers], selected[max_papers:] + near, True


def joined(selected: list[Candidate], near: list[Candidate], added: list[Candidate]
           ) -> tuple[list[Candidate], list[Candidate]]:
    """The selection with `added` (papers a citation rule brought in), best score first, and the near misses
    without them."""
    if not added:
        return selected, near
    got = {c.id for c in added}
    return sorted(selected + added, key=lambda c: -c.score), [c for c in near if c.id not in got]
