"""Zotero: every regular item of a library, its PDFs (stored, linked, missing), notes and annotations. Read-only.

A running Zotero holds `zotero.sqlite` locked (and in WAL mode), so the database and its `-wal` file are copied
to a temporary folder and the copy is read; the user's files are never opened for writing.
"""

from __future__ import annotations

import datetime as _dt
import functools
import html
import os
import re
import shutil
import sqlite3
import tempfile
import time
from pathlib import Path
from dataclasses import dataclass, field
from typing import Callable, Iterator
from urllib.parse import quote

import nh3

from papervault.errors import SourceError
from papervault.models import SourceRecord
from papervault.sources.dedup import normalize_arxiv, normalize_doi
from papervault.sources.files import order_main_first
from papervault.sources.limits import cap_record
from papervault.sources.problems import SourceProblem

REQUIRED_TABLES = ("items", "itemTypes", "fields", "itemData", "itemDataValues", "creators", "itemCreators",
                   "itemAttachments", "libraries")
NON_REGULAR = ("attachment", "note", "annotation")
TITLE_FIELDS = ("title", "caseName", "nameOfAct", "subject")
VENUE_FIELDS = ("publicationTitle", "proceedingsTitle", "bookTitle", "conferenceName", "websiteTitle", "blogTitle",
                "forumTitle", "programTitle", "encyclopediaTitle", "dictionaryTitle", "university", "institution",
                "repository", "publisher")
ANNOTATION_TYPES = {1: "highlight", 2: "note", 3: "image", 4: "ink", 5: "underline", 6: "text"}
CHUNK = 500   # items read per round of queries: bounded memory on big libraries, few queries on small ones


def default_data_dir() -> Path:
    return Path.home() / "Zotero"


# --- HTML notes to Markdown ----------------------------------------------------------------------
#
# A note is hostile (a shared library, a note pasted from a web page): it is first reduced by nh3 to the tags a note
# needs, no attribute but a link's http(s)/zotero href, and no script or style content; markdownify then writes the
# Markdown, with every text escaped (Markdown's own characters backslashed, `<` and `>` as entities), links only to
# http(s) and zotero:// with the characters that could end a Markdown link percent-encoded, and no image at all (a
# note's image would be loaded from wherever its URL points). Headings move two levels down, under the note's own.

NOTE_TAGS = {"p", "div", "br", "hr", "h1", "h2", "h3", "h4", "h5", "h6", "ul", "ol", "li", "strong", "b", "em", "i",
             "u", "s", "del", "sub", "sup", "code", "pre", "blockquote", "a", "table", "thead", "tbody", "tr", "td",
             "th", "span"}
LINK_SCHEMES = {"http", "https", "zotero"}
_NOTE_CLEANER = nh3.Cleaner(tags=NOTE_TAGS, attributes={"a": {"href"}, "*": set()}, url_schemes=LINK_SCHEMES,
                            link_rel=None, clean_content_tags={"script", "style"}, strip_comments=True)
_LINK_SCHEME = re.compile(r"(?i)(https?|zotero)://")
_URL_ENDS = re.compile(r"[\x00-\x20\x7f<>\"'`\\()\[\]]")


def markdown_text(text: str) -> str:
    """Plain text as Markdown that shows it as written and holds no HTML: backslashes, `*`, `_`, brackets and
    backticks escaped, `<` and `>` as entities."""
    text = re.sub(r"([\\*_\[\]`])", r"\\\1", text)
    return text.replace("<", "&lt;").replace(">", "&gt;")


def _link(href: str | None) -> str | None:
    """An http(s) or zotero:// URL fit for a Markdown link (what could end the link percent-encoded), or None."""
    href = (href or "").strip()
    if not _LINK_SCHEME.match(href):
        return None
    return _URL_ENDS.sub(lambda m: quote(m.group(0), safe=""), href)


