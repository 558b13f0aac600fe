"""Builds real-shaped Zotero libraries (Zotero's own schema from ../shared/zotero) for the sources tests and bench."""

from __future__ import annotations

import os
import random
import sqlite3
import string
from pathlib import Path

SHARED_ZOTERO = Path(os.environ.get("PAPERVAULT_SHARED", Path(__file__).resolve().parent.parent.parent / "shared")) / "zotero"

ITEM_TYPES = ["journalArticle", "conferencePaper", "preprint", "book", "bookSection", "thesis", "report",
              "webpage", "attachment", "note", "annotation", "manuscript"]
FIELDS = ["title", "abstractNote", "date", "DOI", "url", "publicationTitle", "proceedingsTitle", "extra",
          "archiveID", "publisher", "university", "citationKey"]
CREATOR_TYPES = ["author", "editor", "contributor"]


def _key(rnd: random.Random) -> str:
    return "".join(rnd.choice(string.ascii_uppercase + string.digits) for _ in range(8))


class ZoteroBuilder:
    """`ZoteroBuilder(dir)` makes `dir/zotero.sqlite` with Zotero's schema; methods insert items as Zotero does."""

    def __init__(self, data_dir: Path, schema_dir: Path = SHARED_ZOTERO, seed: int = 7):
        self.dir = Path(data_dir)
        self.dir.mkdir(parents=True, exist_ok=True)
        self.db = sqlite3.connect(self.dir / "zotero.sqlite")
        self.db.executescript((schema_dir / "system.sql").read_text())
        self.db.executescript((schema_dir / "userdata.sql").read_text())
        self.rnd = random.Random(seed)
        for i, t in enumerate(ITEM_TYPES, 1):
            self.db.execute("INSERT INTO itemTypes (itemTypeID, typeName) VALUES (?, ?)", (i, t))
        for i, f in enumerate(FIELDS, 1):
            self.db.execute("INSERT INTO fields (fieldID, fieldName) VALUES (?, ?)", (i, f))
        for i, c in enumerate(CREATOR_TYPES, 1):
            self.db.execute("INSERT INTO creatorTypes (creatorTypeID, creatorType) VALUES (?, ?)", (i, c))
        self.db.execute("INSERT INTO libraries (libraryID, type, editable, filesEditable) VALUES (1, 'user', 1, 1)")
        self.type_id = {t: i for i, t in enumerate(ITEM_TYPES, 1)}
        self.field_id = {f: i for i, f in enumerate(FIELDS, 1)}
        self.next_item = 1
        self.next_value = 1
        self.values: dict[str, int] = {}
        self.next_creator = 1
        self.creators: dict[tuple, int] = {}
        self.tags: dict[str, int] = {}
        self.collections: dict[str, int] = {}

    def _item(self, type_name: str, date_added: str = "2024-01-01 10:00:00", key: str | None = None) -> tuple[int, str]:
        iid, key = self.next_item, key or _key(self.rnd)
        self.next_item += 1
        self.db.execute("INSERT INTO items (itemID, itemTypeID, dateAdded, dateModified, clientDateModified, libraryID, key) "
                        "VALUES (?, ?, ?, ?, ?, 1, ?)", (iid, self.type_id[type_name], date_added, date_added, date_added, key))
        return iid, key

    def _set(self, iid: int, field: str, value: str) -> None:
        vid = self.values.get(value)
        if vid is None:
            vid = self.values[value] = self.next_value
            self.next_value += 1
            self.db.execute("INSERT INTO itemDataValues (valueID, value) VALUES (?, ?)", (vid, value))
        self.db.execute("INSERT INTO itemData (itemID, fieldID, valueID) VALUES (?, ?, ?)", (iid, self.field_id[field], vid))

    def item(self, type_name: str = "journalArticle", *, authors: list[tuple[str, str]] = (), date_added: str | None = None,
             tags: list[str] = (), collections: list[str] = (), **fields: str) -> tuple[int, str]:
        """A regular item; `authors` as (first, last) pairs (first "" = single-field name); fields by Zotero name."""
        iid, key = self._item(type_name, date_added or "2024-01-01 10:00:00")
        for f, v in fields.items():
            if v is not None:
                self._set(iid, f, v)
        for n, (first, last) in enumerate(authors):
            mode = 1 if not first else 0
            cid = self.creators.get((first, last, mode))
            if cid is None:
                cid = self.creators[(first, last, mode)] = self.next_creator
                self.next_creator += 1
                self.db.execute("INSERT INTO creators (creatorID, firstName, lastName, fieldMode) VALUES (?, ?, ?, ?)",
                                (cid, first, last, mode))
            self.db.execute("INSERT INTO itemCreators (itemID, creatorID, creatorTypeID, orderIndex) VALUES (?, ?, 1, ?)",
                            (iid, cid, n))
        for t in tags:
            tid = self.tags.setdefault(t, len(self.tags) + 1)
            self.db.execute("INSERT OR IGNORE INTO tags (tagID, name) VALUES (?, ?)", (tid, t))
            self.db.execute("INSERT INTO itemTags (itemID, tagID, type) VALUES (?, ?, 0)", (iid, tid))
        for c in collections:
            self.db.execute("INSERT INTO collectionItems (collectionID, itemID) VALUES (?, ?)", (self.collection(c), iid))
        return iid, key

    def collection(self, name: str, parent: str | None = None) -> int:
        if name not in self.collections:
            cid = len(self.collections) + 1
            self.collections[name] = cid
            self.db.execute("INSERT INTO collections (collectionID, collectionName, parentCollectionID, libraryID, key) "
                            "VALUES (?, ?, ?, 1, ?)", (cid, name, self.collections.get(parent) if parent else None, _key(self.rnd)))
        return self.collections[name]

    def stored_pdf(self, parent: int | None, name: str, data: bytes | None, title: str = "Full Text PDF") -> tuple[int, str]:
        """An imported (stored) PDF: `storage:NAME` under storage/<attachment key>/; data None = file missing."""
        iid, key = self._item("attachment")
        self._set(iid, "title", title)
        self.db.execute("INSERT INTO itemAttachments (itemID, parentItemID, linkMode, contentType, path) "
                        "VALUES (?, ?, 0, 'application/pdf', ?)", (iid, parent, f"storage:{name}"))
        if data is not None:
            folder = self.dir / "storage" / key
            folder.mkdir(parents=True, exist_ok=True)
            (folder / name).write_bytes(data)
        return iid, key

    def linked_pdf(self, parent: int, path: str, title: str = "Linked PDF") -> tuple[int, str]:
        """A linked file: an absolute path or `attachments:REL` under the base directory."""
        iid, key = self._item("attachment")
        self._set(iid, "title", title)
        self.db.execute("INSERT INTO itemAttachments (itemID, parentItemID, linkMode, contentType, path) "
                        "VALUES (?, ?, 2, 'application/pdf', ?)", (iid, parent, path))
        return iid, key

    def note(self, parent: int, html: str) -> int:
        iid, _ = self._item("note")
        self.db.execute("INSERT INTO itemNotes (itemID, parentItemID, note, title) VALUES (?, ?, ?, '')", (iid, parent, html))
        return iid

    def annotation(self, attachment: int, text: str | None, comment: str | None, page: str, kind: int = 1,
                   sort: str = "00000|000000|00000") -> int:
        iid, _ = self._item("annotation")
        self.db.execute("INSERT INTO itemAnnotations (itemID, parentItemID, type, text, comment, color, pageLabel, "
                        "sortIndex, position, isExternal) VALUES (?, ?, ?, ?, ?, '#ffd400', ?, ?, '{}', 0)",
                        (iid, attachment, kind, text, comment, page, sort))
        return iid

    def trash(self, iid: int) -> None:
        self.db.execute("INSERT INTO deletedItems (itemID) VALUES (?)", (iid,))

    def close(self) -> Path:
        self.db.commit()
        self.db.close()
        return self.dir


