"""`locate`: where a quoted passage occurs — the paper, the page and the page anchor — for the CLI and MCP.

The quote and each candidate `paper.md` are normalised alike (Unicode compatibility forms, typographic
quotes and dashes, words hyphenated across a line break joined, Markdown emphasis and tags dropped, case and
whitespace folded). An exact normalised match wins; otherwise the best window of as many words is scored
(shared words first, then rapidfuzz's Indel similarity of the characters), so a quote copied with a typo, a
missing word or a different hyphen still lands on its page. In a vault of more than SCAN_ALL papers,
candidates come first from the index's full-text search (no model is loaded for it), then the remaining
papers are read too, so an unindexed paper is found as well; a smaller vault is simply read whole.
"""

from __future__ import annotations

import re
import unicodedata
from collections import Counter
from dataclasses import asdict, dataclass, field
from typing import Any

from rapidfuzz.distance import Indel

from papervault.app.ids import resolve_id
from papervault.errors import InputError, PapervaultError
from papervault.parse.firstpass import behind, pages_words, unfinished, waiting as waiting_ids
from papervault.vault import paper as paper_md
from papervault.workspace import Workspace

MAX_QUOTE = 2000          # characters of a quote
MIN_WORDS = 3             # a shorter "quote" matches everywhere
THRESHOLD = 0.82          # the similarity a near-exact match must reach
SCAN_ALL = 100            # up to this many papers, every paper.md is read without asking the index

_QUOTES = str.maketrans({"\u2018": "'", "\u2019": "'", "\u201a": "'", "\u201b": "'", "\u2032": "'",
                         "\u201c": '"', "\u201d": '"', "\u201e": '"', "\u201f": '"', "\u00ab": '"', "\u00bb": '"',
                         "\u2010": "-", "\u2011": "-", "\u2012": "-", "\u2013": "-", "\u2014": "-", "\u2212": "-",
                         "\u00ad": None, "\u200b": None})
_TAG = re.compile(r"<[^>\n]{0,200}>")
_WORD = re.compile(r"\w+(?:['-]\w+)*")
_TRAIL = re.compile(r"[%)\]’”'\".,;:!?]*")
_BREAK = re.compile(r"-[ \t]*\r?\n[ \t]*")


@dataclass
class Located:
    paper_id: str
    title: str
    page: int | None
    anchor: str            # papers/<id>/paper.md#page-N
    score: float           # 1.0 for an exact (normalised) match
    exact: bool
    text: str              # the passage as paper.md has it
    stage: str = "complete"     # "text layer": the paper is read by its first pass, its full parse still to come
    pending_pages: list[int] = field(default_factory=list)   # its scanned pages, not OCR'd yet (not searched)

    def as_dict(self) -> dict[str, Any]:
        return asdict(self)


def _tokens(original: str) -> list[tuple[str, int, int]]:
    """The words of a paper.md with offsets into it; tags blanked, words split by a line-end hyphen joined."""
    blanked = _TAG.sub(lambda m: " " * len(m.group(0)), original)
    # compatibility forms that stay one character (full-width letters, ...) fold in place: offsets stay valid
    blanked = "".join(n if len(n := unicodedata.normalize("NFKC", c)) == 1 else c for c in blanked)
    blanked = blanked.translate({k: (v if v is not None else " ") for k, v in _QUOTES.items()})
    words = [(m.group(0).lower(), m.start(), m.end()) for m in _WORD.finditer(blanked)]
    out: list[tuple[str, int, int]] = []
    i = 0
    while i < len(words):
        w, s, e = words[i]
        # "repli-\ncation" -> "replication": a hyphen at a line end joins the next word
        if i + 1 < len(words) and _BREAK.fullmatch(blanked[e:words[i + 1][1]]):
            nw, _, ne = words[i + 1]
            out.append((w + nw, s, ne))
            i += 2
            continue
        out.append((w, s, e))
        i += 1
    return out


def normalise(text: str) -> list[str]:
    """The words of `text` as locate compares them."""
    return [w for w, _, _ in _tokens(text)]


def _best_window(quote: list[str], words: list[str]) -> tuple[int, int, float, bool]:
    """(start, length, score, exact) of the window of `words` most like `quote`."""
    n = len(quote)
    if n == 0 or not words:
        return 0, 0, 0.0, False
    # exact: a run of the same words
    first = quote[0]
    for i, w in enumerate(words):
        if w == first and words[i:i + n] == quote:
            return i, n, 1.0, True
    # near-exact: windows sharing the most words, refined by the characters' Indel similarity (rapidfuzz:
    # 2 * LCS / total length, as difflib's ratio but on the longest common subsequence, ~8x faster)
    want = Counter(quote)
    have = Counter(words[:n])
    shared = sum((want & have).values())
    candidates = [(shared, 0)]
    for i in range(1, len(words) - n + 1):
        out, inc = words[i - 1], words[i + n - 1]
        if have[out] <= want[out]:
            shared -= 1
        have[out] -= 1
        have[inc] += 1
        if have[inc] <= want[inc]:
            shared += 1
        candidates.append((shared, i))
    candidates.sort(key=lambda c: -c[0])
    qtext = " ".join(quote)
    best = (0, 0, 0.0, False)
    for shared, i in candidates[:8]:
        if shared < 0.5 * n:
            break
        for length in range(max(1, n - 2), n + 3):
            for start in (i - 1, i, i + 1):
                if start < 0 or start + length > len(words):
                    continue
                score = Indel.normalized_similarity(qtext, " ".join(words[start:start + length]))
                if score > best[2]:
                    best = (start, length, score, False)
    return best


