"""New versions of the vault's arXiv papers (`[sync] arxiv_versions = true`), and the surveys they affect.

A pass asks arXiv for the latest version of the vault's arXiv papers (50 ids a request), each at most once per
`[sync] versions_every` (default a day), and finds them without reading the notes of an unchanged vault (see
`sync_versions`). The version a paper's files describe is its note's `arxiv_version`; a paper that has none yet (added before versions were
followed, or by `papervault add`) takes the version arXiv lists on its first pass as its baseline, kept in the
cursor `.papervault/sync/arxiv-versions.json`, and nothing is fetched for it.

When arXiv lists a later version, the pass downloads that version's PDF, keeps the full text a person read as
`paper.v<N>.md` beside `paper.md` (so its page links stay reachable), parses the new PDF into `paper.md` through
`add`'s own writer (journaled, one commit; a note a person edited is kept and the new one goes to `note.new.md`),
and writes into the note's frontmatter:

- `arxiv_version`: the version `paper.md` now holds;
- `note_version`: the version the note's body describes (the old one while a person's edited note is kept);
- `arxiv_history`: one entry per update (`from`, `to`, `at`, `kept`: the old full text's file, `summary`), the
  summary a short factual list computed from the two `paper.md` files by `papervault.vault.paper`'s reader:
  sections added or removed, a changed abstract, tables whose numbers changed, added or removed tables, the
  page count and the sections whose page moved.

A survey pins the version of each arXiv paper it cites (`version` in its `references.json`, CSL-JSON's own
variable). `stale_surveys` lists the surveys citing a paper at an older version than the vault holds, and for
each page link of that paper in `survey.md` whether the cited page's text is still on that page of the new
version, on another page (moved), or nowhere (vanished).
"""

from __future__ import annotations

import json
import re
import tempfile
from pathlib import Path
from typing import Any
import time as _time

import git

from papervault.app.syncstate import load_cursor, now_iso, save_cursor
from papervault.errors import PapervaultError
from papervault.workspace import Workspace
from papervault.hashing import file_sha256
from papervault.ingest import sync_job
from papervault.sources import arxiv
from papervault.vault.paper import read
from papervault.vault.store import commit_id

CURSOR = "arxiv-versions"
MAX_SUMMARY = 12        # lines of one change summary


# --- the change summary ----------------------------------------------------------------------------

def _norm(text: str) -> str:
    return re.sub(r"\s+", " ", re.sub(r"[^\w\s.%-]", " ", text or "")).strip().lower()


def _section_title(title: str) -> str:
    """A section's title without its number ("3.1 Leases" -> "leases"), so renumbering is not a change."""
    return _norm(re.sub(r"^\s*(?:[A-Z]\.|\d+(?:\.\d+)*\.?)\s+", "", title))


def _numbers(rows: list[list[str]]) -> list[str]:
    return re.findall(r"-?\d+(?:[.,]\d+)?%?", " ".join(" ".join(r) for r in rows))


def _abstract(doc) -> str:
    for b in doc.blocks:
        if b.kind == "text" and b.section is not None and _section_title(b.section.title) == "abstract":
            return b.text
    return ""


def summarise(old_text: str, new_text: str, *, old_abstract: str | None = None,
              new_abstract: str | None = None) -> list[str]:
    """What changed between two versions' `paper.md`, as short factual lines (at most `MAX_SUMMARY`)."""
    old, new = read(old_text), read(new_text)
    out: list[str] = []
    olds = {_section_title(s.title): s for s in old.sections if s.level > 1 or s.title != old.title}
    news = {_section_title(s.title): s for s in new.sections if s.level > 1 or s.title != new.title}
    added = [news[k].title for k in news if k and k not in olds]
    removed = [olds[k].title for k in olds if k and k not in news]
    if added:
        out.append("sections added: " + "; ".join(added[:6]))
    if removed:
        out.append("sections removed: " + "; ".join(removed[:6]))
    a_old = old_abstract if old_abstract is not None else _abstract(old)
    a_new = new_abstract if new_abstract is not None else _abstract(new)
    if _norm(a_old) != _norm(a_new) and (a_old or a_new):
        out.append("abstract changed")
    otab = {t.number: t for t in old.tables if t.number}
    ntab = {t.number: t for t in new.tables if t.number}
    changed = [n for n in ntab if n in otab and _numbers(otab[n].rows) != _numbers(ntab[n].rows)]
    if changed:
        out.append("tables whose numbers changed: " + ", ".join(f"Table {n}" for n in changed))
    if [n for n in ntab if n not in otab]:
        out.append("tables added: " + ", ".join(f"Table {n}" for n in ntab if n not in otab))
    if [n for n in otab if n not in ntab]:
        out.append("tables removed: " + ", ".join(f"Table {n}" for n in otab if n not in ntab))
    if len(old.pages) != len(new.pages):
        out.append(f"pages: {len(old.pages)} -> {len(new.pages)}")
    moved = [f"{news[k].title} (page {olds[k].page} -> {news[k].page})" for k in news
             if k in olds and olds[k].page and news[k].page and olds[k].page != news[k].page]
    if moved:
        out.append("sections on another page: " + "; ".join(moved[:6]))
    if not out:
        out.append("no change in sections, abstract, tables or pages")
    return out[:MAX_SUMMARY]


