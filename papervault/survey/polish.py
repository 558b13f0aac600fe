"""Stage 7 of a survey: check the assembled draft, fix what is clearly wrong, flag the rest, never silently.

Checks: every `[@id]` names a vault paper; every cited claim is supported by a passage of the paper it cites
and attributed to the right paper (a passage that describes other work, see `papervault.survey.attribution`, is
that paper's remark, never its claim); every figure link points at a file in the vault; every formula has
balanced `$`/`$$` and braces; no paragraph or quotation appears twice.

Whether a claim is supported is the judge's call (`papervault.survey.support`): by default the semantic judge,
which accepts a faithful paraphrase. Polish never puts other words in a writer's mouth: a claim that fails is
flagged (`**(unverified)**` after its citation, and a line in the report with the closest passage), except in two
cases where the fix is clearly better and loses nothing — a quotation found word for word in another selected
paper is re-cited to that paper, and a bare quotation of a description of other work ("**X**: “…” [@x]") is
introduced as the paper's remark ("**X**, describing other work: “…” [@x]"). A claim in the form the draft prompt
asks for, "[@about] … as described by [@source, p. N]", is a remark resting on the source's passage.
Every change and every flag is listed in the report.
"""

from __future__ import annotations

import re
from dataclasses import asdict, dataclass, field
from typing import Any, Callable

from papervault.pages import printed_for
from papervault.survey.attribution import reported
from papervault.survey.evidence import Passage, support_score, tokens
from papervault.survey.support import (MISATTRIBUTED, QUOTE_SCORE, SUPPORTED, THRESHOLD, Claim, LexicalJudge,
                                       Verdict)

# The semantic judge's threshold (cosine similarity of claim and passage, chosen with bench/polish_judge.py on
# labelled claim/passage pairs; see docs/survey.md "Polish"). `--threshold` changes it.
SUPPORT_THRESHOLD = THRESHOLD
# The word-overlap judge's threshold, used when polish is handed a `support` function and no judge. Measured with
# bench/survey.py --only support on the 7 related shared-corpus papers (280 sentences each way): quotations
# score 1.00 against their own paper; the same sentences cited to another paper score median 0.08, p95 0.17.
LEXICAL_THRESHOLD = 0.45
# A claim with fewer content words than this names a paper ("Lamport et al. [@x]") rather than asserting.
MIN_CLAIM_WORDS = 5
FLAG = "**(unverified)**"

CITE_GROUP = re.compile(r"\[(?P<body>[^\[\]]*?@[A-Za-z0-9][^\[\]]*?)\](?!\()")
CITE_KEY = re.compile(r"(?<![\w.])(-?)@(?P<key>[A-Za-z0-9][A-Za-z0-9_.:-]*[A-Za-z0-9]|[A-Za-z0-9])")
PAGE_LINK = re.compile(r"\s*\((?:\[[^\]]*\]\([^)]*\))\)")
LINK = re.compile(r"(?<!!)\[([^\]]*)\]\([^)]*\)")
IMAGE = re.compile(r"!\[(?P<alt>[^\]]*)\]\((?P<src>[^)\s]+)(?:\s+\"[^\"]*\")?\)")
QUOTED = re.compile(r"[“\"](?P<q>[^”\"]{20,})[”\"]")

Support = Callable[[str, str], "Passage | None"]


@dataclass
class Change:
    kind: str            # "citation" | "support" | "attribution" | "figure" | "latex" | "duplicate"
    line: int
    before: str
    after: str
    reason: str


@dataclass
class Flag:
    kind: str
    line: int
    text: str
    reason: str


@dataclass
class PolishResult:
    markdown: str
    changes: list[Change] = field(default_factory=list)
    flags: list[Flag] = field(default_factory=list)
    claims: int = 0
    supported: int = 0
    attributed: int = 0      # claims resting on a description of other work, shown as the citing paper's remark
    scores: list[dict[str, Any]] = field(default_factory=list)

    def as_dict(self) -> dict[str, Any]:
        return asdict(self)