@functools.cache
def _converter():
    # deferred: markdownify loads BeautifulSoup (about 60 ms), wanted only once a note holds markup
    import markdownify

    class NoteConverter(markdownify.MarkdownConverter):
        def escape(self, text, parent_tags):
            return markdown_text(text) if text else ""

        def convert_a(self, el, text, parent_tags):
            href = _link(el.get("href"))
            prefix, suffix, text = markdownify.chomp(text)
            if not href or not text.strip():
                return prefix + text + suffix
            return f"{prefix}[{text}]({href}){suffix}"

        def convert_hN(self, n, el, text, parent_tags):
            return super().convert_hN(min(6, n + 2), el, text, parent_tags)

        def convert_pre(self, el, text, parent_tags):
            if not text.strip():
                return ""
            fence = "`" * max(3, max((len(r) for r in re.findall(r"`+", text)), default=0) + 1)
            return f"\n\n{fence}\n{text.strip(chr(10))}\n{fence}\n\n"

        def convert_img(self, el, text, parent_tags):
            return ""

    return NoteConverter(heading_style="ATX", bullets="-", autolinks=False)


def html_to_markdown(note: str) -> str:
    """A Zotero note (HTML) as Markdown: paragraphs, headings, lists, emphasis, code, quotes, tables and links kept,
    nothing else (see above)."""
    if "<" not in note:
        text = markdown_text(html.unescape(note))
    else:
        text = _converter().convert(_NOTE_CLEANER.clean(note))
    text = re.sub(r"[ \t]+\n", "\n", text)
    return re.sub(r"\n{3,}", "\n\n", text).strip()


# --- the database copy ---------------------------------------------------------------------------

COPY_TRIES = 3       # copies of a database that changed while it was copied, before the pass gives up


def _stat(path: Path) -> tuple[int, int, int] | None:
    try:
        st = path.stat()
    except FileNotFoundError:
        return None
    return st.st_size, st.st_mtime_ns, st.st_ino


def _copy_database(data_dir: Path, tmp: Path) -> Path:
    """A copy of `zotero.sqlite` with its `-wal` and `-journal` files, so that opening the copy gives SQLite's
    committed view: changes Zotero has not checkpointed yet live only in the `-wal`, and in rollback-journal mode a
    writer in the middle of a transaction has already written uncommitted pages into the database file, whose
    committed content is in the `-journal` (SQLite rolls the copy back when it first reads it). A database that
    changes while it is copied is copied again; one that keeps changing is a one-line error, nothing read."""
    db = data_dir / "zotero.sqlite"
    if not db.is_file():
        raise SourceError(f"no zotero.sqlite in {data_dir}",
                          fix="pass the Zotero data directory (Zotero: Settings > Advanced > Files and Folders)")
    target = tmp / "zotero.sqlite"
    files = [db, data_dir / "zotero.sqlite-wal", data_dir / "zotero.sqlite-journal"]
    for attempt in range(COPY_TRIES):
        before = [_stat(f) for f in files]
        try:
            for f, st in zip(files, before):
                (tmp / f.name).unlink(missing_ok=True)
                if st is not None:
                    shutil.copyfile(f, tmp / f.name)
        except FileNotFoundError:
            pass            # a -journal or -wal removed while copied: the writer committed; copy again
        except OSError as exc:
            raise SourceError(f"cannot copy {db}: {exc.strerror or exc}", fix="check the file's permissions") from None
        else:
            if [_stat(f) for f in files] == before:
                return target
        time.sleep(0.1 * (attempt + 1))
    raise SourceError(f"{db}: Zotero is writing it (it changed while it was copied); nothing was read",
                      fix="try again in a moment")


def _connect(copy: Path, original: Path) -> sqlite3.Connection:
    try:
        conn = sqlite3.connect(str(copy))
        conn.row_factory = sqlite3.Row
        names = {r[0] for r in conn.execute("SELECT name FROM sqlite_master WHERE type IN ('table', 'view')")}
    except sqlite3.DatabaseError as exc:
        raise SourceError(f"{original}: not a readable SQLite database ({exc})",
                          fix="point --zotero at the Zotero data directory that holds zotero.sqlite") from None
    missing = [t for t in REQUIRED_TABLES if t not in names]
    if missing:
        raise SourceError(f"{original}: not a Zotero database (missing tables: {', '.join(missing)})",
                          fix="point --zotero at the Zotero data directory that holds zotero.sqlite")
    return conn


