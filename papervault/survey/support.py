"""Whether a cited paper supports a claim: a judge that accepts a faithful paraphrase.

A survey written by a model paraphrases; a judge that counts shared words (`evidence.support_score`) rejects
most paraphrases and accepts a claim whose number or direction was changed. This judge scores a claim against
passages of the paper it cites — the sentences of the cited page and its neighbours, the sentences that share
the claim's rarer words anywhere in the paper, and (when a workspace is given) the index's passages for the
claim — by cosine similarity of sentence embeddings (the index's model, `papervault.index.embed.Embedder`),
single sentences and pairs of adjacent sentences alike. A passage counts as support when it reaches the
threshold and passes the checks an embedding misses:

- every number of the claim occurs in the passage (or next to it);
- the claim does not negate what the passage asserts, nor the reverse;
- the claim does not say the opposite (higher/lower, synchronous/asynchronous, ...) of the passage;
- every name and technical term of the claim occurs somewhere in the paper.

A claim supported only by a passage that describes other work (`Passage.other`) is **misattributed** unless
the text presents it as a remark ("as described by …", see `attribution.reported`) or names the work the
passage is about. Claims and passages are embedded in one batch; passage vectors are kept for the next call
(and the workspace's vector cache keeps them across runs).
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass, field
from functools import lru_cache
from typing import Callable, Sequence

from papervault.survey.evidence import Passage, paper_sentences, rank_sentences, support_score, tokens

SUPPORTED, UNSUPPORTED, MISATTRIBUTED = "supported", "unsupported", "misattributed"

# Chosen on the tune half of bench/claim_pairs.jsonl (bench/polish_judge.py): the cosine similarity of claim
# and passage above which a passage that passes the checks supports the claim. See docs/survey.md "Polish".
THRESHOLD = 0.62
# A claim that repeats this share of a passage's words and word pairs is a quotation of it, whatever the vectors.
QUOTE_SCORE = 0.9
MARGIN = 0.05           # passages this close to the best one are as good a reading of the claim
LEXICAL_OTHER = 0.4     # a claim repeating this much of a description of other work rests on it
PAGE_WINDOW = 1          # the cited page and this many pages either side are read first
LEXICAL_CANDIDATES = 12  # sentences of the whole paper that share the claim's rarer words
# Of a claim's candidates in one paper, only this many (those sharing most of the claim's rarer words) are
# embedded: embedding is most of a judge's time (one text at a time at int8), and a passage that shares none of
# a claim's rarer words seldom paraphrases it. Chosen with bench/polish_judge.py (docs/survey.md "Polish").
EMBED_CANDIDATES = 16

_NUMBER = re.compile(r"(?<![A-Za-z0-9.,])(\d+(?:[.,]\d+)*)(?![A-Za-z0-9])")
_WORD_NUMBERS = {w: str(i) for i, w in enumerate(
    "zero one two three four five six seven eight nine ten eleven twelve".split())} | {
    "dozen": "12", "twenty": "20", "thirty": "30", "forty": "40", "fifty": "50", "hundred": "100",
    "thousand": "1000", "million": "1000000", "billion": "1000000000",
    "pair": "2", "twice": "2", "double": "2", "triple": "3", "triplet": "3", "thrice": "3", "quadruple": "4",
    "quintuplet": "5"}
_NEGATION = re.compile(r"\b(?:not|no|never|none|nothing|nor|neither|cannot|unable|impossible|insufficient|"
                       r"inadequate|without|unrealistic|undecidable|far from|fail(?:s|ed)? to|yet to)\b|n't\b", re.I)
_OPPOSITES = [("higher", "lower"), ("increase", "decrease"), ("increases", "decreases"), ("raises", "lowers"),
              ("faster", "slower"), ("more", "less"), ("more", "fewer"), ("larger", "smaller"),
              ("synchronous", "asynchronous"), ("synchronously", "asynchronously"), ("strong", "weak"),
              ("stronger", "weaker"), ("always", "never"), ("sufficient", "insufficient"),
              ("smaller", "greater"), ("cheaper", "expensive"), ("lossless", "lossy"), ("before", "after")]
_TERM = re.compile(r"\b(?:[A-Z][A-Za-z0-9]*(?:[-'][A-Za-z0-9]+)*|[a-z]+[A-Z][A-Za-z0-9]*|[A-Za-z]{2,}\d[A-Za-z0-9-]*)\b")
_REPORTER = re.compile(r"\b(?:as (?:described|noted|stated|reported|put|summari[sz]ed) by|according to)\b.*$", re.I)
# Capitalised words that start clauses or name nothing in particular.
_NOT_TERMS = frozenset("""
a an and as at but by for from he her his how however i if in into it its like many more most no not of on or
our she so some such than that the their them then there these they this those though thus to under unlike we
what when where whereas which while who why with yet both each every all other others only also because since
although despite after before between over compared once instead rather both either neither whether
""".split())


@dataclass
class Claim:
    """A cited claim as polish reads it: what it asserts, the papers it cites, the page it names (printed, of
    the first cited paper) and whether the text presents it as someone's remark."""

    text: str
    keys: list[str]
    page: str | None = None
    reported: bool = False


