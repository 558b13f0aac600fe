"""Who a sentence speaks for: the paper that wrote it, or other work it describes.

A paper's related-work section, and every sentence carrying a citation marker ("[12]", "(Smith et al., 2010)"),
naming other authors ("Nath et al. modeled ...") or opening with the name of a system the paper cites ("HyperDex
is a distributed key-value store", where the paper writes "HyperDex [13]" elsewhere) describes *other* work.
Quoting such a sentence as the citing paper's own claim is unfaithful even when the quotation is verbatim. The
survey stages use `other_work` to keep these sentences out of a paper's own claims, `about` to find the vault
paper a description is about (through the paper's reference list, an author name or a system name), and
`remark` to cite that paper with the citing paper as the source of the remark.
"""

from __future__ import annotations

import re
from functools import lru_cache

# "[12]", "[3, 7]", "[5–9]", "(Smith et al., 2010)", "(Smith and Jones 2010; Lee, 2012)"
NUMERIC_MARKER = re.compile(r"\[\s*(\d{1,3}(?:\s*[,;–-]\s*\d{1,3})*)\s*\]")
AUTHOR_YEAR_MARKER = re.compile(
    r"\((?:see |e\.g\.,? |cf\. )?[A-Z][A-Za-z'’-]+(?: et al\.?| and [A-Z][A-Za-z'’-]+| & [A-Z][A-Za-z'’-]+)?,?"
    r" (?:19|20)\d{2}[a-z]?(?:[;,][^()]{0,80})?\)")
ET_AL = re.compile(r"\b([A-Z][A-Za-z'’-]+) et al\.?(?:\s*\(((?:19|20)\d{2})\))?")
FIRST_PERSON = re.compile(r"\b(?:we|our|ours|us|this (?:paper|work|article|study))\b", re.I)
RELATED_SECTION = re.compile(r"related work|prior work|previous work|literature|state of the art|background", re.I)
# Capitalised words before a marker that are not names of other work.
NOT_A_NAME = frozenset("""
a an and as at by for from in into of on or see the to with section sections table tables figure figures fig eq
equation appendix chapter ref refs reference references work works paper papers et al also e g i
""".split())
STOP = frozenset("""
a an and are as at be by for from has have in into is it its of on or such that the their these this those to
was were which with can may also other others more most some several many previous prior recent existing
""".split())


def _dehyphen(text: str) -> str:
    """Undo line-break hyphenation that survived as "repli- cation"."""
    return re.sub(r"(\w)- (\w)", lambda m: m.group(1) + m.group(2) if m.group(2).islower() else m.group(0), text)


def has_marker(text: str) -> bool:
    return bool(NUMERIC_MARKER.search(text) or AUTHOR_YEAR_MARKER.search(text))


def marker_numbers(text: str) -> list[int]:
    """The reference numbers a sentence cites: "[3, 7]" -> [3, 7], "[5–7]" -> [5, 6, 7]."""
    out: list[int] = []
    for m in NUMERIC_MARKER.finditer(text):
        for part in re.split(r"\s*[,;]\s*", m.group(1)):
            r = re.split(r"\s*[–-]\s*", part)
            if len(r) == 2 and r[0].isdigit() and r[1].isdigit() and 0 < int(r[1]) - int(r[0]) < 30:
                out += list(range(int(r[0]), int(r[1]) + 1))
            elif part.strip().isdigit():
                out.append(int(part))
    return list(dict.fromkeys(out))


@lru_cache(maxsize=256)
def cited_names(fulltext: str) -> frozenset[str]:
    """Names the paper writes right before a numeric citation marker ("HyperDex [13]", "chain replication
    [37]", "Copyset Replication [9]"), lowercased: names of other work."""
    from papervault.survey.correlate import references_text

    refs = references_text(fulltext)
    body = fulltext[:len(fulltext) - len(refs)] if refs else fulltext
    text = _dehyphen(" ".join(body.split()))
    out: set[str] = set()
    concepts: dict[str, int] = {}
    for m in NUMERIC_MARKER.finditer(text):
        before = re.findall(r"[A-Za-z][\w'’-]*", text[max(0, m.start() - 60):m.start()])[-3:]
        if not before or not text[:m.start()].rstrip() or text[:m.start()].rstrip()[-1] in ",;:(":
            continue
        words = [w for w in before]
        # the capitalised run ending at the marker: "HyperDex", "Copyset Replication", "GFS"
        caps: list[str] = []
        for w in reversed(words):
            if w[0].isupper() and w.lower() not in NOT_A_NAME:
                caps.insert(0, w)
            else:
                break
        if caps and len(" ".join(caps)) >= 3:
            out.add(" ".join(caps).lower())
            continue
        # a lowercase technique of two words: "chain replication [37]"
        if len(words) >= 2 and all(w.islower() and w not in STOP and len(w) > 3 for w in words[-2:]):
            concepts[" ".join(words[-2:])] = concepts.get(" ".join(words[-2:]), 0) + 1
    # a concept the paper mostly writes without a marker is its own vocabulary ("entity groups" in Megastore)
    low = text.lower()
    for name, n in concepts.items():
        if n >= 0.2 * len(re.findall(rf"\b{re.escape(name)}\b", low)):
            out.add(name)
    return frozenset(out)