def _candidates(ws: Workspace, quote: str, limit: int) -> list[str]:
    """Paper ids whose chunks the full-text index ranks highest for the quote (no embedding model needed)."""
    try:
        # deferred: pyarrow loads only for a large vault; a small one is read whole, without the index
        from papervault.index.search import SLIM_COLUMNS, _fts
        from papervault.index.store import CHUNKS, open_db, table_names

        db = open_db(ws)
        if CHUNKS not in table_names(db):
            return []
        rows = _fts(db.open_table(CHUNKS), quote, None, limit, SLIM_COLUMNS)
    except PapervaultError:
        return []
    except Exception:  # noqa: BLE001 - an unreadable index only loses the shortcut: every paper is read below
        return []
    return list(dict.fromkeys(str(r.get("paper_id")) for r in rows if r.get("paper_id")))


def locate(ws: Workspace, quote: str, *, limit: int = 5, paper: str | None = None) -> list[Located]:
    """Where `quote` occurs: the best match per paper (exact first, then by similarity), at most `limit`."""
    ws.require()
    quote = (quote or "").strip()
    if len(quote) > MAX_QUOTE:
        raise InputError(f"the quote is {len(quote)} characters long", fix=f"quote at most {MAX_QUOTE} characters")
    qwords = normalise(quote)
    if len(qwords) < MIN_WORDS:
        raise InputError("the quote is too short to locate", fix=f"quote at least {MIN_WORDS} words of the passage")
    vault = ws.vault
    ids = vault.paper_ids()
    if paper is not None:
        paper = resolve_id(ws, paper).id      # an unknown id is a NotFoundError naming it; a former id is followed
        order = [paper]
    else:
        known = set(ids)
        # a small vault is read whole (faster than loading LanceDB); a large one is read in the order the
        # full-text index ranks it
        first = [pid for pid in _candidates(ws, quote, 50) if pid in known] if len(ids) > SCAN_ALL else []
        order = first + [pid for pid in ids if pid not in set(first)]
    found: list[Located] = []
    shortlist = len(order) if paper is not None else len(first)
    for n, pid in enumerate(order):
        if n == shortlist and any(f.exact for f in found):
            break       # the index's candidates hold the passage itself: the other papers need not be read
        try:
            text = vault.read_fulltext(pid)
        except PapervaultError:
            continue
        if not text:
            continue
        toks = _tokens(text)
        start, length, score, exact = _best_window(qwords, [w for w, _, _ in toks])
        if score < THRESHOLD or not length:
            continue
        s, e = toks[start][1], toks[start + length - 1][2]
        e += len(_TRAIL.match(text, e).group(0))     # "69%", "(2019)." : the passage's closing marks
        page = paper_md.read(text).page_at(s)
        try:
            title = vault.read_note(pid)[0].title or pid
        except PapervaultError:
            title = pid
        found.append(Located(paper_id=pid, title=title, page=page, anchor=paper_md.page_link(pid, page), score=round(score, 3),
                             exact=exact, text=" ".join(text[s:e].split())))
        if exact and paper is None and len(found) >= limit:
            break
    found.sort(key=lambda f: (not f.exact, -f.score))
    found = found[:limit]
    waiting = unfinished(ws, [f.paper_id for f in found])
    for f in found:
        if f.paper_id in waiting:
            f.stage, f.pending_pages = "text layer", waiting[f.paper_id]["pending_pages"]
    return found


def not_yet_read(ws: Workspace, paper: str | None = None) -> dict[str, Any] | None:
    """When a quote is not found: the papers (`paper` only, when given) still read by their first pass, whose
    scanned pages have no text until their OCR (a quote there cannot be found yet), with what to do; else None."""
    ids = [paper] if paper is not None else waiting_ids(ws)
    got = unfinished(ws, ids)
    if not got:
        return None
    scans = {pid: info["pending_pages"] for pid, info in got.items() if info["pending_pages"]}
    said = "; ".join(f"{pid}: {pages_words(pages)}" for pid, pages in list(scans.items())[:5])
    return {"papers": [{"id": pid, "pending_pages": info["pending_pages"]} for pid, info in got.items()],
            "note": (f"{len(got)} paper{'s are' if len(got) != 1 else ' is'} read by the text layer only"
                     + (f"; scanned pages wait for OCR and are not searched yet ({said})" if scans else "")
                     + f"; {behind(ws)}")}