def base_attachment_dir(data_dir: Path) -> Path | None:
    """Zotero's "linked attachment base directory", from `extensions.zotero.baseAttachmentPath` in prefs.js."""
    home = Path.home()
    candidates = [data_dir / "prefs.js"]
    for profiles in (home / ".zotero" / "zotero", home / "Library" / "Application Support" / "Zotero" / "Profiles",
                     Path(os.environ.get("APPDATA", home)) / "Zotero" / "Zotero" / "Profiles"):
        if profiles.is_dir():
            candidates += sorted(profiles.glob("*/prefs.js"))
    pat = re.compile(r'user_pref\("extensions\.zotero\.baseAttachmentPath",\s*"((?:[^"\\]|\\.)*)"\)')
    for prefs in candidates:
        try:
            m = pat.search(prefs.read_text(encoding="utf-8", errors="replace"))
        except OSError:
            continue
        if m:
            return Path(m.group(1).encode().decode("unicode_escape"))
    return None


# --- reading -------------------------------------------------------------------------------------

def _ids_in(rows: list[int]) -> str:
    return ",".join(str(int(i)) for i in rows) or "NULL"


def _since(value) -> str | None:
    if value is None or value == "":
        return None
    if isinstance(value, (_dt.date, _dt.datetime)):
        return value.isoformat(sep=" ") if isinstance(value, _dt.datetime) else value.isoformat()
    try:
        return _dt.date.fromisoformat(str(value)[:10]).isoformat()
    except ValueError:
        raise SourceError(f"--since {value!r} is not a date", fix="use YYYY-MM-DD") from None


def _collection_ids(conn: sqlite3.Connection, name: str) -> list[int]:
    """The collection named `name` (case-insensitive; or a path "Parent/Child") and all its sub-collections."""
    rows = conn.execute("SELECT collectionID, collectionName, parentCollectionID FROM collections").fetchall()
    by_id = {r["collectionID"]: r for r in rows}

    def path(cid):
        parts = []
        while cid is not None and cid in by_id and len(parts) < 64:
            parts.append(by_id[cid]["collectionName"])
            cid = by_id[cid]["parentCollectionID"]
        return "/".join(reversed(parts))

    want = name.strip().lower()
    roots = [r["collectionID"] for r in rows
             if r["collectionName"].lower() == want or path(r["collectionID"]).lower() == want]
    if not roots:
        known = ", ".join(sorted({r["collectionName"] for r in rows})[:8]) or "none"
        raise SourceError(f"no Zotero collection named {name!r}", fix=f"use one of: {known}")
    out, todo = set(), list(roots)
    while todo:
        cid = todo.pop()
        if cid in out:
            continue
        out.add(cid)
        todo += [r["collectionID"] for r in rows if r["parentCollectionID"] == cid]
    return sorted(out)


def _db_text(value) -> str | None:
    """A value of the database as text: a string as it is, a number as its digits; a BLOB (or a bool) is none."""
    if isinstance(value, str):
        return value if value.strip() else None
    if isinstance(value, (int, float)) and not isinstance(value, bool):
        return str(value)
    return None


def _year(date: str | None) -> int | None:
    m = re.match(r"\s*(\d{4})", date or "") or re.search(r"\b(1[5-9]\d\d|20\d\d)\b", date or "")
    y = int(m.group(1)) if m else 0
    return y if y > 0 else None


def _extra_field(extra: str, name: str) -> str | None:
    m = re.search(rf"^\s*{name}\s*:\s*(.+?)\s*$", extra or "", re.M | re.I)
    return m.group(1) if m else None


