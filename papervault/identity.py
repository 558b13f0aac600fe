"""A person's corrections of a paper's identity (`papervault edit`): they win over every source and survive
re-imports, re-parses and re-analyses, because imports only fill fields that are empty."""

from __future__ import annotations

import os
import re
from pathlib import Path
from typing import Callable

from papervault.errors import PapervaultError, UnsafePathError
from papervault.models import PaperMeta
from papervault.pages import from_pages_field
# The note head is rewritten in vault/head.py (imports refresh it too); the names stay importable from here.
from papervault.vault.head import refresh_head, refresh_note_head  # noqa: F401
from papervault.workspace import Workspace
from papervault.ids import READ_FROM_PDF, _ascii_word, last_name, make_key, normalize_title
from papervault.sources.dedup import normalize_arxiv, normalize_doi
from papervault.sources.limits import FIELD_CAPS, MAX_AUTHORS, MAX_AUTHOR_CHARS
from papervault.vault.store import check_id

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
    given = _checked({k: v for k, v in changes.items() if v is not None})
    if "year" in given and not (0 < int(given["year"]) < 10000):
        raise EditError(f"year {given['year']} is not a year", fix="give a four-digit year, e.g. --year 2001")
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
            extra["page_labels"] = from_pages_field(new_bib.get("pages"), meta.pages)
        meta = ws.vault.update_meta(pid, provenance=prov, bib=new_bib, **given, **extra)
        refresh_head(ws.vault, pid)
        what = ", ".join([*given, *(["bib"] if bib else [])]) or "nothing"
        ws.vault.commit(f"edit {pid}: {what}", [ws.vault.note_path(pid)])
    return meta


def _checked(given: dict) -> dict:
    """The fields of an edit checked the way an import checks them (`papervault.sources`): a DOI and an arXiv id
    must be one (normalised as an import stores them; `javascript:...` or `../../x` is refused), and text fields
    are one line within the caps an import keeps (`papervault.sources.limits`); past a cap an edit is refused,
    not cut, since a person can shorten it."""
    out = dict(given)
    for name in ("title", "venue"):
        if name in out:
            text = " ".join(str(out[name]).split())        # one line: a title never spans lines
            if len(text) > FIELD_CAPS[name]:
                raise EditError(f"the {name} is {len(text):,} characters, more than the {FIELD_CAPS[name]:,} an "
                                f"import keeps", fix=f"give a shorter {name}")
            out[name] = text
    if "title" in out and not out["title"]:
        raise EditError("the title cannot be empty", fix="give the paper's title, e.g. --title 'Paxos Made Simple'")
    if "authors" in out:
        authors = [" ".join(str(a).split()) for a in out["authors"] if a and str(a).strip()]
        if len(authors) > MAX_AUTHORS or any(len(a) > MAX_AUTHOR_CHARS for a in authors):
            raise EditError(f"at most {MAX_AUTHORS:,} authors of at most {MAX_AUTHOR_CHARS} characters each",
                            fix="give the authors' names, one --author each")
        out["authors"] = authors
    if "doi" in out:
        doi = normalize_doi(out["doi"]) if len(str(out["doi"])) <= FIELD_CAPS["doi"] else None
        if doi is None:
            raise EditError(f"{_shown(out['doi'])} is not a DOI", fix="give a DOI such as 10.1145/279227.279229")
        out["doi"] = doi
    if "arxiv" in out:
        arxiv = normalize_arxiv(out["arxiv"]) if len(str(out["arxiv"])) <= FIELD_CAPS["arxiv"] else None
        if arxiv is None:
            raise EditError(f"{_shown(out['arxiv'])} is not an arXiv id",
                            fix="give an arXiv id such as 2106.04561 or hep-th/9901001")
        out["arxiv"] = arxiv
    return out


def _shown(value) -> str:
    """A rejected value in an error line: quoted, on one line, at most 80 characters."""
    text = repr(str(value))
    return text if len(text) <= 80 else text[:77] + "..."


_TEXT_SUFFIXES = {".md", ".bib", ".json", ".yaml", ".yml", ".txt"}


def _rewrite(text: str, old: str, new: str) -> str:
    """Citations (`[@old`, `@old`), links (`papers/old/`, `../old/`) and bibliography keys (`{old,`,
    `"id": "old"`)."""
    o = re.escape(old)
    text = re.sub(rf"(?<![\w@]){re.escape('@')}{o}(?![A-Za-z0-9_]|[.:-][A-Za-z0-9_])", f"@{new}", text)
    text = re.sub(rf"(?<![\w.-])papers/{o}/", f"papers/{new}/", text)
    text = re.sub(rf"(?<![\w.-])\.\./{o}/", f"../{new}/", text)     # a note's link to another paper
    text = re.sub(rf"(@\w+\{{){o},", rf"\g<1>{new},", text)
    text = re.sub(rf'("id":\s*"){o}"', rf'\g<1>{new}"', text)
    return text


