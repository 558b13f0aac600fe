"""Dedup before anything is stored: one paper once, whichever sources it arrives from.

A record matches a known paper by its citation key from the same file, then arXiv id (without version), then
normalised DOI, then exact normalised title, then a near-duplicate title (typos, OCR slips, hyphenation, British
spelling) whose similarity reaches `TITLE_THRESHOLD`. Two records with different citation keys from one file
never merge (the user keeps them apart, and each `[@key]` must resolve), nor do titles that differ by a word
swapped for its opposite. The threshold was measured on labelled title pairs (`python bench/import_bench.py
--titles`, see docs/sources.md): hard negatives (Paxos Made Simple / Live, Part I / II, "is not", before /
after) stay apart.
"""

from __future__ import annotations

import re
from collections import defaultdict
from dataclasses import dataclass, field
from functools import lru_cache
from typing import Iterable
from urllib.parse import unquote

from papervault import doi as DOI
from papervault.ids import SKIP_WORDS, fold, last_name, make_key, normalize_title, sanitize_key, unique_key
from papervault.models import PaperMeta, SourceRecord

# Measured on bench/title_pairs.tsv (python bench/import_bench.py --titles): every spelling, typo, OCR and
# hyphenation variant scores 1.0; the closest pair of different papers ("Dynamo ..." / "Dynamo ... Revisited")
# scores 0.93. 0.95 lets a long title (20+ content words) keep one garbled word and nothing more.
TITLE_THRESHOLD = 0.95

# --- identifiers ---------------------------------------------------------------------------------

_ARXIV_NEW = re.compile(r"\A(\d{4}\.\d{4,5})(?:v\d+)?\Z")
_ARXIV_OLD = re.compile(r"\A([a-z][a-z\-]*)(?:\.[A-Za-z\-]+)?/(\d{7})(?:v\d+)?\Z", re.I)
_ARXIV_URL = re.compile(r"^(?:https?://)?(?:www\.|export\.)?arxiv\.org/(?:abs|pdf|html)/(.+?)(?:\.pdf)?/?(?:[?#].*)?$", re.I)


def normalize_doi(value: str | None) -> str | None:
    """`https://doi.org/10.1145/ABC.` -> `10.1145/abc`; None when `value` is not a DOI. DOIs are case-insensitive."""
    if not value:
        return None
    doi = unquote(str(value).strip())
    doi = DOI.URL_PREFIX.sub("", doi).strip()
    doi = doi.rstrip(".,;)]}>'\"").lower()
    return doi if DOI.SHAPE.match(doi) else None


def normalize_arxiv(value: str | None) -> str | None:
    """An arXiv id without version (`2604.06170`, `hep-th/9901001`) from an id, `arxiv:` id, abs/pdf URL or arXiv DOI.

    Old-style ids lose their subject class (`math.GT/0309136` -> `math/0309136`), as arXiv itself files them.
    Returns None when `value` is not an arXiv identifier.
    """
    if not value:
        return None
    s = str(value).strip()
    m = _ARXIV_URL.match(s)
    if m:
        s = m.group(1)
    else:
        m = DOI.ARXIV.match(DOI.URL_PREFIX.sub("", s))
        if m:
            s = m.group(1)
    s = re.sub(r"^arxiv\s*:\s*", "", s, flags=re.I).strip()
    m = _ARXIV_NEW.match(s)
    if m:
        return m.group(1)
    m = _ARXIV_OLD.match(s)
    if m:
        return f"{m.group(1).lower()}/{m.group(2)}"
    return None


# --- titles --------------------------------------------------------------------------------------

_ROMAN = frozenset("i ii iii iv v vi vii viii ix x xi xii".split())
_NEGATION = frozenset("not no non without".split())
# Words that mark a version of the same text, not another paper: "(extended version)", "preprint".
_NOISE = frozenset("extended version abridged preprint draft".split())
_BRITISH = ((re.compile(r"isation"), "ization"), (re.compile(r"is(e|es|ed|ing)$"), r"iz\1"),
            (re.compile(r"yse$"), "yze"), (re.compile(r"our$"), "or"), (re.compile(r"ll(ed|ing)$"), r"l\1"))