class _Library:
    def __init__(self, conn: sqlite3.Connection, data_dir: Path, base_dir: Path | None):
        self.conn, self.data_dir, self.base_dir = conn, data_dir, base_dir
        tables = {r[0] for r in conn.execute("SELECT name FROM sqlite_master WHERE type='table'")}
        self.tables = tables
        self.types = self._names("itemTypes", "itemTypeID", "typeName")
        self.fields = self._names("fields", "fieldID", "fieldName")
        self.creator_types = self._names("creatorTypes", "creatorTypeID", "creatorType") if "creatorTypes" in tables else {}
        self.deleted = "deletedItems" in tables
        self.groups = {}
        if "groups" in tables:
            self.groups = {r[0]: r[1] for r in conn.execute("SELECT libraryID, groupID FROM groups")}

    def _names(self, table: str, idcol: str, namecol: str) -> dict[int, str]:
        out = {r[0]: r[1] for r in self.conn.execute(f"SELECT {idcol}, {namecol} FROM {table}")}
        combined = table + "Combined"
        if combined in self.tables:
            out.update({r[0]: r[1] for r in self.conn.execute(f"SELECT {idcol}, {namecol} FROM {combined}")})
        return out

    def _not_deleted(self, col: str) -> str:
        return f"AND {col} NOT IN (SELECT itemID FROM deletedItems)" if self.deleted else ""

    def item_ids(self, collection: str | None, since: str | None) -> list[tuple[int, str, int, str]]:
        type_ids = [i for i, n in self.types.items() if n not in NON_REGULAR]
        att_type = [i for i, n in self.types.items() if n == "attachment"]
        sql = (f"SELECT i.itemID, i.key, i.libraryID, i.itemTypeID FROM items i JOIN libraries l USING (libraryID) "
               f"WHERE l.type != 'feed' {self._not_deleted('i.itemID')} "
               f"AND (i.itemTypeID IN ({_ids_in(type_ids)}) OR (i.itemTypeID IN ({_ids_in(att_type)}) AND i.itemID IN "
               f"(SELECT itemID FROM itemAttachments WHERE parentItemID IS NULL)))")
        args: list = []
        if since:
            sql += " AND (i.dateModified >= ? OR i.dateAdded >= ?)"
            args += [since, since]
        if collection:
            cids = _collection_ids(self.conn, collection)
            sql += f" AND i.itemID IN (SELECT itemID FROM collectionItems WHERE collectionID IN ({_ids_in(cids)}))"
        sql += " ORDER BY i.itemID"
        return [(r[0], r[1], r[2], self.types.get(r[3], "")) for r in self.conn.execute(sql, args)]

    def _group_rows(self, sql: str, ids: list[int]) -> dict[int, list[sqlite3.Row]]:
        out: dict[int, list[sqlite3.Row]] = {}
        for r in self.conn.execute(sql.format(ids=_ids_in(ids))):
            out.setdefault(r[0], []).append(r)
        return out

    def records(self, items: list[tuple[int, str, int, str]], source_dir: Path) -> Iterator[SourceRecord | SourceProblem]:
        for start in range(0, len(items), CHUNK):
            chunk = items[start:start + CHUNK]
            ids = [i[0] for i in chunk]
            data = self._group_rows("SELECT d.itemID, d.fieldID, v.value FROM itemData d "
                                    "JOIN itemDataValues v USING (valueID) WHERE d.itemID IN ({ids})", ids)
            creators = self._group_rows("SELECT ic.itemID, c.firstName, c.lastName, c.fieldMode, ic.creatorTypeID "
                                        "FROM itemCreators ic JOIN creators c USING (creatorID) "
                                        "WHERE ic.itemID IN ({ids}) ORDER BY ic.itemID, ic.orderIndex", ids)
            atts = self._group_rows("SELECT a.parentItemID, a.itemID, a.linkMode, a.contentType, a.path, i.key "
                                    "FROM itemAttachments a JOIN items i ON i.itemID = a.itemID "
                                    f"WHERE a.parentItemID IN ({{ids}}) {self._not_deleted('a.itemID')}", ids)
            # standalone attachments are their own parent
            own = self._group_rows("SELECT a.itemID, a.itemID, a.linkMode, a.contentType, a.path, i.key "
                                   "FROM itemAttachments a JOIN items i ON i.itemID = a.itemID "
                                   "WHERE a.parentItemID IS NULL AND a.itemID IN ({ids})", ids)
            for k, v in own.items():
                atts.setdefault(k, []).extend(v)
            att_ids = [r[1] for rows in atts.values() for r in rows]
            att_data = self._group_rows("SELECT d.itemID, d.fieldID, v.value FROM itemData d "
                                        "JOIN itemDataValues v USING (valueID) WHERE d.itemID IN ({ids})", att_ids)
            notes = self._group_rows("SELECT n.parentItemID, n.note FROM itemNotes n WHERE n.parentItemID IN ({ids}) "
                                     f"{self._not_deleted('n.itemID')} ORDER BY n.itemID", ids) \
                if "itemNotes" in self.tables else {}
            annots = self._group_rows("SELECT parentItemID, type, text, comment, pageLabel, sortIndex FROM itemAnnotations "
                                      f"WHERE parentItemID IN ({{ids}}) {self._not_deleted('itemID')} "
                                      "ORDER BY parentItemID, sortIndex", att_ids) \
                if "itemAnnotations" in self.tables else {}
            tags = self._group_rows("SELECT it.itemID, t.name FROM itemTags it JOIN tags t USING (tagID) "
                                    "WHERE it.itemID IN ({ids}) ORDER BY t.name", ids) if "itemTags" in self.tables else {}
            colls = self._group_rows("SELECT ci.itemID, c.collectionName FROM collectionItems ci "
                                     "JOIN collections c USING (collectionID) WHERE ci.itemID IN ({ids}) "
                                     "ORDER BY c.collectionName", ids) if "collectionItems" in self.tables else {}
            for item_id, key, library_id, type_name in chunk:
                try:
                    yield cap_record(self._record(item_id, key, library_id, type_name, data.get(item_id, []),
                                                  creators.get(item_id, []), atts.get(item_id, []), att_data,
                                                  notes.get(item_id, []), annots, tags.get(item_id, []),
                                                  colls.get(item_id, [])))
                except Exception as exc:  # one odd item never stops the library
                    yield SourceProblem(f"zotero item {key}", f"skipped: {type(exc).__name__}: {exc}")

    def _uri(self, library_id: int, key: str) -> str:
        if library_id in self.groups:
            return f"zotero://select/groups/{self.groups[library_id]}/items/{key}"
        return f"zotero://select/library/items/{key}"

    def _attachment_path(self, link_mode: int | None, path: str | None, att_key: str) -> Path | None:
        if not path:
            return None
        if path.startswith("storage:"):
            return self.data_dir / "storage" / att_key / path[len("storage:"):]
        if path.startswith("attachments:"):
            if self.base_dir is None:
                return Path("<linked attachment base directory not set>") / path[len("attachments:"):]
            return self.base_dir / path[len("attachments:"):]
        if link_mode == 3:   # a linked URL, not a file
            return None
        return Path(path)

    def _record(self, item_id, key, library_id, type_name, data_rows, creator_rows, att_rows, att_data, note_rows,
                annots, tag_rows, coll_rows) -> SourceRecord:
        # every value is of the type SQLite hands over, which a column does not fix: text stays text, a number
        # becomes its digits, a BLOB is nothing; `cap_record` bounds their sizes after
        f = {self.fields.get(r[1], str(r[1])): v for r in data_rows if (v := _db_text(r[2])) is not None}
        extra = f.get("extra") or ""
        warnings: list[str] = []
        authors = []
        names = [(_db_text(r[1]), _db_text(r[2]), r[3], self.creator_types.get(r[4], "author")) for r in creator_rows]
        primary = [n for n in names if n[3] == "author"] or names
        for first, last, mode, _ in primary:
            name = (last or "") if mode == 1 else f"{first or ''} {last or ''}".strip()
            if name:
                authors.append(name)
        pdfs, missing, notes = [], [], []
        for _, att_id, link_mode, ctype, path, att_key in att_rows:
            ctype, path, att_key = _db_text(ctype), _db_text(path), _db_text(att_key)
            if att_key is None:
                continue
            is_pdf = (ctype or "").lower() == "application/pdf" or (path or "").lower().endswith(".pdf")
            if not is_pdf:
                continue
            p = self._attachment_path(link_mode, path, att_key)
            if p is None:
                continue
            (pdfs if p.is_file() else missing).append(str(p))
            marks = annots.get(att_id, [])
            if marks:
                att_title = _db_text({self.fields.get(r[1]): r[2] for r in att_data.get(att_id, [])}.get("title")) \
                    or Path(str(p)).name
                notes.append(_annotations_markdown(att_title, marks))
        if missing:
            warnings.append("attachment file(s) missing, imported as metadata only: " + ", ".join(missing)
                            if not pdfs else "attachment file(s) missing: " + ", ".join(missing))
        notes = [html_to_markdown(html) for r in note_rows if (html := _db_text(r[1]))] + notes
        title = next((f[t] for t in TITLE_FIELDS if f.get(t)), None)
        if type_name == "attachment" and not title and pdfs:
            title = Path(pdfs[0]).stem
        doi_raw = f.get("DOI") or _extra_field(extra, "DOI")
        arxiv = (normalize_arxiv(f.get("archiveID")) or normalize_arxiv(_extra_field(extra, "arXiv"))
                 or normalize_arxiv(doi_raw) or normalize_arxiv(f.get("url")))
        if not arxiv and (f.get("repository") or "").lower() == "arxiv":
            arxiv = normalize_arxiv(f.get("number"))
        ckey = f.get("citationKey") or _extra_field(extra, "Citation Key")
        return SourceRecord(
            origin="zotero", source=self._uri(library_id, key), key=ckey, title=title, authors=authors,
            year=_year(f.get("date")), venue=next((f[v] for v in VENUE_FIELDS if f.get(v)), None),
            doi=normalize_doi(doi_raw), arxiv=arxiv, url=f.get("url"), abstract=f.get("abstractNote"),
            tags=[t for r in tag_rows if (t := _db_text(r[1]))],
            collections=list(dict.fromkeys(c for r in coll_rows if (c := _db_text(r[1])))),
            zotero_key=key, pdfs=order_main_first(pdfs), reader_notes=[n for n in notes if n], warnings=warnings,
        )