def cite_keys(text: str) -> list[str]:
    """The keys of every Pandoc citation in `text`, in order of first use."""
    out = []
    for g in CITE_GROUP.finditer(text):
        out += [m.group("key") for m in CITE_KEY.finditer(g.group("body"))]
    return list(dict.fromkeys(out))


def claim_text(unit: str) -> str:
    """What a cited piece of text asserts: the quotation when it quotes, else its words without markup."""
    q = QUOTED.findall(unit)
    if q:
        return " ".join(q)
    text = PAGE_LINK.sub("", unit)
    text = LINK.sub(r"\1", text)
    text = re.sub(r"[*_`>#]|^\s*[-+]\s+", " ", text)
    return " ".join(text.split())


def _units(para: str) -> list[tuple[str, re.Match | None]]:
    """Split a paragraph into (text, citation group) pieces: each piece's text is what that group cites."""
    out, pos = [], 0
    for g in CITE_GROUP.finditer(para):
        out.append((para[pos:g.start()], g))
        pos = g.end()
    out.append((para[pos:], None))
    return out


def _block_kind(line: str) -> str:
    s = line.strip()
    if not s:
        return "blank"
    if s.startswith("#"):
        return "heading"
    if s.startswith("|"):
        return "table"
    if s.startswith("<!--"):
        return "comment"
    return "text"


# --- individual checks -----------------------------------------------------------------------------

def check_citations(line: str, n: int, known: set[str], res: PolishResult) -> str:
    """Drop citations of keys that are not vault papers; a group left empty is removed."""
    def fix_group(g: re.Match) -> str:
        body = g.group("body")
        bad = [m.group("key") for m in CITE_KEY.finditer(body) if m.group("key") not in known]
        if not bad:
            return g.group(0)
        parts = [p for p in body.split(";") if not any(f"@{b}" in p for b in bad)]
        new = f"[{';'.join(parts).strip()}]" if parts else ""
        res.changes.append(Change("citation", n, g.group(0), new, f"no paper {', '.join(bad)} in the vault"))
        return new

    return CITE_GROUP.sub(fix_group, line)


def _clip(text: str, limit: int = 280) -> str:
    """`text` cut short for the report without cutting a citation in half (a cut key would not resolve)."""
    text = text.strip()
    if len(text) <= limit:
        return text
    cut = text[:limit]
    i = cut.rfind("[@")
    if i != -1 and "]" not in cut[i:]:
        cut = cut[:i]
    return cut.rstrip() + " …"


_BULLET = re.compile(r"^\s*(?:[-+*]\s+)?")
_LEAD = re.compile(r"^\s*(?:[-+*]\s+)?(?:\*\*(?P<who>[^*]+)\*\*\s*:?\s*)?")
# A piece that is only a quotation, after an optional bullet and a bold name: "- **Cidon et al. (2015)**: “…” "
_ONLY_QUOTE = re.compile(r"^(?P<lead>\s*(?:[-+*]\s+)?(?:\*\*(?P<who>[^*]+)\*\*\s*:?\s*)?)[“\"](?P<q>[^”\"]+)[”\"]\s*$")
_PAGE = re.compile(r"\bpp?\.\s*(?P<p>[A-Za-z]*\d+)")
# The words that hand a claim to the citation after them: "…, as described by [@source, p. 9]"
_REPORT_TAIL = re.compile(r"[,;]?\s*(?:(?:as )?(?:described|noted|stated|reported|summari[sz]ed|put) by|"
                          r"according to|in the words of)\s*(?:[^\s\[]+\s*){0,6}$", re.I)


@dataclass
class _Unit:
    """A cited claim of the draft: where it is (line, piece) and what the judge is asked."""
    line: int            # index into the output lines
    n: int               # line number in the draft
    piece: int           # index of the piece in the line's pieces
    claim: Claim


def _last_sentence(text: str) -> str:
    """The sentence a citation at the end of `text` belongs to (the text before it in the same line may hold
    earlier sentences, cited or not)."""
    parts = re.split(r"(?<=[.!?])[\s”\"]+(?=[A-Z*“\"(\[])", text.strip())
    tail = parts[-1] if parts else text
    return tail if len(tokens(tail)) >= MIN_CLAIM_WORDS or len(parts) == 1 else " ".join(parts[-2:])


