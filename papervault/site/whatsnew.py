"""Rows of the site's "What's new" page for the surveys whose topic gained papers.

`papervault changes` lists under `surveys_gained` each survey a sync pass's new papers would enter (one entry per
pass, from `.papervault/sync/log.jsonl`). The page shows one row per survey: the papers that would enter its
selection over the period, and the command that shows the difference (`papervault survey --refresh SLUG`). Every
value comes from the vault or the sync log, so it is hostile: the rows are plain text that the page's template
escapes (`md`), and a row links only to a survey page the site builds itself.
"""

from __future__ import annotations

from typing import Any

from papervault.site.sanitize import path_url

MAX_TITLES = 5      # entering papers named in a row; the rest are counted
MAX_CHARS = 100     # of a title or topic named in a row (the command that ends the row is never cut)


def _short(text: str) -> str:
    text = " ".join(text.split())
    return text if len(text) <= MAX_CHARS else text[:MAX_CHARS - 1] + "…"


def surveys_gained_rows(whats_new: dict, survey_titles: dict[str, str]) -> list[dict[str, Any]]:
    """{kind, title, url, detail} per survey of `whats_new["surveys_gained"]`, in the order they first gained
    papers; `survey_titles` maps the slug of each survey the site shows to its title (a survey the site does not
    show is named by its slug, unlinked)."""
    merged: dict[str, dict[str, Any]] = {}
    for e in whats_new.get("surveys_gained") or []:
        if not isinstance(e, dict) or not isinstance(e.get("survey"), str) or not e["survey"]:
            continue            # an entry that says only that scoring failed is not a survey's news
        row = merged.setdefault(e["survey"], {"topic": "", "entering": {}})
        row["topic"] = _short(str(e.get("topic") or row["topic"]))
        for p in e.get("entering") or []:
            if isinstance(p, dict) and p.get("id"):
                row["entering"].setdefault(str(p["id"]), _short(str(p.get("title") or p["id"])))
    rows = []
    for slug, got in list(merged.items())[:200]:
        titles = list(got["entering"].values())
        named = "; ".join(titles[:MAX_TITLES]) + (f"; and {len(titles) - MAX_TITLES} more"
                                                   if len(titles) > MAX_TITLES else "")
        on = f" on {got['topic']}" if got["topic"] else ""
        detail = (f"{len(titles)} new paper(s){on} would enter its selection ({named}): "
                  f"papervault survey --refresh {slug}")
        rows.append({"kind": "survey gained papers", "title": survey_titles.get(slug) or slug,
                     "url": path_url(f"surveys/{slug}/survey.md") if slug in survey_titles else "",
                     "detail": detail})
    return rows
