"""A person's corrections of a paper's identity (`papervault edit`): they win over every source and survive
re-imports, re-parses and re-analyses, because imports only fill fields that are empty."""

from __future__ import annotations

from papervault.errors import PapervaultError
from papervault.models import PaperMeta
from papervault.workspace import Workspace

EDITABLE = ("title", "authors", "year", "venue", "doi", "arxiv")


class EditError(PapervaultError):
    """A correction that cannot be applied as given."""


def edit_paper(ws: Workspace, pid: str, **changes) -> PaperMeta:
    """Set the given identity fields (None: unchanged) of paper `pid`, mark them `user` in `provenance`,
    and commit the note. Bibliographic fields (`bib`) may be given as a dict and are merged."""
    ws.require()
    bib = changes.pop("bib", None) or {}
    unknown = set(changes) - set(EDITABLE)
    if unknown:
        raise EditError(f"cannot edit {', '.join(sorted(unknown))}", fix=f"editable fields: {', '.join(EDITABLE)}")
    given = {k: v for k, v in changes.items() if v is not None}
    if "title" in given and not str(given["title"]).strip():
        raise EditError("the title cannot be empty", fix="give the paper's title, e.g. --title 'Paxos Made Simple'")
    if "year" in given and not (0 < int(given["year"]) < 10000):
        raise EditError(f"year {given['year']} is not a year", fix="give a four-digit year, e.g. --year 2001")
    if "authors" in given:
        given["authors"] = [a.strip() for a in given["authors"] if a and a.strip()]
    with ws.write_lock("edit"):
        meta = ws.vault.read_meta(pid)
        prov = dict(meta.provenance)
        for k in given:
            prov[k] = "user"
        new_bib = {**meta.bib, **{k: str(v) for k, v in bib.items() if v is not None}}
        if bib:
            prov["bib"] = "user"
        extra = {}
        if bib.get("pages") and meta.pages and not meta.page_labels:
            from papervault.pages import from_pages_field

            extra["page_labels"] = from_pages_field(new_bib.get("pages"), meta.pages)
        meta = ws.vault.update_meta(pid, provenance=prov, bib=new_bib, **given, **extra)
        what = ", ".join([*given, *(["bib"] if bib else [])]) or "nothing"
        ws.vault.commit(f"edit {pid}: {what}", [ws.vault.note_path(pid)])
    return meta
