"""`papervault changes`: what happened to the vault's papers since a time: added, updated and deleted (the
vault's git history, `papervault.vault.history`), marked as gone from their source, new versions, new inbox
matches and surveys gained (the sync log), and surveys a paper's new version left stale."""

from __future__ import annotations

import datetime as _dt
import re
from typing import Any

from papervault.app.inbox import load as inbox_load
from papervault.app.syncstate import read_log
from papervault.app.versions import stale_surveys
from papervault.errors import InputError, PapervaultError
from papervault.vault.history import paper_changes
from papervault.workspace import Workspace


def parse_since(since: str | None) -> _dt.datetime:
    """`7d`, `12h`, `30m`, `2w` ago, or a date (YYYY-MM-DD) or ISO time, as an aware UTC datetime."""


    text = (since or "7d").strip().lower()
    m = re.fullmatch(r"(\d{1,6})\s*([mhdw])", text)
    now = _dt.datetime.now(_dt.timezone.utc)
    if m:
        n = int(m.group(1))
        try:
            return now - {"m": _dt.timedelta(minutes=n), "h": _dt.timedelta(hours=n), "d": _dt.timedelta(days=n),
                          "w": _dt.timedelta(weeks=n)}[m.group(2)]
        except OverflowError:
            raise InputError(f"--since {since!r} reaches back before the year 1",
                             fix="give a shorter duration, or a date like 2000-01-01") from None
    try:
        when = _dt.datetime.fromisoformat(text.upper() if "t" in text else text)
    except ValueError:
        raise InputError(f"--since {since!r} is neither a duration nor a date",
                         fix="give 7d, 12h, 30m, 2w, or a date like 2026-01-31") from None
    when = when if when.tzinfo else when.replace(tzinfo=_dt.timezone.utc)
    if when > now:
        raise InputError(f"--since {since!r} is in the future", fix="give a date before today, or 7d, 12h, 2w")
    return when


MAX_CHANGES = 1000      # entries per kind in one answer (the rest counted)


def changes(ws: Workspace, since: str | None = "7d") -> dict:
    """Papers added, updated and deleted since `since` (from the vault's git history: a commit adding a note
    added the paper, one changing its folder updated it) and marked as gone from their source (the sync log)."""

    ws.require()
    when = parse_since(since)
    vault = ws.vault
    out: dict[str, Any] = {"since": when.isoformat(), "added": [], "updated": [], "marked": [], "deleted": [],
                           "versions": [], "inbox": [], "stale_surveys": [], "surveys_gained": []}
    added, updated, deleted = paper_changes(vault.root, when)
    for kind, found in (("added", added), ("updated", updated), ("deleted", deleted)):
        rows = list(found.values())
        for e in rows[:MAX_CHANGES]:
            if kind != "deleted" and vault.has_paper(e["id"]):
                try:
                    meta = vault.read_meta(e["id"])
                except PapervaultError as exc:   # a note that leads out of the vault, or broken: said, not read
                    e["problem"] = str(exc)[:300]
                    continue
                e["title"] = meta.title
                if getattr(meta, "left_source", None):
                    e["left_source"] = meta.left_source
        out[kind] = rows[:MAX_CHANGES]
        if len(rows) > MAX_CHANGES:
            out[f"{kind}_more"] = len(rows) - MAX_CHANGES
    for entry in read_log(ws):
        try:
            at = _dt.datetime.fromisoformat(entry.get("at", ""))
        except ValueError:
            continue
        if at < when:
            continue
        for m in entry.get("marked", []):
            out["marked"].append({"id": m.get("paper"), "at": entry["at"], "source": m.get("source"),
                                  "item": m.get("item"), "reason": m.get("reason")})
        for v in entry.get("versions", []):
            out["versions"].append({"id": v.get("paper"), "at": entry["at"], "item": v.get("item"),
                                    "version": v.get("version"), "summary": v.get("summary")})
        for g in entry.get("surveys_gained", []):
            if g.get("survey"):
                out["surveys_gained"].append({**g, "at": entry["at"]})
        for e in entry.get("inbox", []):
            out["inbox"].append({"id": e.get("id"), "at": entry["at"], "query": e.get("query"),
                                 "title": e.get("title"), "score": e.get("score"), "reason": e.get("reason")})
    out["marked"] = _still_marked(vault, out["marked"])
    for kind in ("marked", "versions", "inbox"):
        out[kind] = out[kind][:MAX_CHANGES]

    held = inbox_load(ws)["items"]
    out["inbox"] = [e for e in out["inbox"] if e["id"] in held]      # accepted or dismissed since: not news
    out["stale_surveys"] = stale_surveys(ws)
    return out


def _still_marked(vault, marked: list[dict]) -> list[dict]:
    """The marks of the sync log whose paper still carries one (a paper back in its source is not news), the
    latest mark of a paper once."""
    out: dict[str, dict] = {}
    for m in marked:
        pid = m.get("id")
        if not isinstance(pid, str) or pid in out and out[pid] is None:
            continue
        if pid not in out:
            try:
                left = getattr(vault.read_meta(pid), "left_source", None) if vault.has_paper(pid) else None
            except PapervaultError:
                left = None
            if not left:
                out[pid] = None
                continue
        out[pid] = m
    return [m for m in out.values() if m is not None][:MAX_CHANGES]