@lru_cache(maxsize=1 << 16)
def _stem(word: str) -> str:
    """A light, symmetric stem: American spelling, no plural s (so `optimisations` == `optimization`)."""
    if "is" in word or "ys" in word or word.endswith(("our", "lled", "lling")):
        for pat, rep in _BRITISH:
            word = pat.sub(rep, word)
    if len(word) > 3 and word.endswith("s") and not word.endswith("ss"):
        word = word[:-1]
    return word


def _content_words(norm: str) -> list[str]:
    return [w for w in norm.split() if w not in SKIP_WORDS and w not in _NOISE]


def _typo(a: str, b: str) -> bool:
    """One slip apart (two for long words): insertion, deletion, substitution or swap, with first and last letter kept.

    Keeping the first letter stops `cooperative` / `uncooperative`; keeping the last stops `sparse` / `sparser`.
    """
    if a[0] != b[0] or a[-1] != b[-1] or min(len(a), len(b)) < 3:
        return False
    limit = 2 if min(len(a), len(b)) >= 9 else 1
    if abs(len(a) - len(b)) > limit:
        return False
    # Damerau-Levenshtein (optimal string alignment), banded by `limit`
    prev2, prev = None, list(range(len(b) + 1))
    for i in range(1, len(a) + 1):
        cur = [i] + [0] * len(b)
        for j in range(1, len(b) + 1):
            cost = a[i - 1] != b[j - 1]
            cur[j] = min(prev[j] + 1, cur[j - 1] + 1, prev[j - 1] + cost)
            if prev2 is not None and i > 1 and j > 1 and a[i - 1] == b[j - 2] and a[i - 2] == b[j - 1]:
                cur[j] = min(cur[j], prev2[j - 2] + 1)
        if min(cur) > limit:
            return False
        prev2, prev = prev, cur
    return prev[-1] <= limit


def title_similarity(a: str, b: str) -> float:
    """How alike two *normalised* titles are, 0..1: the share of content words that pair up (Dice over words).

    Words pair when their light stems are equal (`optimisation` / `optimization`, `model` / `models`), when one
    is two adjacent words of the other joined (`multi dimensional` / `multidimensional`), or when they are one
    typing or OCR slip apart. Skip words (`a`, `the`, `of`) and version marks (`extended version`) do not count.
    """
    if not a or not b:
        return 0.0
    if a == b:
        return 1.0
    wa, wb = _content_words(a), _content_words(b)
    if not wa or not wb:
        return 1.0 if a.replace(" ", "") == b.replace(" ", "") else 0.0
    if "".join(wa) == "".join(wb):
        return 1.0
    sa, sb = [_stem(w) for w in wa], [_stem(w) for w in wb]
    left_a = list(range(len(wa)))
    left_b = list(range(len(wb)))
    matched = 0
    # exact stems first
    for i in list(left_a):
        for j in left_b:
            if sa[i] == sb[j]:
                left_a.remove(i)
                left_b.remove(j)
                matched += 2
                break

    def joins(left_x, wx, full_y, wy, left_y):
        # hyphenation: a word of one title is two adjacent words of the other (skip words included: over-fitting)
        nonlocal matched
        for i in list(left_x):
            for j in range(len(full_y) - 1):
                pair = full_y[j] + full_y[j + 1]
                if pair == wx[i] or _stem(pair) == _stem(wx[i]):
                    left_x.remove(i)
                    matched += 1
                    for w in (full_y[j], full_y[j + 1]):
                        k = next((k for k in left_y if wy[k] == w), None)
                        if k is not None:
                            left_y.remove(k)
                            matched += 1
                    break

    joins(left_a, wa, b.split(), wb, left_b)
    joins(left_b, wb, a.split(), wa, left_a)
    for i in list(left_a):
        for j in left_b:
            if _typo(wa[i], wb[j]):
                left_a.remove(i)
                left_b.remove(j)
                matched += 2
                break
    return min(1.0, matched / (len(wa) + len(wb)))


