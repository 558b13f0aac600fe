"""A person's corrections of a paper's identity (`papervault edit`): they win over every source and survive
re-imports, re-parses and re-analyses, because imports only fill fields that are empty."""

from __future__ import annotations

import re

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
        refresh_head(ws.vault, pid)
        what = ", ".join([*given, *(["bib"] if bib else [])]) or "nothing"
        ws.vault.commit(f"edit {pid}: {what}", [ws.vault.note_path(pid)])
    return meta


def refresh_head(vault, pid: str) -> bool:
    """Make the note's own head (title, Authors, Published) say what its record says now, after `edit`,
    `enrich` or a merge changed the record; a body a person edited stays as they left it. True if written."""
    if vault.is_edited(pid):
        return False
    meta, body = vault.read_note(pid)
    fresh = refresh_note_head(body, meta)
    if fresh == body:
        return False
    vault.write_note(meta, fresh)
    return True


_HEAD_FIELD = re.compile(r"^\*\*(Authors|Published):\*\*")
_HEAD_LABEL = re.compile(r"^\*\*[^*\n]+:\*\*")


def refresh_note_head(body: str, meta: PaperMeta) -> str:
    """`body` with the lines the note template makes from the record (the `# title` heading and the
    `**Authors:**` / `**Published:**` lines before the first section) made again from `meta`; the rest of
    the body is kept byte for byte. A head without labelled lines (a metadata-only note) only gets its title."""
    lines = body.split("\n")
    end = next((i for i, line in enumerate(lines) if line.startswith("## ")), len(lines))
    head, rest = lines[:end], lines[end:]
    one_line = lambda s: " ".join(str(s).split())        # noqa: E731 - a title or name never spans lines
    title = next((i for i, line in enumerate(head) if line.startswith("# ")), None)
    if title is not None:
        head[title] = f"# {one_line(meta.title or meta.id)}"
    kept = [line for line in head if not _HEAD_FIELD.match(line)]
    at = next((i for i, line in enumerate(head) if _HEAD_LABEL.match(line)), None)
    if at is None:
        return "\n".join(head + rest)
    published = ", ".join(one_line(x) for x in (meta.venue, meta.year) if x)
    new = ([f"**Authors:** {one_line(', '.join(meta.authors))}  "] if meta.authors else []) + \
          ([f"**Published:** {published}  "] if published else [])
    return "\n".join(kept[:at] + new + kept[at:] + rest)


_TEXT_SUFFIXES = {".md", ".bib", ".json", ".yaml", ".yml", ".txt"}


def _rewrite(text: str, old: str, new: str) -> str:
    """Citations (`[@old`, `@old`), links (`papers/old/`, `../old/`) and bibliography keys (`{old,`,
    `"id": "old"`)."""
    import re

    o = re.escape(old)
    text = re.sub(rf"(?<![\w@]){re.escape('@')}{o}(?![A-Za-z0-9_]|[.:-][A-Za-z0-9_])", f"@{new}", text)
    text = re.sub(rf"(?<![\w.-])papers/{o}/", f"papers/{new}/", text)
    text = re.sub(rf"(?<![\w.-])\.\./{o}/", f"../{new}/", text)     # a note's link to another paper
    text = re.sub(rf"(@\w+\{{){o},", rf"\g<1>{new},", text)
    text = re.sub(rf'("id":\s*"){o}"', rf'\g<1>{new}"', text)
    return text


def rekey(ws: Workspace, pid: str, new: str | None = None) -> dict:
    """Rename paper `pid` everywhere in one commit: its folder (git mv), citations and links in notes and
    surveys, the surveys' bibliographies and the index; the old id stays in `aliases`, so `[@old]` resolves."""
    from papervault.ids import make_key
    from papervault.vault.store import check_id

    ws.require()
    with ws.write_lock("rekey"):
        vault = ws.vault
        meta = vault.read_meta(pid)
        taken = set(vault.paper_ids()) - {pid}
        for other in taken:
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
        vault.repo.git.mv(str(vault.paper_dir(pid)), str(vault.paper_dir(new)))
        aliases = [a for a in dict.fromkeys([*meta.aliases, pid]) if a != new]   # renamed back: no self-alias
        vault.update_meta(new, id=new, aliases=aliases)
        changed = [str(vault.note_path(new).relative_to(vault.root))]
        for path in sorted(vault.root.rglob("*")):
            if ".git" in path.parts or not path.is_file() or path.suffix not in _TEXT_SUFFIXES:
                continue
            try:
                text = path.read_text(encoding="utf-8")
            except (OSError, UnicodeDecodeError):
                continue
            if pid not in text:
                continue
            out = _rewrite(text, pid, new)
            if out != text:
                path.write_text(out, encoding="utf-8")
                changed.append(str(path.relative_to(vault.root)))
        vault.commit(f"rekey {pid} -> {new}")
    indexed = False
    try:
        from papervault.index.store import PaperIndex

        if ws.index_dir.exists():
            PaperIndex(ws).sync()
            indexed = True
    except Exception as exc:  # the rename stands; the index catches up on the next `papervault index`
        return {"id": pid, "new": new, "changed": changed, "index": f"not updated: {exc}"}
    return {"id": pid, "new": new, "changed": changed, "index": "updated" if indexed else "none"}