def _annotations_markdown(title: str, rows) -> str:
    """A PDF's annotations as one Markdown note: quoted highlights, comments, page labels, in reading order; their
    text is plain text, shown as written (`markdown_text`)."""
    lines = [f"#### Annotations on {markdown_text(title)}"]
    for _, kind, text, comment, page, _sort in rows:
        text, comment, page = _db_text(text), _db_text(comment), _db_text(page)
        label = f" (p. {markdown_text(str(page))})" if page else ""
        kind = ANNOTATION_TYPES.get(kind, "note")
        text, comment = markdown_text(text or ""), markdown_text(comment or "")
        if text.strip():
            lines.append("> " + text.strip().replace("\n", "\n> ") + label)
            if comment.strip():
                lines.append(comment.strip())
        elif comment.strip():
            lines.append(f"{comment.strip()}{label}")
        elif kind in ("image", "ink"):
            lines.append(f"({kind} annotation{label})")
        lines.append("")
    return "\n".join(lines).strip()


def read_library(data_dir: str | Path | None = None, *, collection: str | None = None, since=None,
                 base_dir: str | Path | None = None) -> Iterator[SourceRecord | SourceProblem]:
    """Every regular item of a Zotero library (not in the trash) as a record, read from a copy of the database.

    Args:
        data_dir: the Zotero data directory (holds zotero.sqlite and storage/); default ~/Zotero.
        collection: only items in this collection (by name or "Parent/Child" path) or its sub-collections.
        since: only items added or modified on or after this date (YYYY-MM-DD).
        base_dir: where `attachments:` paths point; default Zotero's own setting from prefs.js.
    """
    data_dir = Path(data_dir).expanduser().resolve() if data_dir else default_data_dir()
    if not data_dir.is_dir():
        raise SourceError(f"no Zotero data directory at {data_dir}",
                          fix="pass --zotero DIR (Zotero: Settings > Advanced > Files and Folders)")
    since_s = _since(since)
    base = Path(base_dir).expanduser() if base_dir else base_attachment_dir(data_dir)
    tmp = Path(tempfile.mkdtemp(prefix="papervault-zotero-"))
    try:
        copy = _copy_database(data_dir, tmp)
        conn = _connect(copy, data_dir / "zotero.sqlite")
        try:
            lib = _Library(conn, data_dir, base)
            items = lib.item_ids(collection, since_s)
            yield from lib.records(items, data_dir)
        except sqlite3.DatabaseError as exc:
            raise SourceError(f"{data_dir / 'zotero.sqlite'}: unexpected database ({exc})",
                              fix="update papervault, or export the library as Better BibTeX JSON and add that") from None
        finally:
            conn.close()
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