def _guard_tokens(norm: str) -> tuple[str, ...]:
    """Words that make two otherwise similar titles different papers: numbers, part numerals, negations."""
    return tuple(sorted(w for w in norm.split() if w.isdigit() or w in _ROMAN or w in _NEGATION))


# Words whose swap for their opposite makes another paper ("Fairness before/after Deployment"). Most are skip
# words, invisible to the similarity; the rest differ in one content word, which a long title absorbs.
_ANTONYMS = (("before", "after"), ("for", "against"), ("pro", "contra"), ("above", "below"), ("over", "under"),
             ("with", "without"), ("pre", "post"), ("inside", "outside"), ("within", "beyond"), ("upper", "lower"),
             ("up", "down"), ("higher", "lower"), ("high", "low"), ("more", "less"), ("most", "least"),
             ("major", "minor"), ("maximum", "minimum"), ("max", "min"), ("best", "worst"), ("better", "worse"),
             ("early", "late"), ("earlier", "later"), ("first", "last"), ("open", "closed"), ("online", "offline"),
             ("static", "dynamic"), ("strong", "weak"), ("true", "false"), ("positive", "negative"),
             ("increasing", "decreasing"), ("increase", "decrease"), ("sparse", "dense"), ("implicit", "explicit"),
             ("synchronous", "asynchronous"), ("centralized", "decentralized"), ("local", "global"),
             ("supervised", "unsupervised"), ("linear", "nonlinear"), ("convex", "nonconvex"))
# Prefixes whose swap does the same inside a word: pretraining / posttraining, overfitting / underfitting.
_ANTONYM_PREFIXES = (("pre", "post"), ("over", "under"), ("intra", "inter"), ("micro", "macro"),
                     ("hyper", "hypo"), ("up", "down"))
_OPPOSITE: dict[str, set[str]] = defaultdict(set)
for _x, _y in _ANTONYMS:
    _OPPOSITE[_x].add(_y)
    _OPPOSITE[_y].add(_x)


def _antonym_swap(a: str, b: str) -> bool:
    """True when a word of normalised title `a` stands where `b` has its opposite (or an opposite prefix)."""
    wa, wb = a.split(), b.split()
    only_a = set(wa) - set(wb) or {w for w in wa if wa.count(w) > wb.count(w)}
    only_b = set(wb) - set(wa) or {w for w in wb if wb.count(w) > wa.count(w)}
    if not only_a or not only_b:
        return False
    for x in only_a:
        if _OPPOSITE.get(x, set()) & only_b:
            return True
        for p, q in _ANTONYM_PREFIXES:
            for p, q in ((p, q), (q, p)):
                if x.startswith(p) and len(x) > len(p) + 2 and any(
                        y.startswith(q) and y[len(q):] == x[len(p):] for y in only_b):
                    return True
    return False


def titles_differ(a: str, b: str) -> bool:
    """Two normalised titles that name different papers however alike they look: other numbers, part numerals
    or negations, or a word swapped for its opposite (before / after, for / against, pre- / post-)."""
    return _guard_tokens(a) != _guard_tokens(b) or _antonym_swap(a, b)


def near_duplicate(a: str, b: str, threshold: float = TITLE_THRESHOLD) -> float:
    """The similarity of two normalised titles if they count as the same title, else 0.0."""
    if titles_differ(a, b):
        return 0.0
    sim = title_similarity(a, b)
    return sim if sim >= threshold else 0.0


# --- the index -----------------------------------------------------------------------------------

