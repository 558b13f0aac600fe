"""Citation evidence for a topic's selection (the module's step 5): the vault papers the selected papers cite,
weighed against the rest of the vault, chosen or listed as near misses with that evidence; and the "cited by k of
the n selected papers" lines, counted again in the final selection."""

from __future__ import annotations

from papervault.survey.selection import Reason
from papervault.survey.topic.citing import Citing
from papervault.survey.topic.links import Allowed, MakeCandidate
from papervault.survey.topic.params import TopicParams
from papervault.survey.topic.table import Candidate, PaperTable

CITED = ("cocited", "chain")     # the kinds of a citation-evidence reason


def _cited_text(k: int, n: int, readers: int) -> str:
    s = f"cited by {k} of the {n} selected papers"
    return s + (f" ({readers} of them with a reference list)" if readers < n else "")


def _weighed(g, params: TopicParams, counts: dict[str, set[str]], readers: list[str], core_readers: set[str]
             ) -> tuple[list[tuple[str, set[str]]], list[tuple[str, set[str]]], list[tuple[str, set[str]]]]:
    """Each cited paper as chosen (cited often enough by the selection and lifted above the vault's rate),
    generic (often enough, but the rest of the vault cites it as much) or single (too rarely)."""
    rest = max(1, len(g.with_refs) - len(readers))
    chosen, generic, singles = [], [], []
    for pid, by in sorted(counts.items(), key=lambda kv: (-len(kv[1]), kv[0])):
        k = len(by)
        # the share is counted among the core's papers with a reference list: a broad selection's tail
        # (papers from the field around the topic) does not dilute what the topic's surest papers cite
        k_core = len(by & core_readers)
        strong = k >= params.cite_min and (k >= params.cite_several
                                           or (core_readers and k_core >= params.cite_share * len(core_readers))
                                           or k >= params.cite_share * len(readers))
        elsewhere = len(g.cited_by.get(pid, ())) - k
        lifted = k / len(readers) >= params.cite_lift * (elsewhere / rest)
        (chosen if strong and lifted else generic if strong else singles).append((pid, by))
    return chosen, generic, singles


def cited(table: PaperTable, citing: Citing, params: TopicParams, selected: list[Candidate],
          near: list[Candidate], cand: MakeCandidate, allowed: Allowed, excluded: set[str],
          core: set[str] | None = None) -> tuple[list[Candidate], list[Candidate], int]:
    """Papers the selected papers cite, weighed against the rest of the vault: chosen (`cite_*`), near misses
    (cited by one selected paper, or by a paper citation evidence chose), and the evidence line of every
    paper listed. Returns (selected, near, papers of the vault with a reference list)."""
    g = citing.graph()
    if not g.with_refs:
        return selected, near, 0
    pos = table.pos
    sel_ids = [c.id for c in selected]
    sel_set = set(sel_ids)
    n = len(sel_ids)
    readers = [pid for pid in sel_ids if pid in g.with_refs]       # the selected papers that can cite
    core_readers = {pid for pid in readers if core is None or pid in core}
    counts: dict[str, set[str]] = {}
    for pid in readers:
        for c in g.cites.get(pid, ()):
            if c not in sel_set and c not in excluded and c in pos and allowed(c):
                counts.setdefault(c, set()).add(pid)
    strong, generic, singles = _weighed(g, params, counts, readers, core_readers)
    chosen: list[Candidate] = []
    for pid, by in strong:
        c = cand(pos[pid])
        c.evidence.append(Reason("cocited", _cited_text(len(by), n, len(readers)), other=",".join(sorted(by))))
        chosen.append(c)
    chosen_ids = {c.id for c in chosen}
    near = [c for c in near if c.id not in chosen_ids]
    near_ids = {c.id for c in near}
    extra: list[Candidate] = []
    for pid, by in generic + singles:        # near misses: cited, but too rarely or by everyone
        c = next((x for x in near if x.id == pid), None) or cand(pos[pid])
        why = _cited_text(len(by), n, len(readers))
        if (pid, by) in generic:
            why += f", but also by {len(g.cited_by.get(pid, ())) - len(by)} other papers of the vault"
        c.evidence.append(Reason("cocited", why, other=",".join(sorted(by))))
        if pid not in near_ids:
            extra.append(c)
            near_ids.add(pid)
    for src in chosen:                        # one step further: cited by what citation evidence chose
        for pid in sorted(g.cites.get(src.id, ())):
            if pid in sel_set or pid in chosen_ids or pid in excluded or pid not in pos or not allowed(pid):
                continue
            c = next((x for x in near + extra if x.id == pid), None)
            if c is None:
                c = cand(pos[pid])
                extra.append(c)
                near_ids.add(pid)
            c.evidence.append(Reason("chain", src.evidence[0].text, other=src.id))
    near = _by_strength(extra, selected + chosen) + near
    final = selected + chosen
    for c in final + near:
        if not any(r.kind in CITED for r in c.evidence):
            c.evidence.append(Reason("citations"))      # its text: recount, against the final selection
    return final, near, len(g.with_refs)


def _by_strength(extra: list[Candidate], chosen: list[Candidate]) -> list[Candidate]:
    """Citation-evidence near misses, strongest evidence first: cited by more selected papers, then by selected
    papers nearer the topic (the sum of their scores), then by their own score. A paper that only the topic's
    central paper cites ("Paxos Made Simple", cited by "Paxos Made Moderately Complex") comes before one that a
    paper of the field around the topic cites."""
    score_of = {c.id: c.score for c in chosen}

    def strength(c: Candidate) -> tuple:
        by = {x for r in c.evidence if r.kind in CITED for x in r.other.split(",") if x}
        direct = any(r.kind == "cocited" for r in c.evidence)
        return (not direct, -len(by), -sum(score_of.get(x, 0.0) for x in by), -c.score)

    return sorted(extra, key=strength)


def recount(citing: Citing, selected: list[Candidate], near: list[Candidate]) -> None:
    """The citation lines of every listed paper ("cited by 2 of the 9 selected papers: @a, @b"), counted in
    the final selection (citation evidence's papers included, `max_papers` applied), so that its numbers are
    those of selection.md's own count."""
    g = citing.graph()
    final = [c.id for c in selected]
    fset = set(final)
    n = len(final)
    readers = sum(1 for pid in final if pid in g.with_refs)
    own: dict[str, str] = {}
    listed = selected + near
    for c in listed:
        by = sorted(g.citers(c.id, final))
        for r in c.evidence:
            if r.kind == "cocited":
                elsewhere = len(g.cited_by.get(c.id, ())) - len(by)
                generic = "other papers of the vault" in r.text
                r.text = _cited_text(len(by), n, readers) + (f", but also by {elsewhere} other papers of the vault"
                                                             if generic else "")
                r.other = ",".join(by)
                own[c.id] = r.text
            elif r.kind == "citations":
                r.text = _cited_text(len(by), n, readers).split(" (")[0]
                if c.id in g.with_refs:
                    # the selected papers this one cites (`section`); `other` holds those that cite it
                    cites = sorted(g.cites.get(c.id, set()) & fset)
                    r.text += f"; cites {len(cites)} of them"
                    r.section = ",".join(cites)
                r.other = ",".join(by)
    for c in listed:
        for r in c.evidence:
            if r.kind == "chain" and r.other in own:
                r.text = own[r.other]