# --- one paper -----------------------------------------------------------------------------------

def current_version(meta, cursor: dict) -> int | None:
    v = (meta.model_extra or {}).get("arxiv_version")
    if isinstance(v, int) and v > 0:
        return v
    v = cursor.get("papers", {}).get(meta.id)
    return v if isinstance(v, int) and v > 0 else None


def update_paper(ws: Workspace, pid: str, old: int, new: int, rec) -> dict:
    """Fetch and parse version `new` of paper `pid` (whose files hold version `old`); keep the old full text as
    `paper.v<old>.md`; summarise the change into the note's `arxiv_history`. One commit. Returns
    {"summary", "commit", "kept", "note_version"} or {"error"}."""
    try:
        pdf = arxiv.download_version(rec.arxiv, new, ws.cache_dir / "downloads", ws.settings)
        sha = file_sha256(pdf)
    except (PapervaultError, OSError) as exc:
        return {"error": f"v{new} not downloaded: {exc}"}
    prec = rec.model_copy(update={"pdfs": [str(pdf)], "source": f"arxiv:{rec.arxiv}v{new}"})
    with sync_job(ws, "sync arxiv versions") as job:
        parsed = job.parse_one(prec)
        if isinstance(parsed, str):
            return {"error": f"v{new} not parsed: {parsed}"}
        vault = job.vault
        meta = vault.read_meta(pid)
        full = vault.fulltext_path(pid)
        old_text = full.read_text(encoding="utf-8") if full.is_file() else ""
        kept_name = f"paper.v{old}.md"
        job.journal.touch(pid)
        if old_text:
            vault.write(vault.paper_dir(pid) / kept_name, old_text)
        edited = vault.is_edited(pid)
        old_abstract = meta.abstract
        if not edited:
            meta.abstract = rec.abstract or meta.abstract
        meta.sources = list(dict.fromkeys([*meta.sources, f"arxiv:{rec.arxiv}"]))
        job.store_again(meta, prec, parsed, sha, origin="arxiv", reason=f"new arXiv version v{old} -> v{new}")
        new_text = full.read_text(encoding="utf-8") if full.is_file() else ""
        summary = summarise(old_text, new_text, old_abstract=old_abstract or "",
                            new_abstract=rec.abstract or old_abstract or "")
        extra = vault.read_meta(pid).model_extra or {}
        history = list(extra.get("arxiv_history") or [])
        history.append({"from": old, "to": new, "at": now_iso(), "kept": kept_name if old_text else None,
                        "summary": summary})
        note_version = (extra.get("note_version") or old) if edited else new
        vault.update_meta(pid, arxiv_version=new, note_version=note_version, arxiv_history=history)
        return {"summary": summary, "commit": job.commit(), "kept": edited, "note_version": note_version}


# --- the pass --------------------------------------------------------------------------------------

def every_seconds(text: str) -> int:
    """`[sync] versions_every` (30m, 12h, 1d, 1w) in seconds."""
    m = re.fullmatch(r"\s*(\d{1,6})\s*([mhdw])\s*", text or "")
    if not m:
        return 86400
    return int(m.group(1)) * {"m": 60, "h": 3600, "d": 86400, "w": 604800}[m.group(2)]


