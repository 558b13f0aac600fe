"""The title of a page: candidate runs of lines scored on the page's own evidence (`choose_title`)."""

from __future__ import annotations

import json
import math
import re
from dataclasses import dataclass, field
from functools import lru_cache
from pathlib import Path

from papervault.ids import SKIP_WORDS, normalize_title
from papervault.lineshapes import is_address, is_column, is_institution
from papervault.parse.layout import Block, Line, Span
from papervault.parse.lines import (_BODY_START, _CONNECTIVE, _MEMO_PREFIX, _PAREN_DATES, _STAMP_ANYWHERE,
                                    _glue, _names_line, is_author_line, is_banner, looks_like_name, norm,
                                    not_title)
from papervault.parse.words import dictionary_share, vocabulary

@dataclass
class TitleChoice:
    """The title the page's signals agree on: its lines, text, score, the evidence for it and a confidence."""

    lines: list[Line]
    text: str
    score: float = 0.0
    evidence: list[str] = field(default_factory=list)
    flags: list[str] = field(default_factory=list)
    confidence: str = "low"
    features: dict[str, float] = field(default_factory=dict)
    names_above: list[Line] = field(default_factory=list)
    hand: float = 0.0
    probability: float = 0.0


def _extend(start: Line, lines: list[Line], ok: set[int], body: float, scanned: bool) -> list[Line]:
    """The run of title lines around `start`: up over the lines of the title set above it (a smaller first
    line, "Early" over "LISP History"), down over its continuation lines."""
    i = lines.index(start)
    out = [start]
    for ln in reversed(lines[:i]):      # up
        first = out[0]
        if ln.bbox[3] > first.bbox[3] - 0.5 * min(ln.size, first.size):       # beside it, not above it
            continue
        if ln.bbox[0] > max(l.bbox[2] for l in out) + 5 or ln.bbox[2] < min(l.bbox[0] for l in out) - 5:
            continue
        gap = first.bbox[1] - ln.bbox[3]
        if id(ln) not in ok or gap > 0.6 * max(ln.size, first.size) or ln.size < max(body + 1.5, 0.7 * start.size) \
                or ln.size > start.size + 0.6 or is_banner(ln.text) or _names_line(ln, first) or scanned:
            break
        out.insert(0, ln)
        if len(out) >= 4:
            return out
    for ln in lines[i + 1:]:            # down
        if ln.bbox[0] > max(l.bbox[2] for l in out) + 5 or ln.bbox[2] < min(l.bbox[0] for l in out) - 5:
            continue  # another column beside the title
        prev = out[-1]
        h = max(1.0, prev.bbox[3] - prev.bbox[1])
        if ln.bbox[1] < prev.bbox[1] + 0.3 * h:
            continue
        gap = ln.bbox[1] - prev.bbox[3]
        nxt = lines[lines.index(ln) + 1] if lines.index(ln) + 1 < len(lines) else None
        if looks_like_name(ln.text) and not looks_like_name(prev.text):
            break                         # the author's name under the title, in the title's type
        same = abs(ln.size - start.size) < 0.6 and start.size >= body + 2
        if _names_line(ln, nxt) and not (same and not is_author_line(ln.text) and not scanned and ln.bold == start.bold
                                         and ln.fonts == start.fonts):
            break
        if abs(ln.size - start.size) >= 0.6 and not scanned:
            # A line of another size goes on the title only when the words say so: the line above ends on a
            # connective or a colon, or this one opens with a parenthesis or a lower-case word.
            goes_on = _CONNECTIVE.search(prev.text.strip()) or re.match(r"^[(\[]|[a-z]", ln.text.strip())
            if not (goes_on and gap < 0.6 * h and ln.size >= max(body + 1.5, 0.65 * start.size)
                    and (not not_title(ln.text) or _PAREN_DATES.match(ln.text.strip())) and not is_banner(ln.text)):
                break
            if _PAREN_DATES.match(ln.text.strip()):
                out.append(ln)
                break
        elif gap > 1.1 * h:
            # Wide leading: a short line of the same type right under a short title line still belongs to it.
            if not (same and gap < 1.7 * h and ln.fonts == start.fonts and len(ln.text.split()) <= 4
                    and len(prev.text.split()) <= 4 and not not_title(ln.text)):
                break
        if not_title(ln.text) and not (same and not _STAMP_ANYWHERE.search(ln.text)) or is_banner(ln.text) \
                or (scanned and re.match(r"^by\b", ln.text, re.I)):
            break
        if scanned and len(out) >= 1 and not out[-1].text.rstrip().endswith((":", "-", ",")) \
                and ln.text[:1].islower() is False and len(out[-1].text) < 0.5 * len(ln.text):
            break
        out.append(ln)
        if len(out) >= 4:
            break
    return out


