"""What a workspace holds and whether its parts agree: the data of `papervault status` and the MCP `status` tool."""

from __future__ import annotations

import re

from papervault.wording import plural
from papervault.workspace import Workspace
from papervault.identity import doubtful
from papervault.index import fill
from papervault.vault import frontmatter


NOT_INDEXED_SHOWN = 10   # ids named in the one-line index health (`not_indexed` lists all)


def workspace_status(ws: Workspace) -> dict:
    from papervault.index.embed import workspace_embed_settings  # deferred: pyarrow (~0.1 s), read on demand

    vault = ws.vault
    ids = vault.paper_ids()
    embed = workspace_embed_settings(ws)   # what the commands run with (the index's model if settings are silent)
    with_text = sum(1 for i in ids if vault.fulltext_path(i).is_file())
    out = {
        "workspace": str(ws.root),
        "papers": len(ids),
        "papers_with_text": with_text,
        "surveys": len(vault.survey_slugs()),
        "code_repos": len([p for p in vault.code_dir.glob("*.md")]) if vault.code_dir.is_dir() else 0,
        "chunks": 0,
        "embedding_model": embed.model,
        "embedding_model_path": embed.model_path,
        "embedding_precision": embed.precision,
        "backend": ws.settings.agents.backend,
        "vault_clean": vault.is_clean(),
        "vault_head": vault.repo.head.commit.hexsha if vault.repo.head.is_valid() else None,
        "text_layers": text_layers(ws, ids),
        "stages": _stages(ws),
        "low_confidence": _doubtful(ws),
    }
    try:
        from papervault.index.store import PaperIndex  # deferred: as above

        st = PaperIndex(ws).stats()
        out["chunks"] = st.get("chunks", 0)
        out["indexed_papers"] = st.get("papers", 0)
        out["index"] = st
        # Papers of the vault that no search, survey or MCP answer can find, by id (a paper `index` failed on
        # stays here until it is fixed).
        known = set(ids)
        missing = [p for p in st.get("not_indexed", []) if p in known]
        out["not_indexed"] = missing
        health = st.get("health", "ok")
        if missing and (health in ("ok", "empty") or health.endswith(" to sync")):
            shown = ", ".join(missing[:NOT_INDEXED_SHOWN])
            more = f" and {len(missing) - NOT_INDEXED_SHOWN} more" if len(missing) > NOT_INDEXED_SHOWN else ""
            health = (f"stale: {len(missing)} of {plural(len(ids), 'paper')} not indexed ({shown}{more}); "
                      "run `papervault index`")
        elif health == "ok" and st.get("papers", 0) != len(ids):
            health = f"stale: {st.get('papers', 0)} of {plural(len(ids), 'paper')} indexed; run `papervault index`"
        out["index_health"] = health
        out["fill"] = _fill_status(ws, st)
    except Exception as exc:  # status must answer even when the index is broken
        out["not_indexed"] = None           # unknown while the index cannot be read
        from papervault.index.store import redact  # deferred: as above

        out["index_health"] = f"unavailable: {redact(' '.join(str(exc).split()), ws.settings.index.uri)[:300]}"
    return out


def _fill_status(ws: Workspace, st: dict) -> dict:
    """How far the background fill of paragraph vectors has come (index/fill.py, docs/index.md)."""
    pending = int(st.get("pending") or 0)
    pid = fill.running(ws)
    last = fill.state(ws)
    out = {"pending": pending, "paragraphs": int((st.get("levels") or {}).get("paragraph", 0)),
           "running": pid, "last": last or None}
    if pending and pid:
        out["hint"] = "a background fill is embedding them; search works meanwhile"
    elif pending:
        out["hint"] = "no fill is running: run `papervault index` (background) or `papervault index --wait`"
    return out


def _stages(ws: Workspace) -> dict:
    """Which papers are searchable by their first pass only, their full parse still to come
    (papervault.app.arrival); every other paper is complete."""
    from papervault.parse.firstpass import stages  # deferred: read when status is asked (loads the parser)

    try:
        return stages(ws)
    except Exception as exc:  # status answers even when the worker's state cannot be read
        return {"first_pass": [], "error": str(exc)[:200]}


def _doubtful(ws: Workspace) -> list[dict]:
    """Papers whose title or id is low-confidence (`papervault.identity.doubtful`); [] when none."""
    try:
        return doubtful(ws.vault)
    except Exception:   # status answers even when a note is broken (doctor reports it)
        return []


# A non-empty `repaired_pages` or `ocr_pages` in a note: a block list ("-" on the next line) or a flow list.
_LISTED = re.compile(r"^(?:repaired_pages|ocr_pages):[ \t]*(?:\r?\n[ \t]*-|\[\s*\d)", re.M)


def text_layers(ws: Workspace, ids: list[str]) -> dict:
    """Pages whose text was repaired from the glyphs or read by OCR, per paper and in total (from the notes).

    A page is counted once, by where its text came from: `ocr` holds scanned pages and pages whose text layer
    was still mostly non-words after the repair; `repaired` the pages whose repaired text layer was kept."""
    papers: dict[str, dict] = {}
    for pid in ids:
        try:
            text = ws.vault.safe_path(ws.vault.note_path(pid)).read_text(encoding="utf-8")
            if not _LISTED.search(text):
                continue   # both lists empty (`[]`) or absent: most notes, and no YAML to parse
            data = frontmatter.fields(text, {"pages", "repaired_pages", "ocr_pages"})
        except Exception:   # a broken note is `doctor`'s to report; status still answers
            continue
        repaired, ocr = _pages(data.get("repaired_pages")), _pages(data.get("ocr_pages"))
        if repaired or ocr:
            pages = data.get("pages")
            papers[pid] = {"pages": pages if isinstance(pages, int) else None, "repaired": repaired, "ocr": ocr}
    return {"repaired_pages": sum(len(p["repaired"]) for p in papers.values()),
            "ocr_pages": sum(len(p["ocr"]) for p in papers.values()),
            "papers_repaired": sum(1 for p in papers.values() if p["repaired"]),
            "papers_ocr": sum(1 for p in papers.values() if p["ocr"]),
            "papers": papers}


def _pages(value) -> list[int]:
    return [p for p in value if isinstance(p, int) and not isinstance(p, bool)] if isinstance(value, list) else []