def build_large_library(data_dir: Path, n: int, pdf=None, seed: int = 11) -> Path:
    """A library of `n` items of mixed types with authors, tags, collections; every 10th with a stored PDF made
    by `pdf(title)` (a function returning PDF bytes), when given."""
    rnd = random.Random(seed)
    words = ["consensus", "replication", "learning", "graph", "neural", "storage", "compression", "types", "memory",
             "garbage", "collection", "scheduling", "privacy", "quantum", "vision", "language", "sparse", "index"]
    z = ZoteroBuilder(data_dir, seed=seed)
    types = ["journalArticle", "conferencePaper", "preprint", "book", "thesis", "report", "manuscript"]
    for i in range(n):
        title = " ".join(rnd.sample(words, 5)).capitalize() + f" {i}"
        iid, _ = z.item(rnd.choice(types), authors=[(f"A{i}", f"Author{i % 97}"), ("B", f"Second{i % 13}")],
                        title=title, date=f"{2000 + i % 25}-01-01 {2000 + i % 25}", DOI=f"10.5555/bench.{i}",
                        abstractNote="An abstract " * 20, publicationTitle="Journal of Benchmarks",
                        tags=[rnd.choice(words)], collections=[f"C{i % 5}"])
        if i % 7 == 0:
            z.note(iid, f"<p>Reading note {i} with <b>bold</b></p>")
        if pdf is not None and i % 10 == 0:
            z.stored_pdf(iid, f"paper{i}.pdf", pdf(title))
    return z.close()