def _file_words(name: str | None) -> set[str]:
    """The words of a file name, as a person names a paper ("lelewer-data-compression.pdf")."""
    if not name:
        return set()
    stem = re.sub(r"\.pdf$", "", name.rsplit("/", 1)[-1], flags=re.I)
    stem = re.sub(r"([a-z])([A-Z])", r"\1 \2", stem)
    return {w for w in norm(stem).split() if len(w) > 1 and not w.isdigit()}


def _significant(text: str) -> list[str]:
    return [w for w in norm(text).split() if w not in SKIP_WORDS and not w.isdigit()]


# The features of a title candidate (`_features`), each a number; the learned model (`title_model.json`, fitted
# by bench/title_model.py on the tune half of the identity set) weighs them. `HAND` are the weights set by hand
# before it, kept to compare with.
FEATURES = ("rel_size", "uniform_big", "size_rank", "largest", "bold", "top", "first_run", "author_line", "banner",
            "upper_word", "one_word", "not_words", "dict_share", "starts_mid", "sentence", "author_below",
            "author_above", "file_name", "pdf_metadata", "running_head", "n_lines", "log_words", "all_caps",
            "ends_open", "name_like", "institution", "address", "scanned")
HAND = {"rel_size": 4.0, "uniform_big": 1.0, "bold": 0.5, "top": -1.0, "author_line": -6.0, "banner": -6.0,
        "upper_word": -6.0, "one_word": -1.5, "not_words": -3.0, "starts_mid": -2.0, "sentence": -4.0,
        "author_below": 2.0, "author_above": 1.0, "file_name": 3.0, "pdf_metadata": 3.0, "running_head": 2.0}
# Flags that say what a candidate is not (correctness, not preference): a candidate with one is chosen only when
# every candidate has one.
HARD = ("author line", "banner")
_MODEL_FILE = Path(__file__).with_name("title_model.json")


@lru_cache(maxsize=1)
def title_model() -> dict:
    """The fitted title model: `weights` per feature, `bias`, and the probability `threshold` above which a
    title is `high` confidence."""
    return json.loads(_MODEL_FILE.read_text(encoding="utf-8"))


def model_score(features: dict[str, float], model: dict | None = None) -> float:
    """The model's log-odds that a candidate with these features is the title."""
    m = model or title_model()
    return m["bias"] + sum(w * features.get(f, 0.0) for f, w in m["weights"].items())


