"""Bounds on what one input may cost: nesting depth and size while reading, and the length of each field kept.

Every text a source hands over was written by a stranger. A reader stops at these limits with a one-line
problem (the file or entry is skipped, the batch goes on); a field over its cap is cut, with a warning, so the
full value is kept nowhere but in the source itself (a note is re-read by every command, a source file is not).
"""

from __future__ import annotations

from papervault.models import SourceRecord

# --- reading -------------------------------------------------------------------------------------

MAX_JSON_DEPTH = 64                 # a CSL item nests 4 deep (issued.date-parts); 64 leaves room for any exporter
MAX_JSON_ITEM_BYTES = 64 << 20      # one CSL / Better BibTeX item; bigger items are skipped unread
MAX_BIBTEX_FILE_BYTES = 256 << 20   # a 90,000-entry library is about 60 MB; the text may take 4x in memory
MAX_BIBTEX_ENTRY_CHARS = 64 << 20   # one @entry{...}
MAX_BIBTEX_BRACE_DEPTH = 64         # {{...}} nesting inside one value

# --- fields kept ---------------------------------------------------------------------------------

FIELD_CAPS: dict[str, int] = {      # characters
    "title": 1_000,
    "abstract": 20_000,
    "venue": 500,
    "url": 2_000,
    "pdf_url": 2_000,
    "doi": 300,
    "arxiv": 100,
    "key": 200,
    "source": 4_000,
    "zotero_key": 100,
}
MAX_AUTHORS = 1_000                 # the largest physics collaborations list ~3,000: a note keeps the first 1,000
MAX_AUTHOR_CHARS = 300
MAX_TAGS = 200                      # tags and collections, each
MAX_TAG_CHARS = 200
MAX_READER_NOTES = 200
MAX_READER_NOTE_CHARS = 200_000
MAX_BIB_FIELDS = 64                 # `PaperMeta.bib`: the other bibliographic fields, by their BibTeX names
MAX_BIB_CHARS = 2_000               # ... each value, as BibTeX and CSL-JSON imports keep it
MAX_BIB_NAME_CHARS = 40


# --- values: one type and one bound for every source ----------------------------------------------
#
# What a feed, a database or a state file hands over may be of any type and any size. These turn such a value
# into what a record keeps, or nothing: text is a string (a number is written as text; a list, a dict or a bool
# is not a title), cut to its cap; a name list is a list of such strings; a year an integer in a sane range.
# Every source calls them at its boundary, so a 27 MB title or a dict for a volume never reaches a note.

def text_value(value, cap: int) -> str | None:
    """`value` as one text of at most `cap` characters (surrounding space stripped), or None."""
    if isinstance(value, bool) or not isinstance(value, (str, int, float)):
        return None
    text = (value[: 4 * cap] if isinstance(value, str) else str(value)).strip()
    if not text:
        return None
    return text if len(text) <= cap else cut_text(text, cap)


def field_value(name: str, value) -> str | None:
    """A record field (`FIELD_CAPS`: title, abstract, venue, url, doi, ...) from any value, bounded."""
    return text_value(value, FIELD_CAPS[name])


def name_list(values, limit: int = MAX_AUTHORS, cap: int = MAX_AUTHOR_CHARS) -> list[str]:
    """A list of names (authors) or labels (tags, `limit`/`cap` of their own): strings only, each bounded."""
    if not isinstance(values, (list, tuple)):
        return []
    out = []
    for v in values[: limit * 2]:
        t = text_value(v, cap)
        if t:
            out.append(t)
            if len(out) == limit:
                break
    return out


def year_value(value) -> int | None:
    """A publication year: an integer (or digits) between 1000 and 2999, else None."""
    if isinstance(value, bool):
        return None
    if isinstance(value, str) and value.strip().isdigit() and len(value.strip()) == 4:
        value = int(value.strip())
    return value if isinstance(value, int) and 1000 <= value <= 2999 else None


def bib_fields(values) -> dict[str, str]:
    """`PaperMeta.bib` from any mapping: short names, text values (numbers as text), each bounded."""
    if not isinstance(values, dict):
        return {}
    out: dict[str, str] = {}
    for k, v in list(values.items())[: 4 * MAX_BIB_FIELDS]:
        if isinstance(k, str) and 0 < len(k) <= MAX_BIB_NAME_CHARS:
            t = text_value(v, MAX_BIB_CHARS)
            if t:
                out[k] = t
                if len(out) == MAX_BIB_FIELDS:
                    break
    return out


def cut_text(text: str, cap: int) -> str:
    """`text` cut to `cap` characters, the last one an ellipsis."""
    return text[: cap - 1].rstrip() + "…"


_cut = cut_text


def cap_record(rec: SourceRecord) -> SourceRecord:
    """`rec` with every field within its cap; each cut is named in the record's warnings."""
    upd: dict = {}
    said: list[str] = []
    for name, cap in FIELD_CAPS.items():
        value = getattr(rec, name)
        if isinstance(value, str) and len(value) > cap:
            upd[name] = _cut(value, cap)
            said.append(f"field {name!r} is {len(value):,} characters; kept the first {cap:,}")
    authors = rec.authors
    if len(authors) > MAX_AUTHORS or any(len(a) > MAX_AUTHOR_CHARS for a in authors):
        if len(authors) > MAX_AUTHORS:
            said.append(f"{len(authors):,} authors; kept the first {MAX_AUTHORS:,}")
        if any(len(a) > MAX_AUTHOR_CHARS for a in authors[:MAX_AUTHORS]):
            said.append(f"an author name longer than {MAX_AUTHOR_CHARS} characters was cut")
        upd["authors"] = [a if len(a) <= MAX_AUTHOR_CHARS else _cut(a, MAX_AUTHOR_CHARS)
                          for a in authors[:MAX_AUTHORS]]
    for name in ("tags", "collections"):
        values = getattr(rec, name)
        if len(values) > MAX_TAGS or any(len(v) > MAX_TAG_CHARS for v in values):
            said.append(f"{len(values):,} {name} (or one over {MAX_TAG_CHARS} characters); "
                        f"kept the first {MAX_TAGS}, each at most {MAX_TAG_CHARS} characters")
            upd[name] = [v if len(v) <= MAX_TAG_CHARS else _cut(v, MAX_TAG_CHARS) for v in values[:MAX_TAGS]]
    bib = bib_fields(rec.bib)
    if bib != rec.bib:
        said.append(f"bibliographic fields over {MAX_BIB_FIELDS} or {MAX_BIB_CHARS:,} characters each were cut")
        upd["bib"] = bib
    notes = rec.reader_notes
    if len(notes) > MAX_READER_NOTES or any(len(n) > MAX_READER_NOTE_CHARS for n in notes):
        said.append(f"reader notes over {MAX_READER_NOTES} notes or {MAX_READER_NOTE_CHARS:,} characters "
                    "each were cut")
        upd["reader_notes"] = [n if len(n) <= MAX_READER_NOTE_CHARS else _cut(n, MAX_READER_NOTE_CHARS)
                               for n in notes[:MAX_READER_NOTES]]
    if not upd:
        return rec
    upd["warnings"] = [*rec.warnings, *(s + " (the source file keeps the rest)" for s in said)]
    return rec.model_copy(update=upd)