@dataclass
class Match:
    """Why a record is a paper already known: `reason` is key | arxiv | doi | title | near-title."""

    paper_id: str
    reason: str
    score: float = 1.0

    def describe(self) -> str:
        return self.reason if self.reason != "near-title" else f"near-title {self.score:.2f}"


@dataclass
class _Entry:
    id: str
    title: str                      # normalised
    names: frozenset[str]           # folded last names of the first three authors
    year: int | None
    stems: frozenset[str] = frozenset()   # stems of the title's content words, for a cheap pre-filter
    dois: set[str] = field(default_factory=set)
    arxiv: str | None = None
    keys: dict[str, set[str]] = field(default_factory=dict)   # source file -> the user's citation keys in it


def _file_keys(item: SourceRecord | PaperMeta) -> list[tuple[str, str]]:
    """(source file, citation key) pairs: a record's own key, or the `file#key` entries of a note's sources."""
    if isinstance(item, SourceRecord):
        if item.key and "#" in item.source:
            return [(item.source.rsplit("#", 1)[0], item.key)]
        return []
    pairs = []
    for src in item.sources:
        if "#" in src:
            file, key = src.rsplit("#", 1)
            if key:
                pairs.append((file, key))
    return pairs


def _other_key_same_file(entry: _Entry, record: SourceRecord | PaperMeta) -> bool:
    """True when `record` carries a citation key and `entry` already has a different one from the same file:
    two entries the user keeps apart in one file are two papers, however alike (`[@key]` must resolve)."""
    return any(entry.keys.get(file) and key not in entry.keys[file] for file, key in _file_keys(record))


def _names(authors: list[str]) -> frozenset[str]:
    out = set()
    for a in authors[:3]:
        n = re.sub(r"[^a-z]", "", fold(last_name(a)).lower())
        if n:
            out.add(n)
    return frozenset(out)


def _ids_of(doi: str | None, arxiv: str | None) -> tuple[str | None, str | None]:
    """(normalised DOI, arXiv id); an arXiv DOI (10.48550/arXiv.X) counts as the arXiv id X."""
    ndoi = normalize_doi(doi)
    ax = normalize_arxiv(arxiv)
    if ndoi and ndoi.startswith("10.48550/"):
        ax = ax or normalize_arxiv(ndoi)
        ndoi = None
    return ndoi, ax


class MemoryStore:
    """The dedup index's tables in memory: for a survey, a test, or a small import."""

    def __init__(self):
        self.ids: set[str] = set()
        self._entries: dict[str, _Entry] = {}
        self._by_arxiv: dict[str, str] = {}
        self._by_doi: dict[str, str] = {}
        self._by_title: dict[str, list[str]] = defaultdict(list)
        self._by_word: dict[str, list[str]] = defaultdict(list)
        self._by_file_key: dict[tuple[str, str], str] = {}

    def __len__(self) -> int:
        return len(self._entries)

    def entry(self, paper_id: str) -> _Entry | None:
        return self._entries.get(paper_id)

    def entries(self, paper_ids: Iterable[str]) -> dict[str, _Entry]:
        return {pid: self._entries[pid] for pid in paper_ids if pid in self._entries}

    def put(self, entry: _Entry) -> None:
        self._entries[entry.id] = entry
        self.ids.add(entry.id)

    def has_id(self, paper_id: str) -> bool:
        return paper_id in self.ids

    def by_arxiv(self, ax: str) -> str | None:
        return self._by_arxiv.get(ax)

    def set_arxiv(self, ax: str, paper_id: str) -> None:
        self._by_arxiv.setdefault(ax, paper_id)

    def by_doi(self, doi: str) -> str | None:
        return self._by_doi.get(doi)

    def set_doi(self, doi: str, paper_id: str) -> None:
        self._by_doi.setdefault(doi, paper_id)

    def by_file_key(self, file: str, key: str) -> str | None:
        return self._by_file_key.get((file, key))

    def set_file_key(self, file: str, key: str, paper_id: str) -> None:
        self._by_file_key.setdefault((file, key), paper_id)

    def by_title(self, title: str) -> list[str]:
        return list(self._by_title.get(title, ()))

    def add_title(self, title: str, words: Iterable[str], paper_id: str) -> None:
        self._by_title[title].append(paper_id)
        for w in words:
            self._by_word[w].append(paper_id)

    def word_counts(self, words: Iterable[str]) -> dict[str, int]:
        return {w: len(self._by_word[w]) for w in words if w in self._by_word}

    def word_ids(self, word: str, limit: int) -> list[str]:
        """The last `limit` papers filed under `word` (the most recent)."""
        return self._by_word.get(word, [])[-limit:]