def _features(c: TitleChoice, lines: list[Line], body: float, big: float, height: float, stop: float | None,
              file_words: set[str], info_title: str, repeats: list[str], scanned: bool) -> dict[str, float]:
    """The page's evidence about one candidate run, as numbers; sets its `evidence` and `flags` too."""
    ev, flags = [], []
    x: dict[str, float] = {f: 0.0 for f in FEATURES}
    size = max(ln.size for ln in c.lines)
    x["rel_size"] = max(0.0, size - body) / max(1.0, big - body)
    x["uniform_big"] = float(big - body < 1.0 and size >= big - 0.5)   # a cover set large throughout
    x["largest"] = float(size >= big - 0.5)
    if all(ln.bold for ln in c.lines):
        x["bold"] = 1.0
        ev.append("bold")
    x["top"] = c.lines[0].bbox[1] / max(1.0, height)
    text = c.text
    words = norm(text).split()
    last = lines.index(c.lines[-1]) if c.lines[-1] in lines else len(lines) - 1
    lo, hi = min(ln.bbox[0] for ln in c.lines), max(ln.bbox[2] for ln in c.lines)
    wide = (hi - lo) * 0.25 + 20
    after = [ln for ln in lines[last + 1:] if (stop is None or ln.bbox[1] < stop + 1)
             and ln.bbox[0] < hi + wide and ln.bbox[2] > lo - wide][:5]      # under it, not in the next column
    below_first = after[0] if after else None
    names = is_author_line(text) or (len(c.lines) == 1 and _names_line(c.lines[0], below_first))
    if names and not is_author_line(text) and below_first is not None and size >= big - 0.5 \
            and size >= below_first.size + 2:
        names = False    # a short title with a footnote mark, in the largest type over smaller lines ("Liquid Types∗")
    if names:
        x["author_line"] = 1.0
        flags.append("author line")
    if is_banner(text) or any(re.match(r"\s*journal\s+homepage", ln.text, re.I) for ln in after[:2]):
        x["banner"] = 1.0                # a publisher's banner, or the journal's name over its homepage line
        flags.append("banner")
    letters = [ch for ch in text if ch.isalpha()]
    if len(words) == 1 and letters and all(ch.isupper() for ch in letters) and not text.rstrip().endswith(":"):
        x["upper_word"] = 1.0   # one upper-case word over the title: a series, a place, an acronym's banner ("BRICS")
        flags.append("banner")
    elif len(words) == 1:
        x["one_word"] = 1.0
        flags.append("one word")
    share = dictionary_share([re.sub(r"\b[A-Z][A-Z\d]+\b", " ", text)])     # acronyms ("TREC") are not broken words
    x["dict_share"] = 1.0 if share is None else share
    if share is not None and share < 0.5:
        x["not_words"] = 1.0
        flags.append("not words")
    if text[:1].islower():
        x["starts_mid"] = 1.0
        flags.append("starts mid-word")
    if len(words) > 30 or re.search(r"[a-z]{2}[.?!]\s+[A-Z][a-z]+\s+[a-z]", text):
        x["sentence"] = 1.0              # a sentence of the abstract or a notice, not a title
        flags.append("sentence")
    _author_block(c, x, ev, lines, after, size)
    sig = _significant(text)
    if file_words and sig:
        hit = sum(w in file_words for w in sig)
        if hit >= 2 and (hit / len(sig) >= 0.6 or hit >= 3 and hit / len(file_words) >= 0.6):
            x["file_name"] = hit / len(sig)
            ev.append("file name")
    nt = norm(text)
    if info_title and nt and len(words) >= 2 and (norm(info_title) == nt or (nt in norm(info_title)
                                                  and len(nt) > 0.6 * len(norm(info_title)))):
        x["pdf_metadata"] = 1.0
        ev.append("pdf metadata")
    if len(words) >= 2 and any(nt in norm(r) or (norm(r) in nt and len(norm(r)) > 0.6 * len(nt)) for r in repeats):
        x["running_head"] = 1.0
        ev.append("running head")
    x["n_lines"] = float(len(c.lines))
    x["log_words"] = math.log1p(len(words))
    x["all_caps"] = float(len(words) > 1 and bool(letters) and all(ch.isupper() for ch in letters))
    x["ends_open"] = float(bool(_CONNECTIVE.search(text.strip())))
    x["name_like"] = float(looks_like_name(text))
    x["institution"] = float(is_institution(text))
    x["address"] = float(is_address(text))
    x["scanned"] = float(scanned)
    c.evidence, c.flags = ev, flags
    return x


def _author_block(c: TitleChoice, x: dict[str, float], ev: list[str], lines: list[Line], after: list[Line],
                  size: float) -> None:
    """The author block right under the run (an affiliation or a line of smaller type may come between, never
    another line of title type), and names set above it."""
    for j, ln in enumerate(after[:3]):
        nxt = after[j + 1] if j + 1 < len(after) else None
        if "@" in ln.text or _names_line(ln, nxt):
            x["author_below"] = 1.0
            ev.append("author block below")
            break
        if ln.size >= size - 1 or j >= 1:
            break
    first = lines.index(c.lines[0]) if c.lines[0] in lines else 0
    before = [ln for ln in lines[max(0, first - 3):first] if ln.bbox[3] < c.lines[0].bbox[3] - 2]
    named = [ln for k, ln in enumerate(before) if k >= len(before) - 2
             and _names_line(ln, before[k + 1] if k + 1 < len(before) else c.lines[0])]
    if named and not is_banner(before[-1].text):
        x["author_above"] = 1.0
        ev.append("author block above")
        c.names_above = named