def _claims_of(pieces: list[tuple[str, re.Match | None]]) -> list[tuple[int, Claim]]:
    """The cited claims of a line's pieces: (piece index, claim). A claim followed by a short reporting phrase
    and a citation ("X did Y [@about], as described by [@source, p. 9]") rests on both papers and is a remark;
    so is a piece whose own words present it as one ("[@about] did Y, as described by [@source]")."""
    out = []
    skip = set()
    for i, (text, g) in enumerate(pieces):
        if g is None or i in skip:
            continue
        keys = [m.group("key") for m in CITE_KEY.finditer(g.group("body"))]
        if not keys:
            continue
        page = _PAGE.search(g.group("body"))
        claim = claim_text(text) if QUOTED.search(text) else claim_text(_last_sentence(text))
        is_remark = reported(text)
        nxt = pieces[i + 1] if i + 1 < len(pieces) else None
        if nxt and nxt[1] is not None and reported(nxt[0]) and len(tokens(claim_text(nxt[0]))) < MIN_CLAIM_WORDS:
            more = [m.group("key") for m in CITE_KEY.finditer(nxt[1].group("body"))]
            keys = list(dict.fromkeys(more + keys))       # the source's passage is the evidence, checked first
            page = _PAGE.search(nxt[1].group("body"))
            is_remark = True
            skip.add(i + 1)
        claim = _REPORT_TAIL.sub("", claim).strip()
        if len(tokens(claim)) < MIN_CLAIM_WORDS:
            continue
        out.append((i, Claim(claim, keys, page.group("p") if page else None, is_remark)))
    return out


def _flagged(text: str) -> str:
    """`text` with the flag after it, separated by one space (never glued to the words before it)."""
    return text.rstrip() + " " + FLAG if not text.rstrip().endswith(FLAG) else text


def _misattributed(text: str, group: str, v: Verdict, n: int, res: PolishResult) -> str:
    """A claim resting on the cited paper's description of other work. When the piece is only a quotation of
    that passage (after a bullet and a bold name), it is introduced as the paper's remark — nothing else of the
    text changes; otherwise it is flagged for a person to rewrite (a rewrite would lose what the writer said)."""
    m = _ONLY_QUOTE.match(text)
    if m and v.passage is not None and support_score(m.group("q"), v.passage.text) >= QUOTE_SCORE:
        lead = m.group("lead")
        who = m.group("who")
        bullet = _BULLET.match(lead).group(0)
        subject = f"**{who}**" if who else f"[@{v.key}]"
        new = f"{bullet}{subject}, describing other work: “{m.group('q')}” "
        res.changes.append(Change("attribution", n, _clip(f"{text.strip()} {group}"), _clip(f"{new}{group}"),
                                  f"the {v.key} passage describes other work ({v.passage.other}), not its own claim"))
        res.attributed += 1
        res.supported += 1
        return new + group
    res.flags.append(Flag("attribution", n, _clip(claim_text(text), 300),
                          f"{v.why}; write it as that paper's remark (\"as described by …\") or cite the work "
                          f"it describes"))
    return _flagged(text + group)


def _recite(claim: Claim, keys_in_line: set[str], selected: list[str], support: Support | None) -> Passage | None:
    """Another selected paper that states a quoted claim word for word, as its own claim; None otherwise."""
    if support is None or not QUOTED.search(claim.text) and len(tokens(claim.text)) < 8:
        return None
    found = None
    for k in selected:
        if k in claim.keys or k in keys_in_line:
            continue
        p = support(claim.text, k)
        if p is not None and p.score >= QUOTE_SCORE and not p.other and (found is None or p.score > found.score):
            found = p
    return found


