"""Whether a sentence of a paper is the paper's own statement or a description of other work.

A paper's related-work section, and every sentence carrying a citation marker ("[12]", "(Smith et al., 2010)"),
naming other authors ("Nath et al. modeled ...", "Biswas & Enea provided ...") or opening with the name of a
system the paper cites ("HyperDex is a distributed key-value store", where the paper writes "HyperDex [13]"
elsewhere) describes *other* work. The extractive analyser keeps such sentences out of a paper's note; the
survey (`papervault.survey.attribution`) never quotes them as the citing paper's claim. Text level only: this
module reads `paper.md` and nothing else.
"""

from __future__ import annotations

import re
from functools import lru_cache
from papervault.parse.text import dehyphen, one_line
from papervault.vault import paper as paper_md

# "[12]", "[3, 7]", "[5–9]", "(Smith et al., 2010)", "(Smith and Jones 2010; Lee, 2012)"
NUMERIC_MARKER = re.compile(r"\[\s*(\d{1,3}(?:\s*[,;–-]\s*\d{1,3})*)\s*\]")
AUTHOR_YEAR_MARKER = re.compile(
    r"\((?:see |e\.g\.,? |cf\. )?[A-Z][A-Za-z'’-]+(?: et al\.?| and [A-Z][A-Za-z'’-]+| & [A-Z][A-Za-z'’-]+)?,?"
    r" (?:19|20)\d{2}[a-z]?(?:[;,][^()]{0,80})?\)")
ET_AL = re.compile(r"\b([A-Z][A-Za-z'’-]+) et al\.?(?:\s*\(((?:19|20)\d{2})\))?")
# "Biswas & Enea provided ...", "Fox and Brewer argue ...": two authors named as the subject of a finding
AUTHOR_PAIR = re.compile(r"\b([A-Z][a-z'’-]+) (?:&|and) [A-Z][a-z'’-]+,? (?:\w+ly )?(?:have |has )?"
                         r"(?:pro-? ?vided|provides?|propos(?:e|es|ed)|present(?:s|ed)?|show(?:s|ed)?|describ(?:e|es|ed)|"
                         r"introduc(?:e|es|ed)|develop(?:s|ed)?|stud(?:y|ies|ied)|model(?:s|ed|led)?|"
                         r"demonstrat(?:e|es|ed)|argu(?:e|es|ed)|observ(?:e|es|ed)|report(?:s|ed)?|extend(?:s|ed)?|"
                         r"design(?:s|ed)?|implement(?:s|ed)?|built|found|prov(?:e|es|ed)|gave|give|gives)\b")
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
    refs = references_text(fulltext)
    body = fulltext[:len(fulltext) - len(refs)] if refs else fulltext
    text = dehyphen(one_line(body))
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
    low = dehyphen(text).lower()
    for n in own_names(title):
        # the paper's own system as the subject ("Elle can detect every anomaly in Adya et al.'s formalism"),
        # or named anywhere in a sentence that names no other authors
        if low.startswith(n + " ") or (re.search(rf"\b{re.escape(n)}\b", low) and not ET_AL.search(text)):
            return ""
    titled = set(re.findall(r"[\w'’-]+", title.lower()))
    if has_marker(text):
        return "it cites other work"
    m = ET_AL.search(text)
    if m:
        return f"it names other authors ({m.group(1)} et al.)"
    m = AUTHOR_PAIR.search(dehyphen(text))
    if m:
        return f"it names other authors ({m.group(0).rsplit(' ', 1)[0]})"
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


def references_text(fulltext: str) -> str:
    """The raw text of a paper's reference list (after its last `References` heading), or "" (read by
    `papervault.vault.paper`)."""
    return paper_md.read(fulltext).references_text()


@lru_cache(maxsize=256)
def reference_entries(fulltext: str) -> dict[int, str]:
    """The numbered entries of a paper's reference list: {12: "R. Escriva, B. Wong ... HyperDex: ..."}."""
    refs = dehyphen(one_line(references_text(fulltext)))
    out: dict[int, str] = {}
    marks = list(re.finditer(r"(?:^|\s)\[(\d{1,3})\]\s", refs))
    for a, b in zip(marks, marks[1:] + [None]):
        n = int(a.group(1))
        out.setdefault(n, refs[a.end():b.start() if b else len(refs)][:600])
    return out