def arxiv_papers(ws: Workspace, cache: dict) -> tuple[dict[str, str], int]:
    """{paper id: arXiv id} of the vault's arXiv papers, and how many notes were read to know it.

    `cache` (the cursor's `head` and `arxiv`) is what the last pass knew at vault commit `head`: when the vault
    has not moved, no note is read; when it has, only the papers `git diff` names between the two commits are
    read again; without a cache (the first pass, a vault rewritten), every note is. Notes are read as
    committed: a hand edit not yet committed is seen once it is."""
    vault = ws.vault
    repo = vault.repo
    head = repo.head.commit.hexsha if repo.head.is_valid() else ""
    old = commit_id(cache.get("head"), "sync/arxiv-versions.json head")
    ids = dict(cache.get("arxiv") or {}) if old else {}
    changed: set[str] | None = None
    if old and old == head:
        changed = set()
    elif old and head:
        try:
            names = repo.git.diff("--name-only", "--no-renames", "--end-of-options", old, head, "--",
                                  "papers").splitlines()
            changed = {n.split("/")[1] for n in names if n.count("/") >= 2}
        except git.GitCommandError:
            changed = None          # the old commit is gone (a rewritten history): read every note
    if changed is None:
        ids, changed = {}, set(vault.paper_ids())
    for pid in changed:
        ids.pop(pid, None)
        if not vault.has_paper(pid):
            continue
        try:
            meta = vault.read_meta(pid)
        except PapervaultError:
            continue
        if meta.arxiv:
            ids[pid] = meta.arxiv
    cache["head"], cache["arxiv"] = head, ids
    return ids, len(changed)