def check_support(lines: list[str], line_nos: list[int], judge, selected: list[str], res: PolishResult,
                  support: Support | None = None) -> list[str]:
    """Judge every cited claim of `lines` in one batch and flag what fails. A claim is never replaced by other
    words: a quotation found word for word in another selected paper is re-cited to it, a bare quotation of a
    description of other work is introduced as the paper's remark; everything else that fails is flagged."""
    pieces = [_units(line) if _block_kind(line) == "text" else [] for line in lines]
    units: list[_Unit] = []
    for li, ps in enumerate(pieces):
        for pi, claim in _claims_of(ps):
            units.append(_Unit(li, line_nos[li], pi, claim))
    verdicts = judge.judge([u.claim for u in units]) if units else []
    new_text: dict[tuple[int, int], str] = {}
    for u, v in zip(units, verdicts):
        res.claims += 1
        text, g = pieces[u.line][u.piece]
        group = g.group(0)
        res.scores.append({"line": u.n, "claim": u.claim.text[:200], "verdict": v.label, "scores": v.scores})
        if v.label == SUPPORTED:
            res.supported += 1
            if u.claim.reported:           # a remark of the cited paper, presented as one
                res.attributed += 1
            continue
        if v.label == MISATTRIBUTED:
            new_text[(u.line, u.piece)] = _misattributed(text, group, v, u.n, res)
            continue
        keys_in_line = set(cite_keys(lines[u.line]))
        other = _recite(u.claim, keys_in_line, selected, support)
        if other is not None:
            loc = f", p. {printed_for(other.paper_id, other.page)}" if other.page else ""
            new = f"[@{other.paper_id}{loc}]"
            res.changes.append(Change("support", u.n, group, new,
                                      f"re-cited: {other.paper_id} states it word for word, "
                                      f"{', '.join(u.claim.keys)} does not"))
            res.supported += 1
            new_text[(u.line, u.piece)] = text + new
            continue
        hint = ""
        if v.passage is not None and v.score > 0:
            loc = f" p. {printed_for(v.key, v.passage.page)}" if v.passage.page else ""
            hint = f"; closest passage ({v.key}{loc}, {v.score:.2f}): “{_clip(v.passage.text, 160)}”"
        res.flags.append(Flag("support", u.n, _clip(u.claim.text, 300), f"{v.why}{hint}"))
        new_text[(u.line, u.piece)] = _flagged(text + group)
    out = []
    for li, line in enumerate(lines):
        if not any(k[0] == li for k in new_text):
            out.append(line)
            continue
        out.append("".join(new_text.get((li, pi), text + (g.group(0) if g else ""))
                           for pi, (text, g) in enumerate(pieces[li])))
    return out


def check_figures(line: str, n: int, exists: Callable[[str], bool], res: PolishResult) -> str:
    """Remove image links whose file is not in the vault."""
    def fix(m: re.Match) -> str:
        if exists(m.group("src")):
            return m.group(0)
        res.changes.append(Change("figure", n, m.group(0), "", f"figure {m.group('src')} does not exist"))
        return ""

    return IMAGE.sub(fix, line)


def _braces_balanced(expr: str) -> bool:
    depth = 0
    i = 0
    while i < len(expr):
        ch = expr[i]
        if ch == "\\":
            i += 2
            continue
        if ch == "{":
            depth += 1
        elif ch == "}":
            depth -= 1
            if depth < 0:
                return False
        i += 1
    return depth == 0 and expr.count("\\left") == expr.count("\\right")


def check_math(para: str, n: int, res: PolishResult) -> str:
    """Balanced `$$`, `$` and braces in a paragraph; an unpaired `$` is escaped, bad braces are flagged."""
    if "$" not in para:
        return para
    if para.count("$$") % 2:
        i = para.rfind("$$")
        fixed = para[:i] + para[i + 2:]
        res.changes.append(Change("latex", n, "$$", "", "unpaired $$ removed"))
        para = fixed
    for m in re.finditer(r"\$\$(.+?)\$\$", para, re.S):
        if not _braces_balanced(m.group(1)):
            res.flags.append(Flag("latex", n, m.group(0)[:200], "unbalanced braces or \\left/\\right in display math"))
    inline = re.sub(r"\$\$(.+?)\$\$", "", para, flags=re.S)
    singles = [m.start() for m in re.finditer(r"(?<![\\$])\$(?!\$)", inline)]
    if len(singles) % 2:
        # the unpaired dollar is most likely a currency sign ("$5", which Pandoc never reads as math either),
        # else the last one, a broken formula: escape it
        where = [m.start() for m in re.finditer(r"(?<![\\$])\$(?!\$)", para)]
        money = [i for i in where if re.match(r"\$\d", para[i:])]
        last = money[0] if money else where[-1]
        res.changes.append(Change("latex", n, para[max(0, last - 20):last + 20], "\\$", "unpaired $ escaped"))
        para = para[:last] + "\\$" + para[last + 1:]
    for m in re.finditer(r"(?<![\\$])\$(?!\$)(.+?)(?<![\\$])\$(?!\$)", re.sub(r"\$\$(.+?)\$\$", "", para, flags=re.S)):
        if not _braces_balanced(m.group(1)):
            res.flags.append(Flag("latex", n, m.group(0)[:200], "unbalanced braces in inline math"))
    return para