def find_title(blocks: list[Block], height: float, scanned: bool = False) -> list[Line]:
    """The lines of the title on one page ([] when there is none)."""
    best = choose_title(blocks, height, scanned=scanned)
    return best.lines if best else []


def title_candidates(blocks: list[Block], height: float, *, scanned: bool = False, file_name: str | None = None,
                     info_title: str = "", repeats: list[str] | tuple = ()
                     ) -> tuple[list[TitleChoice], dict[int, list[Line]]]:
    """The candidate runs of title lines of one page, each with its features (`TitleChoice.features`), evidence
    and flags; and the pieces of the lines glued together."""
    every = [ln for b in blocks if b.kind in ("text", "title", "heading") for ln in b.lines]
    raw = [ln for ln in every if ln.bbox[1] < 0.62 * height]
    if every:
        # A cover whose title is set low: lines below the top part in the page's largest type, twice its smallest
        # and larger than anything above them.
        texts = [ln for ln in every if len(ln.text.strip()) >= 3]
        small, largest = min((ln.size for ln in texts), default=0.0), max((ln.size for ln in texts), default=0.0)
        top_big = max((ln.size for ln in raw), default=0.0)
        raw += [ln for ln in texts if ln.bbox[1] >= 0.62 * height and ln.size >= largest - 0.5
                and ln.size >= max(2.0 * small, top_big + 2.0)]
    if not raw:
        return _head_choices([], repeats, height, scanned=scanned, file_name=file_name, info_title=info_title), {}
    glued, parts = _glue(raw)
    lines = sorted(glued, key=lambda ln: (ln.bbox[1], ln.bbox[0]))
    body = _body_size(lines)
    x0, x1 = min(ln.bbox[0] for ln in lines), max(ln.bbox[2] for ln in lines)
    stop = next((ln.bbox[1] for ln in lines if ln.bbox[0] < x0 + 0.4 * (x1 - x0)
                 and _BODY_START.match(ln.text.strip())), None)
    cands = [ln for ln in lines if not not_title(ln.text) and (stop is None or ln.bbox[1] < stop - 1)]
    if not cands:
        return _head_choices(lines, repeats, height, scanned=scanned, file_name=file_name,
                             info_title=info_title), parts
    ok = {id(ln) for ln in cands}
    big = max((ln.size for ln in cands if len(ln.text.strip()) >= 3), default=body)
    if scanned or big < body + 1.0:
        # Type of one size (a typewritten memo, an OCR'd scan): the first lines that are left.
        starts = cands[:4]
    else:
        starts = sorted((ln for ln in cands if ln.size >= body + 1.0), key=lambda ln: -ln.size)[:8]
    fw = _file_words(file_name)

    args = (lines, ok, body, big, height, stop, fw, info_title, repeats, scanned)
    choices = _scored(starts, *args)
    # A title set small: where no run in larger type is clean (all sentences, fragments, names), the first bold
    # lines in the body's type or a little larger, on a page whose body is not bold, start runs too.
    small = [ln for ln in cands if ln.bold and body - 0.1 <= ln.size < body + 1.0][:2] \
        if not scanned and big >= body + 1.0 and not all(ln.bold for ln in lines if abs(ln.size - body) < 0.3) else []
    if small and all(c.flags for c in choices):
        choices = _scored(starts + small, *args)
    ranks = {round(max(ln.size for ln in c.lines) * 2) / 2 for c in choices}
    if all(c.flags for c in choices):
        # No run of the page's own lines is clean (all sentences, fragments, names): the title may be the running
        # head set over the page, dropped from its lines with the running heads of the next pages.
        choices += [c for c in _head_choices(lines, repeats, height, scanned=scanned, file_name=file_name,
                                             info_title=info_title, ranks=len(ranks))
                    if all(normalize_title(c.text) != normalize_title(o.text) for o in choices)]
    # The largest type among the runs that are not an author line, a banner or a fragment.
    top = max((max(ln.size for ln in c.lines) for c in choices if not c.flags), default=big)
    for c in choices:
        if max(ln.size for ln in c.lines) >= top - 0.5 and not c.flags:
            c.evidence.insert(0, "largest type")
    return choices, parts