# --- what a sync pass reads ---------------------------------------------------------------------------------


@dataclass
class FollowedItems:
    """What one sync pass reads of a library, from one copy of its database: the followed items by key with
    their stamps, the records of the items `read_followed` was asked to read, and what it knows of the others."""

    stamps: dict[str, str] = field(default_factory=dict)        # key -> stamp (`item_stamps`)
    records: dict[str, SourceRecord] = field(default_factory=dict)      # key -> record, for the items read
    problems: list[SourceProblem] = field(default_factory=list)
    trashed: set[str] = field(default_factory=set)              # keys of items in Zotero's trash
    all_keys: set[str] = field(default_factory=set)             # every item's key, followed or not


def item_stamps(lib: _Library) -> dict[int, str]:
    """Per item: its highest version and dateModified with those of its attachments, notes and annotations, and
    how many of them there are (a child moved to the trash changes the count)."""
    nd = (lambda col: f" AND {col} NOT IN (SELECT itemID FROM deletedItems)") if lib.deleted else (lambda col: "")
    parts = ["SELECT itemID AS root, version, dateModified FROM items",
             "SELECT a.parentItemID, i.version, i.dateModified FROM itemAttachments a JOIN items i "
             "ON i.itemID = a.itemID WHERE a.parentItemID IS NOT NULL" + nd("a.itemID")]
    if "itemNotes" in lib.tables:
        parts.append("SELECT n.parentItemID, i.version, i.dateModified FROM itemNotes n JOIN items i "
                     "ON i.itemID = n.itemID WHERE n.parentItemID IS NOT NULL" + nd("n.itemID"))
    if "itemAnnotations" in lib.tables:
        parts.append("SELECT a.parentItemID, i.version, i.dateModified FROM itemAnnotations an "
                     "JOIN itemAttachments a ON a.itemID = an.parentItemID JOIN items i ON i.itemID = an.itemID "
                     "WHERE a.parentItemID IS NOT NULL" + nd("an.itemID"))
    sql = ("SELECT root, MAX(version), MAX(dateModified), COUNT(*) FROM (" + " UNION ALL ".join(parts)
           + ") GROUP BY root")
    return {r[0]: f"{r[1]}|{r[2]}|{r[3]}" for r in lib.conn.execute(sql)}