def rekey(ws: Workspace, pid: str, new: str | None = None, *, reindex: Callable[[Workspace], dict] | None = None) -> dict:
    """Rename paper `pid` everywhere in one commit: its folder (git mv), citations and links in notes and
    surveys, the surveys' bibliographies; the old id stays in `aliases`, so `[@old]` resolves. Then the index,
    through `reindex(ws)`: the application's one index update (`papervault.app.indexing`), which the command
    passes; its report's `error` is the rename's `index` line."""
    ws.require()
    with ws.write_lock("rekey"):
        vault = ws.vault
        meta = vault.read_meta(pid)
        others = set(vault.paper_ids()) - {pid}
        taken = set(others)
        for other in others:        # not the set being grown: a second rekey once a paper has an alias
            try:
                taken.update(vault.read_meta(other).aliases)
            except Exception:
                continue
        if new is None:
            new = make_key(meta.authors, meta.year, meta.title, taken)
        try:
            check_id(new)
        except PapervaultError:
            raise EditError(f"{new!r} is not a valid id", fix="ids look like lamport2001paxos") from None
        if new == pid:
            return {"id": pid, "new": new, "changed": []}
        if new in taken or vault.paper_dir(new).exists():
            raise EditError(f"the id {new!r} is taken", fix="choose another id, or leave NEW out for a fresh one")
        vault.move(vault.paper_dir(pid), vault.paper_dir(new))      # the write guard checks both ends
        aliases = [a for a in dict.fromkeys([*meta.aliases, pid]) if a != new]   # renamed back: no self-alias
        vault.update_meta(new, id=new, aliases=aliases)
        changed = [str(vault.note_path(new).relative_to(vault.root))]
        refused: list[str] = []
        for path in sorted(vault.root.rglob("*")):
            if ".git" in path.relative_to(vault.root).parts or path.suffix not in _TEXT_SUFFIXES:
                continue
            try:
                vault.guard(path)               # a link out of the vault is neither read nor written
            except UnsafePathError as exc:
                refused.append(str(exc))
                continue
            real = Path(os.path.realpath(path))
            if not real.is_file():
                continue
            try:
                text = real.read_text(encoding="utf-8")
            except (OSError, UnicodeDecodeError):
                continue
            if pid not in text:
                continue
            out = _rewrite(text, pid, new)
            if out != text:
                vault.write(real, out)           # the file a link inside the vault names; the link stays
                changed.append(str(path.relative_to(vault.root)))
        vault.commit(f"rekey {pid} -> {new}", [vault.root])       # what rekey moved and rewrote, nothing else
    index = "none"
    if reindex is not None and ws.index_dir.exists():
        try:
            got = reindex(ws)
            index = f"not updated: {got['error']}" if got.get("error") else "updated"
        except Exception as exc:  # the rename stands; the index catches up on the next `papervault index`
            index = f"not updated: {exc}"
    return {"id": pid, "new": new, "changed": changed, "index": index, "refused": refused}


def identity_doubt(meta: PaperMeta) -> str | None:
    """Why a paper's identity is low-confidence, or None: a title the header reader chose with low confidence
    (`provenance.title_confidence`), an id whose author part is "anon" while the paper has a title from its
    PDF, or an id whose author part is a word of the title (an author line read as the title, or the title
    as authors); where a model read the first page, a field the page did not settle between the parse and the
    model (`identity.uncertain`), or an id made before the model read other authors. Fields a person or a library gave, or `enrich` resolved, are never doubted."""
    prov = meta.provenance or {}
    unsettled = [f for f in (meta.identity or {}).get("uncertain") or [] if prov.get(f) in READ_FROM_PDF]
    if unsettled:
        return f"the parse and the model's first-page read disagree on {', '.join(unsettled)}; the page does not settle it"
    surname = _ascii_word(last_name(meta.authors[0]))[:30] if meta.authors else ""
    if prov.get("authors") == "model" and surname and not meta.id.lower().startswith(surname):
        return f"the id was made before the model read the authors ({meta.authors[0]}): `papervault rekey {meta.id}`"
    if prov.get("title") not in READ_FROM_PDF:
        return None
    if prov.get("title_confidence") == "low":
        return f"title read with low confidence ({prov.get('title_evidence') or 'no evidence'})"
    if prov.get("authors") in (None, *READ_FROM_PDF):
        name = _ascii_word(last_name(meta.authors[0])) if meta.authors else ""
        if not name and meta.id.startswith("anon"):
            return "no authors found: the id starts with anon"
        if name and name in normalize_title(meta.title).split():
            return f"the id's author part {name!r} is a word of the title"
    return None


def doubtful(vault) -> list[dict]:
    """Papers whose identity is low-confidence: `[{"id", "title", "why"}]` (`status`, `doctor`, `review`)."""
    out = []
    for pid in vault.paper_ids():
        try:
            meta = vault.read_meta(pid)
        except Exception:
            continue   # a broken note is doctor's "notes" check
        why = identity_doubt(meta)
        if why:
            out.append({"id": pid, "title": meta.title, "why": why})
    return out