def sync_versions(ws: Workspace, report) -> str:
    """Follow new versions of the vault's arXiv papers; returns "changed" or "unchanged".

    Its cost follows the changes, not the library: the list of arXiv papers comes from the last pass's cursor
    brought up to date by the vault's git history (`arxiv_papers`), each paper is asked about at most once per
    `[sync] versions_every` (the longest unchecked first, at most `versions_max` a pass, 50 ids a request), and
    only the notes of papers arXiv lists at a later version are read."""
    vault = ws.vault
    s = ws.settings.sync
    cursor = load_cursor(ws, CURSOR)
    cache = {"head": cursor.get("head"), "arxiv": cursor.get("arxiv")}
    papers, read = arxiv_papers(ws, cache)
    known = {p: v for p, v in cursor.get("papers", {}).items() if p in papers}
    checked = {p: t for p, t in cursor.get("checked", {}).items() if p in papers}
    now = _time.time()
    every = every_seconds(s.versions_every)
    due = sorted((p for p in papers if now - float(checked.get(p, 0)) >= every),
                 key=lambda p: (float(checked.get(p, 0)), p))[:s.versions_max]
    stats = {"arxiv_papers": len(papers), "notes_read": read, "asked": len(due), "requests": 0}
    changed = False
    if due:
        latest = arxiv.latest_versions([papers[p] for p in due], ws.settings)
        stats["requests"] = -(-len({arxiv.normalize_arxiv(papers[p]) for p in due}) // arxiv.ID_BATCH)
        for pid in due:
            checked[pid] = now
            found = latest.get(arxiv.normalize_arxiv(papers[pid]))
            if found is None:
                continue
            version, rec = found
            if version <= int(known.get(pid) or 0):
                continue        # not later than the version this paper was last seen at: no note read
            try:
                meta = vault.read_meta(pid)
            except PapervaultError:
                continue
            have = current_version(meta, {"papers": known})
            if have is None:
                known[pid] = version     # the baseline: the version arXiv lists the first time it is asked
                continue
            if version <= have:
                known[pid] = have
                continue
            done = update_paper(ws, pid, have, version, rec)
            if "error" in done:
                report.skipped.append({"source": "arxiv_versions", "item": f"{meta.arxiv}v{version}", "paper": pid,
                                       "reason": done["error"]})
                checked.pop(pid, None)      # asked again on the next pass
                continue
            changed = True
            known[pid] = version
            report.commits += [c for c in [done.get("commit")] if c]
            entry = {"source": "arxiv_versions", "item": f"{meta.arxiv}v{version}", "paper": pid,
                     "fields": ["new version"], "version": {"from": have, "to": version},
                     "summary": done["summary"],
                     "reason": f"arXiv v{have} -> v{version}: " + "; ".join(done["summary"])
                               + (f"; the note you edited is kept and still describes v{done['note_version']}"
                                  if done.get("kept") else "")}
            report.updated.append(entry)
            report.versions.append({k: entry[k] for k in ("paper", "item", "version", "summary")})
    if changed:
        arxiv_papers(ws, cache)     # the pass's own commits: known, so the next pass reads no note for them
    report.costs["arxiv_versions"] = stats
    save_cursor(ws, CURSOR, {"papers": known, "checked": checked, "head": cache["head"], "arxiv": cache["arxiv"],
                             "synced": now_iso()})
    if changed:
        report.stale_surveys = stale_surveys(ws)
    return "changed" if changed else "unchanged"


# --- surveys ---------------------------------------------------------------------------------------

def pin_versions(vault, items: list[dict]) -> list[dict]:
    """CSL-JSON items of a survey's `references.json` with `version` ("v2") of each arXiv paper the vault holds
    at a known version: the version the survey cites."""
    for item in items:
        pid = item.get("id")
        if not pid or not str(item.get("number", "")).startswith("arXiv:") or not vault.has_paper(pid):
            continue
        v = (vault.read_meta(pid).model_extra or {}).get("arxiv_version")
        item["version"] = f"v{v if isinstance(v, int) else 1}"
    return items


def _pinned(item: dict) -> int | None:
    m = re.fullmatch(r"v?(\d{1,4})", str(item.get("version", "")))
    return int(m.group(1)) if m else None


_PAGE_LINK = r"papers/{pid}/paper\.md#page-(\d+)"


def _quote_moves(ws: Workspace, slug: str, pid: str, old: int, new: int) -> list[dict]:
    """For each page link of `pid` in the survey, where the sentence before it stands in version `new`: on the
    same page, another page (moved), or nowhere (vanished). The sentence is looked for in the old full text."""
    vault = ws.vault
    survey = vault.survey_dir(slug) / "survey.md"
    kept = vault.paper_dir(pid) / f"paper.v{old}.md"
    full = vault.fulltext_path(pid)
    if not survey.is_file() or not full.is_file():
        return []
    text = survey.read_text(encoding="utf-8", errors="replace")
    new_doc = read(full.read_text(encoding="utf-8"))
    new_pages = {p: _norm(new_doc.text[a:b]) for p, (a, b) in new_doc.page_spans().items()}
    old_pages: dict[int, str] = {}
    if kept.is_file():
        od = read(kept.read_text(encoding="utf-8"))
        old_pages = {p: _norm(od.text[a:b]) for p, (a, b) in od.page_spans().items()}
    out = []
    for m in re.finditer(_PAGE_LINK.format(pid=re.escape(pid)), text):
        page = int(m.group(1))
        line_start = text.rfind("\n", 0, m.start()) + 1
        seg = text[line_start:m.start()]
        quoted = re.findall(r"\u201c([^\u201d]{8,})\u201d|\"([^\"]{8,})\"", seg)     # “a quote” as drafts write it
        if quoted:
            words = _norm(next(q for q in quoted[-1] if q)).split()
        else:       # the sentence before the citation
            seg = re.sub(r"\s*(?:\[@|\(\[)[^\n]*$", "", seg)
            words = _norm(re.split(r"(?<=[.!?])\s+(?=[A-Z])", seg.strip())[-1]).split()
        quote = " ".join(words)
        if len(words) < 4:
            continue
        probe = " ".join(words[-8:])
        if old_pages and probe not in old_pages.get(page, "") and not quoted:
            continue        # the survey's own words, not a passage of the paper: nothing to check
        where = [p for p, t in new_pages.items() if probe in t]
        status = "same page" if page in where else ("moved" if where else "vanished")
        if status != "same page":
            out.append({"quote": quote[:160], "page": page, "status": status, "now": where[:3]})
    return out


def stale_surveys(ws: Workspace) -> list[dict]:
    """Surveys citing an arXiv paper at an older version than the vault now holds, with the quotes that moved
    or vanished."""
    vault = ws.vault
    root = vault.root / "surveys"
    out = []
    if not root.is_dir():
        return out
    for sdir in sorted(p for p in root.iterdir() if p.is_dir()):
        refs = sdir / "references.json"
        try:
            items = json.loads(refs.read_text(encoding="utf-8")) if refs.is_file() else []
        except (OSError, ValueError):
            continue
        for item in items if isinstance(items, list) else []:
            pid = item.get("id") if isinstance(item, dict) else None
            if not pid or not vault.has_paper(pid):
                continue
            extra = vault.read_meta(pid).model_extra or {}
            now = extra.get("arxiv_version")
            pinned = _pinned(item)
            if pinned is None and extra.get("arxiv_history"):
                pinned = extra["arxiv_history"][0].get("from")      # cited before versions were pinned
            if not isinstance(now, int) or not isinstance(pinned, int) or pinned >= now:
                continue
            out.append({"survey": sdir.name, "paper": pid, "cited": pinned, "now": now,
                        "quotes": _quote_moves(ws, sdir.name, pid, pinned, now),
                        "reason": f"cites v{pinned} of {pid}; the vault now holds v{now}"})
    return out