def read_followed(data_dir: Path, collections: list[str], read: Callable[[str, str], bool]) -> FollowedItems:
    """The items of `collections` (all items when empty) with their stamps, and the records of those for which
    `read(key, stamp)` is true (new or changed since the last pass), from one copy of the database.
    sqlite3.OperationalError when the database cannot be read (Zotero writing it)."""
    db = data_dir / "zotero.sqlite"
    out = FollowedItems()
    tmp = Path(tempfile.mkdtemp(prefix="papervault-sync-"))
    try:
        copy = _copy_database(data_dir, tmp)
        conn = _connect(copy, db)
        try:
            lib = _Library(conn, data_dir, base_attachment_dir(data_dir))
            items: dict[int, tuple] = {}
            for coll in (collections or [None]):
                for row in lib.item_ids(coll, None):
                    items[row[0]] = row
            stamps = item_stamps(lib)
            out.trashed = {r[0] for r in conn.execute("SELECT i.key FROM items i JOIN deletedItems d USING (itemID)")} \
                if lib.deleted else set()
            out.all_keys = {r[0] for r in conn.execute("SELECT key FROM items")}
            out.stamps = {row[1]: stamps.get(iid, "") for iid, row in items.items()}
            todo = [row for row in items.values() if read(row[1], out.stamps[row[1]])]
            for r in lib.records(sorted(todo), data_dir):
                if isinstance(r, SourceRecord):
                    out.records[r.zotero_key] = r
                else:
                    out.problems.append(r)
        finally:
            conn.close()
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    return out