@dataclass
class Verdict:
    label: str                         # SUPPORTED | UNSUPPORTED | MISATTRIBUTED
    key: str = ""                      # the cited paper the verdict is about (the supporting one when supported)
    passage: Passage | None = None     # the best passage (supporting, or closest when not)
    score: float = 0.0
    why: str = ""
    scores: dict[str, float] = field(default_factory=dict)


# --- the checks a sentence embedding misses ----------------------------------------------------------

def numbers(text: str) -> set[str]:
    """The numbers `text` states, normalised ("20,000" -> "20000", "twelve" -> "12", "38.4%" -> "38.4")."""
    out = {m.group(1).replace(",", "").rstrip(".") for m in _NUMBER.finditer(text)}
    out |= {_WORD_NUMBERS[w] for w in re.findall(r"[a-z]+", text.lower()) if w in _WORD_NUMBERS}
    return {n[:-2] if n.endswith(".0") else n for n in out}


def negated(text: str) -> bool:
    return bool(_NEGATION.search(text))


def terms(text: str, *, first: bool = False) -> list[str]:
    """Names and technical terms of `text`: capitalised words (the first word too when `first`: it is capitalised
    anyway), CamelCase and words with digits."""
    out = []
    text = _REPORTER.sub("", text)
    for i, m in enumerate(_TERM.finditer(text)):
        w = re.sub(r"['’]s$", "", m.group(0))
        if w.lower() in _NOT_TERMS or len(w) < 2 or w.isdigit():
            continue
        if i == 0 and m.start() == len(text) - len(text.lstrip()) and not first and w[0].isupper() and w[1:].islower():
            continue
        if re.fullmatch(r"\d+[A-Za-z]{0,2}", w):
            continue      # "3f", "2x": numbers, checked as numbers
        out.append(w)
    return out


def _flat(text: str) -> str:
    return re.sub(r"[^a-z0-9]+", "", text.lower())


def _clauses(text: str) -> list[str]:
    return [s for s in re.split(r"(?<=[.;:!?,])\s+|\s+[—–]\s+|\s+(?:but|however|whereas|while|although|yet(?! to\b))\s+",
                                text) if len(tokens(s)) >= 2]


def _negation_differs(claim: str, passage: str) -> str:
    """Whether the claim negates what the passage asserts (or the reverse), judged on the passage's clauses
    that share words with the claim: "" when it does not."""
    cw = set(tokens(claim))
    passage = re.sub(r"\([^()]*\)", " ", passage)        # asides: "(⊥ if no pvalue has been accepted)"
    near = [s for s in _clauses(passage) if cw & set(tokens(s))] or [passage]
    focus = max(near, key=lambda s: len(cw & set(tokens(s))))
    if negated(claim) and not any(negated(s) for s in near):
        return "the claim negates what the passage asserts"
    if negated(focus) and not negated(claim):
        return "the passage negates what the claim asserts"
    return ""


def check(claim: str, passage: str, context: str, paper: str) -> str:
    """Why `passage` (`context`: it and the sentences around it; `paper`: the whole text) cannot support
    `claim` though it reads alike; "" when nothing speaks against it."""
    missing = numbers(claim) - numbers(context)
    if missing:
        return f"the passage does not state {', '.join(sorted(missing))}"
    why = _negation_differs(claim, passage)
    if why:
        return why
    cw, pw = set(re.findall(r"[a-z]+", claim.lower())), set(re.findall(r"[a-z]+", passage.lower()))
    for a, b in _OPPOSITES:
        for x, y in ((a, b), (b, a)):
            if x in cw and y in pw and x not in pw and y not in cw:
                return f"the claim says {x!r} where the passage says {y!r}"
    flat = _flat(paper)
    absent = [t for t in terms(claim) if _flat(t) and _flat(t) not in flat]
    if absent:
        return f"the paper never mentions {', '.join(absent[:3])}"
    return ""