def own_names(title: str) -> list[str]:
    """The names a paper gives its own work: the title's head before a colon ("Tiered Replication")."""
    head = title.split(":")[0].strip()
    if ":" in title and 2 < len(head) <= 40 and len(head.split()) <= 4:
        return [head.lower()]
    return []


def other_work(text: str, section: str, fulltext: str, *, title: str = "") -> str:
    """Why `text` (a sentence of the paper `fulltext`, in `section`) describes other work; "" when it is the
    paper's own statement."""
    if FIRST_PERSON.search(text):
        return ""
    low = _dehyphen(text).lower()
    if any(re.search(rf"\b{re.escape(n)}\b", low) for n in own_names(title)) and not ET_AL.search(text):
        return ""
    titled = set(re.findall(r"[\w'’-]+", title.lower()))
    if has_marker(text):
        return "it cites other work"
    m = ET_AL.search(text)
    if m:
        return f"it names other authors ({m.group(1)} et al.)"
    head = " ".join(re.findall(r"[\w'’-]+", low)[:5])
    head = re.sub(r"^(?:in|for|with|unlike|like) ", "", head)
    for name in sorted(cited_names(fulltext), key=len, reverse=True):
        if set(name.split()) <= titled:
            continue        # the subject of the paper's own title ("Paxos" in "Paxos Made Moderately Complex")
        if head.startswith(name + " ") or head == name:
            return f"it describes {name}, which the paper cites"
    if RELATED_SECTION.search(section or ""):
        return "it is in the related-work section"
    return ""


# --- which vault paper a description is about -------------------------------------------------------

@lru_cache(maxsize=256)
def reference_entries(fulltext: str) -> dict[int, str]:
    """The numbered entries of a paper's reference list: {12: "R. Escriva, B. Wong ... HyperDex: ..."}."""
    from papervault.survey.correlate import references_text

    refs = " ".join(references_text(fulltext).split())
    out: dict[int, str] = {}
    marks = list(re.finditer(r"(?:^|\s)\[(\d{1,3})\]\s", refs))
    for a, b in zip(marks, marks[1:] + [None]):
        n = int(a.group(1))
        out.setdefault(n, refs[a.end():b.start() if b else len(refs)][:600])
    return out


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
    from papervault.ids import last_name, normalize_title

    found: list[str] = []
    entries = reference_entries(citing.fulltext)
    cited_refs = [entries[n] for n in marker_numbers(text) if n in entries]
    norm_refs = [" " + normalize_title(e) + " " for e in cited_refs]
    named = [(m.group(1), m.group(2)) for m in ET_AL.finditer(text)]
    flat = _dehyphen(text)
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
                       r"observes? that|points? out|remarks?\b", re.I)


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
    from papervault.survey.correlate import cite

    subject = f"{name} {cite(about_paper.id)}" if name else f"{who(about_paper)} {cite(about_paper.id)}"
    tail = f" {link}" if link else ""
    return f"{subject}, as described by {who(source)}: “{s.text}” {cite(source.id, s.page)}{tail}"


def remarks_about(p, papers, query: str, *, limit: int = 1) -> list:
    """The best sentences of the other selected papers that describe `p` (other work about it, found through
    their reference lists, author names or `p`'s system name), ranked for `query`: [(source paper, passage)]."""
    from papervault.survey.evidence import paper_sentences, quotable, rank_sentences

    pool = []
    for q in papers:
        if q.id == p.id:
            continue
        for s in paper_sentences(q.id, q.fulltext):
            if s.other and quotable(s.text) and p.id in about(s.text, q, [p]):
                pool.append((q, s))
    if not pool:
        return []
    by_text = {(s.paper_id, s.text): (q, s) for q, s in pool}
    ranked = rank_sentences(f"{query} {p.title}", [s for _, s in pool], limit=limit)
    out = [by_text[(s.paper_id, s.text)] for s in ranked]
    return out or pool[:limit]