def _scored(starts: list[Line], lines: list[Line], ok: set[int], body: float, big: float, height: float,
            stop: float | None, fw: set[str], info_title: str, repeats: list[str] | tuple,
            scanned: bool) -> list[TitleChoice]:
    """The runs of title lines from these starts, with their features, evidence and flags."""
    runs: list[list[Line]] = []
    for st in starts:
        run = _extend(st, lines, ok, body, scanned)
        if run not in runs:
            runs.append(run)
    # A run inside a longer one is the same title cut short.
    runs = [r for r in runs if not any(r != o and all(any(x is y for y in o) for x in r) for o in runs)]
    choices = [TitleChoice(r, title_text(r)) for r in runs]
    top_y = min(c.lines[0].bbox[1] for c in choices)
    ranks = sorted({round(max(ln.size for ln in c.lines) * 2) / 2 for c in choices}, reverse=True)
    for c in choices:
        c.features = _features(c, lines, body, big, height, stop, fw, info_title, list(repeats), scanned)
        c.features["size_rank"] = float(min(4, ranks.index(round(max(ln.size for ln in c.lines) * 2) / 2)))
        c.features["first_run"] = float(c.lines[0].bbox[1] <= top_y + 0.5)
        c.hand = round(sum(HAND.get(f, 0.0) * v for f, v in c.features.items()), 3)
    # The names read as the author block above a run (itself neither names nor broken words) are an author
    # line, never a title of their own.
    for c in choices:
        for o in choices:
            if o is not c and o.names_above and not o.flags and all(any(ln is n for n in o.names_above)
                                                                    for ln in c.lines) \
                    and "author line" not in c.flags:
                c.features["author_line"] = 1.0
                c.flags.append("author line")
                c.hand = round(sum(HAND.get(f, 0.0) * v for f, v in c.features.items()), 3)
    return choices


def _body_size(lines: list[Line]) -> float:
    """The type size of most of the characters of these lines."""
    sizes = {ln.size for ln in lines}
    return max(sizes, key=lambda s: sum(len(ln.text) for ln in lines if ln.size == s))


def _head_choices(lines: list[Line], repeats: list[str] | tuple, height: float, *, scanned: bool = False,
                  file_name: str | None = None, info_title: str = "", ranks: int = 0) -> list[TitleChoice]:
    """The running heads of the next pages that could be a title (not a number, a journal or volume line, a
    banner, a column's name, names or an author line), each as a candidate line set over the page, with its
    features (in the body's type, the topmost run)."""
    out = []
    size = _body_size(lines) if lines else 10.0
    big = max((ln.size for ln in lines), default=size)
    for r in repeats:
        t = re.sub(r"\s+", " ", r).strip()
        words = norm(t).split()
        if len(t) < 3 or len(t) > 200 or not re.search(r"[A-Za-z]{3}", t) or not_title(t) or is_banner(t) \
                or is_column(t) or is_author_line(t) or looks_like_name(t) or is_institution(t) \
                or re.search(r"\bet\s+al\b|\d{2,}", t) or len(words) > 20:
            continue
        ln = Line([Span(t, size, "", 0, (0.0, 0.0, 1.0, size))], (0.0, 0.0, 1.0, size))
        c = TitleChoice([ln], title_text([ln]))
        c.features = _features(c, lines, size, big, height, None, _file_words(file_name), info_title,
                               list(repeats), scanned)
        c.features["size_rank"] = float(min(4, ranks))
        c.features["first_run"] = 1.0
        c.hand = round(sum(HAND.get(f, 0.0) * v for f, v in c.features.items()), 3)
        if not any(f in HARD for f in c.flags):      # a banner ("CEMENT" alone) is never offered from the heads
            out.append(c)
    return out


