"""Who a survey sentence speaks for, and how a description of other work is cited.

`papervault.agents.cited_work` decides whether a sentence of a paper describes other work (related-work
sections, citation markers, "X et al.", a cited system's name as subject). Quoting such a sentence as the citing
paper's own claim is unfaithful even when the quotation is verbatim. The survey stages use `own_claim` to keep
these sentences out of a paper's own claims, `about` to find the vault paper a description is about (through the
paper's reference list, an author name or a system name), and `remark` to cite that paper with the citing paper
as the source of the remark.
"""

from __future__ import annotations

import re

from papervault.agents.cited_work import ET_AL, marker_numbers, other_work, reference_entries
from papervault.parse.text import dehyphen
from papervault.survey.papers import cite
from papervault.ids import last_name, normalize_title
from papervault.survey.evidence import paper_sentences, quotable, rank_sentences


# --- which vault paper a description is about -------------------------------------------------------

def system_name(title: str) -> str:
    """The name a paper gives its system ("Megastore: ..." -> "Megastore"); "" when the title has none."""
    head = title.split(":")[0].strip()
    if ":" in title and 2 < len(head) <= 24 and len(head.split()) <= 2 and head[0].isupper():
        return head
    return ""


def about(text: str, citing, others) -> list[str]:
    """The ids of the papers in `others` (SurveyPapers, not `citing`) that a sentence of `citing` describes:
    through the reference entries its markers point at (matched by DOI or title), an author named "X et al."
    (with the year when given), or the system name of the other paper's title."""
    found: list[str] = []
    entries = reference_entries(citing.fulltext)
    cited_refs = [entries[n] for n in marker_numbers(text) if n in entries]
    norm_refs = [" " + normalize_title(e) + " " for e in cited_refs]
    named = [(m.group(1), m.group(2)) for m in ET_AL.finditer(text)]
    flat = dehyphen(text)
    for o in others:
        if o.id == citing.id:
            continue
        hit = False
        title = normalize_title(o.title)
        if o.doi and any(o.doi.lower() in e.lower() for e in cited_refs):
            hit = True
        elif len(title.split()) >= 3 and any(f" {title} " in r for r in norm_refs):
            hit = True
        elif o.authors and any(n == last_name(o.authors[0]) and (not y or not o.year or int(y) == o.year)
                               for n, y in named):
            hit = True
        else:
            name = system_name(o.title)
            if name and re.search(rf"\b{re.escape(name)}\b", flat):
                hit = True
        if hit:
            found.append(o.id)
    return found


REPORTING = re.compile(r"\b(?:as )?describ\w*|according to|as reported by|reports? (?:on|that)|in the words of|"
                       r"writes? (?:of|about|that)|as (?:noted|stated|summari[sz]ed|put) by|notes? that|"
                       r"observes? that|points? out|remarks?\b|"
                       # "as Fox and Brewer note", "as Cidon et al. observe": a few names, each ending at a space
                       # (one way to split the words: the match stays linear on a long paragraph)
                       r"\bas (?:(?:[A-Z][\w'’.-]*|&)\s+){1,5}(?:notes?|observes?|writes?|puts? it|says?|explains?)\b",
                       re.I)


def reported(text: str) -> bool:
    """True when `text` (the words before a citation) presents a quotation as someone's remark."""
    return bool(REPORTING.search(re.sub(r"[“\"][^”\"]*[”\"]", "", text)))


# --- how the survey names and cites ----------------------------------------------------------------

def who(p) -> str:
    """How a sentence names a paper: "Lamport (1998)", "Fox and Brewer (n.d.)" when it has no year."""
    return f"{p.short_author} ({p.year})" if p.year else f"{p.short_author} (n.d.)"


def own_claim(p, s) -> bool:
    """True when the passage `s` of paper `p` is the paper's own statement, not a description of other work
    (the paper's title is known here, so its own system's name never counts as other work)."""
    if not s.other:
        return True
    return not other_work(s.text, s.section, p.fulltext, title=p.title)


def remark(about_paper, source, s, *, name: str = "", link: str = "") -> str:
    """A sentence of `source` that describes `about_paper`, cited to the paper it is about with `source` as
    the source of the remark: 'HyperDex [@escriva2012], as described by Cidon et al. (2015): “…” [@cidon2015, p. 10]'."""
    subject = f"{name} {cite(about_paper.id)}" if name else f"{who(about_paper)} {cite(about_paper.id)}"
    tail = f" {link}" if link else ""
    return f"{subject}, as described by {who(source)}: “{s.text}” {cite(source.id, s.page)}{tail}"


_DESCRIBED: dict[tuple, list] = {}     # (citing paper, described paper) -> the citing paper's sentences about it


def remarks_about(p, papers, query: str, *, limit: int = 1) -> list:
    """The best sentences of the other selected papers that describe `p` (other work about it, found through
    their reference lists, author names or `p`'s system name), ranked for `query`: [(source paper, passage)]."""
    pool = []
    for q in papers:
        if q.id == p.id:
            continue
        key = (q.id, q.fulltext, p.id, p.title, p.doi, tuple(p.authors), p.year)
        if key not in _DESCRIBED:
            if len(_DESCRIBED) > 4096:
                _DESCRIBED.clear()
            _DESCRIBED[key] = [s for s in paper_sentences(q.id, q.fulltext)
                               if s.other and quotable(s.text) and p.id in about(s.text, q, [p])]
        pool += [(q, s) for s in _DESCRIBED[key]]
    if not pool:
        return []
    by_text = {(s.paper_id, s.text): (q, s) for q, s in pool}
    ranked = rank_sentences(f"{query} {p.title}", [s for _, s in pool], limit=limit)
    out = [by_text[(s.paper_id, s.text)] for s in ranked]
    return out or pool[:limit]