# A claim whose subject is the citing paper or its authors: "This paper introduces …", "Cidon et al. show …"
_SELF_SUBJECT = re.compile(r"^\W*(?:(?:this|the) (?:paper|work|study|article|authors?)\b|they\b|"
                           r"(?:[A-Z][\w'’-]+\s+)?[A-Z][\w'’-]+ et al\b|"
                           r"(?:[A-Z][\w'’-]+,\s+)*[A-Z][\w'’-]+,? (?:and|&) [A-Z][\w'’-]+\s+[a-z]+)", re.I)


def names_the_described(claim: str, passage: Passage) -> bool:
    """True when the claim is about what a passage about other work describes: it names a term of the passage
    and does not make the citing paper or its authors the subject ("Paxos is …", not "This paper introduces
    Paxos" nor "Cidon et al. model …")."""
    if _SELF_SUBJECT.match(claim):
        return False
    own = {_flat(t) for t in terms(passage.text, first=True)}
    return any(_flat(t) in own for t in terms(claim, first=True))


# --- candidates ---------------------------------------------------------------------------------------

def _with_pairs(pool: list[Passage]) -> list[Passage]:
    """Sentences and each pair of adjacent sentences of the same section (a paraphrase may join two)."""
    out = list(pool)
    for a, b in zip(pool, pool[1:]):
        if a.section == b.section and a.page is not None and b.page is not None and b.page - a.page in (0, 1):
            out.append(Passage(a.paper_id, f"{a.text} {b.text}", a.page, a.section, 0.0, a.source,
                               a.other or b.other))
    return out


def candidates(claim: str, paper_id: str, fulltext: str, page: int | None, window: int = 0,
               extra: Sequence[Passage] = ()) -> list[Passage]:
    """The passages of a paper a claim citing it (on `page`, a PDF page, when it names one; and `window` pages
    either side) is checked against."""
    sents = paper_sentences(paper_id, fulltext)
    near: list[Passage] = []
    if page is not None:
        near = [s for s in sents if s.page is not None and abs(s.page - page) <= window]
    lexical = rank_sentences(claim, sents, limit=LEXICAL_CANDIDATES, only_quotable=False)
    pos = {(s.text, s.page): i for i, s in enumerate(sents)}
    # a lexical hit brings its neighbours: the pair it forms with either is a candidate too
    around: list[Passage] = []
    for h in lexical:
        i = pos.get((h.text, h.page))
        if i is not None:
            around += sents[max(0, i - 1):i + 2]
    seen, out = set(), []
    near = [s for s in near if len(tokens(s.text)) >= 4]
    for p in near + _with_pairs(around) + list(extra):
        if p.text not in seen:
            seen.add(p.text)
            out.append(p)
    return out


@lru_cache(maxsize=64)
def _idf(paper_id: str, fulltext: str) -> dict[str, float]:
    """How rare each word is among a paper's sentences (log inverse document frequency)."""
    sents = paper_sentences(paper_id, fulltext)
    df: dict[str, int] = {}
    for p in sents:
        for w in set(_toks(p.text)):
            df[w] = df.get(w, 0) + 1
    n = len(sents) or 1
    return {w: math.log(1 + n / c) for w, c in df.items()}


@lru_cache(maxsize=65536)
def _toks(text: str) -> frozenset[str]:
    return frozenset(tokens(text))


def prefilter(claim: str, cands: list[Passage], idf: dict[str, float], limit: int | None = None) -> list[Passage]:
    """The `limit` candidates that share most of the claim's rarer words (the share of the claim's inverse
    document frequency a candidate holds; ties keep the candidates' order: the cited page first)."""
    limit = EMBED_CANDIDATES if limit is None else limit
    if len(cands) <= limit:
        return cands
    cw = _toks(claim)
    top = max(idf.values(), default=1.0)
    weight = {w: idf.get(w, top) for w in cw}
    total = sum(weight.values()) or 1.0
    scored = sorted(range(len(cands)), key=lambda i: -sum(weight[w] for w in cw & _toks(cands[i].text)) / total)
    keep = sorted(scored[:limit])
    return [cands[i] for i in keep]


# --- the judges ---------------------------------------------------------------------------------------

Embed = Callable[[list[str]], "object"]   # texts -> array (n, dim), L2-normalised