def choose_title(blocks: list[Block], height: float, *, scanned: bool = False, file_name: str | None = None,
                 info_title: str = "", repeats: list[str] | tuple = (), model: dict | None = None) -> TitleChoice | None:
    """The title of one page, chosen among the runs of large lines in its top part by the learned model over
    the page's features (`title_candidates`: type size and weight, position, dictionary words, line shape, an
    author block under or over it, the file name, the document's metadata title, the running heads of the
    next pages). An author line or a banner is chosen only when every run is one. The confidence is `high`
    when the model's probability is at least its threshold (chosen by cross-validation on the tune half) and
    the run has no flag (an author line, a banner, one word, broken words, a sentence)."""
    choices, parts = title_candidates(blocks, height, scanned=scanned, file_name=file_name, info_title=info_title,
                                      repeats=repeats)
    if not choices:
        return None
    m = model or title_model()
    for c in choices:
        c.score = round(model_score(c.features, m), 3)
    eligible = [c for c in choices if not any(f in HARD for f in c.flags)] or choices
    best = max(eligible, key=lambda c: c.score)
    p = 1.0 / (1.0 + math.exp(-max(-50.0, min(50.0, best.score))))
    best.probability = round(p, 3)
    if not best.flags and p >= m["threshold"]:
        best.confidence = "high"
    best.evidence.append(f"model p={p:.2f}")
    if scanned:
        best.evidence.append("OCR")
    best.lines = [p for ln in best.lines for p in parts.get(id(ln), [ln])]
    return best


def _segment(run: str) -> list[str]:
    """Letters run together ("DataCompression", "DATACOMPRESSION") split into words: at case changes, else
    into the fewest dictionary words."""
    pieces = re.findall(r"[A-Z][a-z]+|[A-Z]+(?![a-z])|[a-z]+|\d+|[^A-Za-z\d]", run)
    vocab = vocabulary()
    if len(pieces) > 1 and all(p.lower() in vocab or not p.isalpha() for p in pieces):
        return pieces
    low = run.lower()
    n = len(low)
    best: list[tuple[float, int]] = [(0.0, 0)] + [(1e9, 0)] * n
    for j in range(1, n + 1):
        for i in range(max(0, j - 24), j):
            w = low[i:j]
            cost = 1.0 if (w in vocab and (len(w) > 1 or w in "ai")) or w.isdigit() else 5.0 * len(w)
            if best[i][0] + cost < best[j][0]:
                best[j] = (best[i][0] + cost, i)
    out, j = [], n
    while j > 0:
        i = best[j][1]
        out.append(run[i:j])
        j = i
    return out[::-1]


def unspace(text: str) -> str:
    """A letter-spaced line ("D a t a C o m p r e s s i o n", each glyph its own word) made words again;
    a gap wider than one space (two or more spaces) is kept as a word break."""
    toks = text.split()
    if len(toks) < 4 or sum(len(t) == 1 for t in toks) < 0.7 * len(toks):
        return text
    words = []
    for group in re.split(r"\s{2,}", text.strip()):
        g = group.split()
        if len(g) >= 3 and sum(len(t) == 1 for t in g) >= 0.7 * len(g):
            words.extend(_segment("".join(g)))
        else:
            words.extend(g)
    return " ".join(words)


def title_text(lines: list[Line]) -> str:
    text = ""
    for ln in lines:
        t = ln.text.strip()
        if text.endswith("-") and len(text) > 1 and text[-2].isalpha() and t[:1].isupper():
            text += t            # "The UNIX Time-" + "Sharing System"
        elif text.endswith("-") and len(text) > 1 and text[-2].isalpha() and t[:1].islower():
            text = text[:-1] + t
        else:
            text = f"{text} {t}" if text else t
    text = _MEMO_PREFIX.sub("", unspace(text))
    text = re.sub(r"\s*\(\s*(?:1[5-9]|20)\d\d\s*\)\s*$", "", text)    # the year set after it is its date, not its title
    text = re.sub(r"\s*[∗*†‡§¶]+\s*$", "", re.sub(r"\s+", " ", text)).strip()
    text = re.sub(r"(\w)[∗*†‡§¶]\d*$", r"\1", text)
    return text.rstrip(" ,;")