def _norm(text: str) -> str:
    return " ".join(tokens(claim_text(CITE_GROUP.sub("", text))))


# --- the whole document ----------------------------------------------------------------------------

def polish(markdown: str, *, known: set[str], selected: list[str], figure_exists: Callable[[str], bool],
           support: Support | None = None, judge=None, threshold: float | None = None) -> PolishResult:
    """Check and fix a survey's Markdown body (no frontmatter); returns the new text and what changed.

    `judge` (`papervault.survey.support.SemanticJudge`) decides whether each cited claim is supported;
    without one, the word-overlap judge on `support` (the best passage of a paper for a claim) does, at
    `threshold` (LEXICAL_THRESHOLD by default). `support` also finds the paper a misquoted quotation is from."""
    if judge is None:
        judge = LexicalJudge(support or (lambda claim, pid: None),
                             LEXICAL_THRESHOLD if threshold is None else threshold)
    res = PolishResult(markdown="")
    seen_paras: set[str] = set()
    seen_quotes: set[str] = set()
    out: list[str] = []
    line_nos: list[int] = []
    in_fence = False
    in_display = False
    for n, line in enumerate(markdown.splitlines(), 1):
        if line.strip().startswith("```"):
            in_fence = not in_fence
            out.append(line)
            line_nos.append(n)
            continue
        if in_fence:
            out.append(line)
            line_nos.append(n)
            continue
        if line.strip() == "$$":
            in_display = not in_display
            out.append(line)
            line_nos.append(n)
            continue
        if in_display:
            if not _braces_balanced(line):
                res.flags.append(Flag("latex", n, line[:200], "unbalanced braces in display math"))
            out.append(line)
            line_nos.append(n)
            continue
        kind = _block_kind(line)
        if kind in ("blank", "heading", "comment"):
            out.append(line)
            line_nos.append(n)
            continue
        line = check_citations(line, n, known, res)
        line = check_figures(line, n, figure_exists, res)
        if kind == "table":
            out.append(line)
            line_nos.append(n)
            continue
        line = check_math(line, n, res)
        norm = _norm(line)
        quotes = [" ".join(tokens(q)) for q in QUOTED.findall(line)]
        if norm and len(norm.split()) >= MIN_CLAIM_WORDS and (norm in seen_paras or (quotes and all(q in seen_quotes for q in quotes))):
            res.changes.append(Change("duplicate", n, _clip(line, 200), "", "the same content appears earlier"))
            continue
        seen_paras.add(norm)
        seen_quotes.update(quotes)
        out.append(line)
        line_nos.append(n)
    fenced = _fenced(out)
    checked = check_support([("" if f else line) for line, f in zip(out, fenced)], line_nos, judge, selected, res,
                            support)
    out = [line if f else c for line, c, f in zip(out, checked, fenced)]
    text = "\n".join(out)
    text = re.sub(r"\n{3,}", "\n\n", text).strip() + "\n"
    res.markdown = text
    return res


def _fenced(lines: list[str]) -> list[bool]:
    """Which lines are code fences or display math (never claims)."""
    out, fence, display = [], False, False
    for line in lines:
        s = line.strip()
        if s.startswith("```"):
            fence = not fence
            out.append(True)
        elif fence:
            out.append(True)
        elif s == "$$":
            display = not display
            out.append(True)
        else:
            out.append(display)
    return out