class SemanticJudge:
    """Judges cited claims against the cited papers' passages with sentence embeddings and the checks above.

    `texts(paper_id)` gives a paper's `paper.md` ("" when it is not in the vault); `embed` embeds texts
    (normalised vectors); `page_of(paper_id, printed)` turns a printed page label into the PDF page;
    `index(paper_id, claim)` may add the index's passages for a claim.
    """

    def __init__(self, texts: Callable[[str], str], embed: Embed, *, threshold: float = THRESHOLD,
                 page_of: Callable[[str, str], int | None] | None = None,
                 index: Callable[[str, str], list[Passage]] | None = None):
        self.texts, self.embed, self.threshold = texts, embed, threshold
        self.page_of = page_of or (lambda pid, label: int(label) if label and str(label).isdigit() else None)
        self.index = index
        self._vec: dict[str, object] = {}
        self._pools: dict[tuple, list[Passage]] = {}   # (claim, paper, page) -> candidates, for the next call

    def _vectors(self, texts: list[str]) -> None:
        todo = list(dict.fromkeys(t for t in texts if t not in self._vec))
        if todo:
            for t, v in zip(todo, self.embed(todo)):
                self._vec[t] = v

    def judge(self, claims: Sequence[Claim]) -> list[Verdict]:
        """The verdict on each claim: first against the cited page (and the paper's matching sentences), then,
        for the claims nothing there supports, the pages either side and the index's passages too (a search per
        claim costs more than its vectors: only the claims that need it). Two batches of vectors at most."""
        out = self._judge(claims, 0, False)
        again = [i for i, (c, v) in enumerate(zip(claims, out)) if v.label == UNSUPPORTED and not
                 (v.why and v.score >= self.threshold)]
        if again and (PAGE_WINDOW or self.index):
            for i, v in zip(again, self._judge([claims[i] for i in again], PAGE_WINDOW, True)):
                out[i] = v
        return out

    def _judge(self, claims: Sequence[Claim], window: int, ask_index: bool) -> list[Verdict]:
        pools: list[dict[str, list[Passage]]] = []
        wanted: list[str] = []
        for c in claims:
            per_key, read = {}, {}
            for k in dict.fromkeys(c.keys):
                full = self.texts(k)
                if not full:
                    per_key[k] = []
                    continue
                page = self.page_of(k, c.page) if c.page and k == c.keys[0] else None
                key = (c.text, k, page, window, len(full))
                if key not in self._pools:
                    if len(self._pools) > 4096:
                        self._pools.clear()
                    self._pools[key] = candidates(c.text, k, full, page, window)
                per_key[k] = list(self._pools[key])
            # a quotation is judged by its words: no vectors needed (an extractive draft quotes throughout)
            if not any(_quote(c.text, p.text) for ps in per_key.values() for p in ps):
                for k in per_key:
                    if ask_index and self.index and per_key[k]:
                        per_key[k] += [p for p in self.index(k, c.text) if p.text not in {q.text for q in per_key[k]}]
                    if per_key[k]:
                        read[k] = per_key[k]        # all of them: the lexical checks cost no vectors
                        per_key[k] = prefilter(c.text, per_key[k], _idf(k, self.texts(k)))
                    wanted += [p.text for p in per_key[k]]
                wanted.append(c.text)
            pools.append((per_key, read))
        self._vectors(wanted)                      # one batch: every claim and every passage not seen before
        return [self._one(c, pool, read) for c, (pool, read) in zip(claims, pools)]

    def _one(self, c: Claim, pool: dict[str, list[Passage]], read: dict[str, list[Passage]]) -> Verdict:
        """`pool`: the candidates of each cited paper that were embedded; `read`: all of them (the context of a
        passage and the description of other work a claim's words may come from are found among these)."""
        import numpy as np  # deferred: polish is imported by every export, vectors are compared only here

        cv = np.asarray(self._vec[c.text]) if c.text in self._vec else None
        best: Verdict | None = None
        scores: dict[str, float] = {}
        for k, cands in pool.items():
            if not cands:
                scores[k] = 0.0
                continue
            full = self.texts(k)
            sims = [float(np.dot(cv, np.asarray(self._vec[p.text]))) if cv is not None else 0.0 for p in cands]
            # a quotation is support whatever its vector says (a long quotation may be cut by the model)
            ranked = sorted(range(len(cands)), key=lambda i: -max(sims[i], _quote(c.text, cands[i].text)))
            top = ranked[0]
            scores[k] = round(max(sims[top], _quote(c.text, cands[top].text)), 3)
            s = scores[k]
            if s >= self.threshold:
                # the closest passages decide (those within MARGIN of the best): a claim that contradicts the
                # passage it paraphrases is not saved by another that merely reads alike
                v = None
                for i in ranked:
                    si = max(sims[i], _quote(c.text, cands[i].text))
                    if si < max(self.threshold, s - MARGIN):
                        break
                    p = cands[i]
                    why = check(c.text, p.text, _context(p, read.get(k, cands)), full)
                    if why:
                        v = v or Verdict(UNSUPPORTED, k, _scored(p, si), si, why)
                        continue
                    if not p.other:
                        # the claim's words may still come from a description of other work next to it
                        lex, ls = _lexical_best(c.text, read.get(k, cands))
                        if lex.other and ls >= max(LEXICAL_OTHER, _overlap(c.text, p.text)):
                            p = lex
                    # a quotation of a description of other work is the citing paper's remark whatever it names
                    if p.other and not c.reported and (_quote(c.text, p.text) or not names_the_described(c.text, p)):
                        v = Verdict(MISATTRIBUTED, k, _scored(p, si), si,
                                    f"the {k} passage describes other work ({p.other}), not its own claim")
                    else:
                        v = Verdict(SUPPORTED, k, _scored(p, si), si)
                    break
                if best is None or _rank(v) > _rank(best):
                    best = v
                continue
            if best is None or best.label == UNSUPPORTED and not best.why and s > best.score:
                p = cands[top]
                best = Verdict(UNSUPPORTED, k, _scored(p, scores[k]), scores[k],
                               f"no passage of {k} says it (closest {scores[k]:.2f} < {self.threshold:.2f})")
        if best is None:
            return Verdict(UNSUPPORTED, c.keys[0] if c.keys else "", None, 0.0,
                           f"no text of {', '.join(c.keys)} to check against", scores)
        best.scores = scores
        return best