class DedupIndex:
    """Finds the paper a record already is, among the vault's papers and the records of the same batch.

    Its tables live in a store: in memory (`MemoryStore`, the default), or on disk
    (`papervault.sources.catalog`), so that a bulk import's memory does not grow with the library.
    """

    def __init__(self, metas: Iterable[PaperMeta] = (), *, threshold: float = TITLE_THRESHOLD, store=None):
        self.threshold = threshold
        self.store = store if store is not None else MemoryStore()
        for meta in metas:
            self.add(meta, meta.id)

    @classmethod
    def from_vault(cls, vault, **kw) -> "DedupIndex":
        """Built from every note in `vault` (a `papervault.vault.store.Vault`)."""
        return cls(vault.iter_meta(), **kw)

    @property
    def ids(self):
        """The ids in use (supports `in`), for making new unique keys."""
        return _Ids(self.store)

    def __len__(self) -> int:
        return len(self.store)

    def add(self, item: SourceRecord | PaperMeta, paper_id: str) -> None:
        """Remember `item` as (part of) paper `paper_id`: later records with its ids or title match it."""
        doi, ax = _ids_of(item.doi, item.arxiv)
        entry = self.store.entry(paper_id)
        if entry is None:
            entry = _Entry(paper_id, normalize_title(item.title), _names(item.authors), item.year)
            self._index_title(entry)
        else:   # a second source of a known paper may bring identifiers or a title it lacked
            if not entry.title and item.title:
                entry.title = normalize_title(item.title)
                self._index_title(entry)
            entry.names = entry.names or _names(item.authors)
            entry.year = entry.year or item.year
        for file, key in _file_keys(item):
            entry.keys.setdefault(file, set()).add(key)
            self.store.set_file_key(file, key, paper_id)
        if doi:
            entry.dois.add(doi)
            self.store.set_doi(doi, paper_id)
        if ax:
            entry.arxiv = entry.arxiv or ax
            self.store.set_arxiv(ax, paper_id)
        self.store.put(entry)

    def keeps_apart(self, paper_id: str, record: SourceRecord) -> bool:
        """True when `record` must not merge into `paper_id` whatever matches: another key from the same file."""
        entry = self.store.entry(paper_id)
        return entry is not None and _other_key_same_file(entry, record)

    def _index_title(self, entry: _Entry) -> None:
        if not entry.title:
            return
        entry.stems = frozenset(_stem(w) for w in _content_words(entry.title))
        words = sorted(w for w in set(entry.title.split()) if len(w) > 2 and w not in SKIP_WORDS)
        self.store.add_title(entry.title, words, entry.id)

    def find(self, record: SourceRecord | PaperMeta) -> Match | None:
        """The known paper `record` is, or None: by its citation key in the same file (the entry imported
        before), then arXiv id, then DOI, then exact title, then near-duplicate title."""
        store = self.store
        doi, ax = _ids_of(record.doi, record.arxiv)
        names = _names(record.authors)
        for file, key in _file_keys(record) if isinstance(record, SourceRecord) else ():
            pid = store.by_file_key(file, key)
            if pid and self._compatible(store.entry(pid), names, record.year, doi, ax, exact=True):
                return Match(pid, "key")
        pid = store.by_arxiv(ax) if ax else None
        if pid and not _other_key_same_file(store.entry(pid), record):
            return Match(pid, "arxiv")
        pid = store.by_doi(doi) if doi else None
        if pid and not _other_key_same_file(store.entry(pid), record):
            return Match(pid, "doi")
        title = normalize_title(record.title)
        if len(title) < 8:      # "Introduction", "Editorial": too generic to identify a paper
            return None
        for pid in store.by_title(title):
            entry = store.entry(pid)
            if self._compatible(entry, names, record.year, doi, ax, exact=True) and \
                    not _other_key_same_file(entry, record):
                return Match(pid, "title")
        best: Match | None = None
        stems = frozenset(_stem(w) for w in _content_words(title))
        # Cheap pre-filter: a near-duplicate shares all but a few of its words exactly (typos, hyphenation).
        slack = 1 + len(stems) // 8
        candidates = self._candidates(title, slack + 1)
        for pid, entry in sorted(store.entries(candidates).items()):
            es = entry.stems
            if abs(len(es) - len(stems)) > slack or len(stems - es) > slack or len(es - stems) > slack:
                continue
            score = near_duplicate(title, entry.title, self.threshold)
            if score and (best is None or score > best.score) and \
                    self._compatible(entry, names, record.year, doi, ax, exact=False) and \
                    not _other_key_same_file(entry, record):
                best = Match(pid, "near-title", score)
        return best

    @staticmethod
    def _compatible(entry: _Entry, names: frozenset[str], year: int | None, doi: str | None, ax: str | None,
                    *, exact: bool) -> bool:
        """Same title, but is it the same paper? Different DOIs, arXiv ids or first authors say no."""
        if doi and entry.dois and doi not in entry.dois:
            return False
        if ax and entry.arxiv and ax != entry.arxiv:
            return False
        if names and entry.names and not (names & entry.names):
            return False
        if not exact and year and entry.year and abs(year - entry.year) > 2:
            return False
        return True

    def _candidates(self, title: str, rarest: int, budget: int = 500) -> set[str]:
        """Papers sharing one of the title's `rarest` rarest words.

        A near-duplicate misses at most `slack` of a title's words exactly (typos, hyphenation), so it must share
        one of any `slack + 1` of them (pigeonhole): the rarest are the cheapest to look up. A title made only of
        very common words stops adding word lists once `budget` candidates are gathered; such a title is still
        found by its DOI, arXiv id or exact title, only a misspelt copy of it may be missed.
        """
        words = {w for w in title.split() if len(w) > 2 and w not in SKIP_WORDS}
        counts = sorted(self.store.word_counts(words).items(), key=lambda wc: (wc[1], wc[0]))
        out: set[str] = set()
        for n, (word, count) in enumerate(counts[:rarest]):
            if n and len(out) + count > budget:
                break
            out.update(self.store.word_ids(word, budget))
        return out

    def new_id(self, record: SourceRecord | PaperMeta, confident: bool = True) -> str:
        """An id for a record that matched nothing: the user's own key if it is free, else a generated one
        (of the likely-right parts only when the identity is not `confident`, see `ids.key_base`)."""
        own = sanitize_key(getattr(record, "key", None))
        ids = self.ids
        if own:
            return unique_key(own, ids)
        return make_key(record.authors, record.year, record.title or "", ids, confident)

    def assign(self, record: SourceRecord) -> tuple[str, Match | None]:
        """Find `record`'s paper or give it a new id, and remember it either way: (paper id, match or None)."""
        match = self.find(record)
        pid = match.paper_id if match else self.new_id(record)
        self.add(record, pid)
        return pid, match


class _Ids:
    """`paper_id in ids` over a store's ids, without holding them."""

    def __init__(self, store):
        self.store = store

    def __contains__(self, paper_id: object) -> bool:
        return isinstance(paper_id, str) and self.store.has_id(paper_id)