@lru_cache(maxsize=65536)
def _overlap(claim: str, passage: str) -> float:
    return support_score(claim, passage)


def _lexical_best(claim: str, cands: list[Passage]) -> tuple[Passage, float]:
    scored = [(_overlap(claim, q.text), i) for i, q in enumerate(cands)]
    s, i = max(scored)
    return cands[i], s


def _rank(v: Verdict) -> tuple:
    """Which of two cited papers' verdicts stands for the claim: support first, then the closer passage."""
    return ({SUPPORTED: 3, MISATTRIBUTED: 2}.get(v.label, 1 if v.why and v.score else 0), v.score)


def _quote(claim: str, passage: str) -> float:
    """1.0-ish when the claim repeats the passage's words (a quotation), else 0: vectors decide."""
    s = _overlap(claim, passage)
    return s if s >= QUOTE_SCORE else 0.0


def _context(p: Passage, cands: list[Passage]) -> str:
    """The passage with the candidates of its page that contain it (numbers may sit in the next sentence)."""
    return " ".join([p.text] + [c.text for c in cands if c.page == p.page and p.text in c.text and c is not p])


def _scored(p: Passage, s: float) -> Passage:
    return Passage(p.paper_id, p.text, p.page, p.section, round(s, 3), p.source, p.other)


class LexicalJudge:
    """The word-overlap judge polish used before: the best sentence's `support_score` against a threshold,
    misattributed when that sentence describes other work and the text does not present it as a remark.
    `support(claim, paper_id)` returns the best passage (`evidence.best_support`)."""

    def __init__(self, support: Callable[[str, str], Passage | None], threshold: float = 0.45):
        self.support, self.threshold = support, threshold

    def judge(self, claims: Sequence[Claim]) -> list[Verdict]:
        out = []
        for c in claims:
            found = {k: self.support(c.text, k) for k in dict.fromkeys(c.keys)}
            scores = {k: round(p.score, 3) if p else 0.0 for k, p in found.items()}
            good = [k for k in found if found[k] is not None and found[k].score >= self.threshold]
            if good:
                k = good[0]
                p = found[k]
                if p.other and not c.reported:
                    out.append(Verdict(MISATTRIBUTED, k, p, p.score,
                                       f"the {k} passage describes other work ({p.other}), not its own claim", scores))
                else:
                    out.append(Verdict(SUPPORTED, k, p, p.score, "", scores))
                continue
            k = max(found, key=lambda x: scores[x]) if found else ""
            out.append(Verdict(UNSUPPORTED, k, found.get(k), scores.get(k, 0.0),
                               f"no passage of {', '.join(c.keys)} supports it (best {scores.get(k, 0.0):.2f} "
                               f"< {self.threshold})", scores))
        return out
