"""BibTeX and biblatex files: a tolerant reader that reports a broken entry with its line and imports the rest.

Each entry is parsed on its own, from its `@type{` to the next line that starts an entry, so an unbalanced brace
costs that entry only. `@string` macros, `#` concatenation, `{...}` and `"..."` values, LaTeX accents, biblatex
fields (`date`, `journaltitle`, `eprint`/`eprinttype`) and `file` fields (Zotero, Better BibTeX, JabRef) are
understood. The file size, an entry's size and the brace depth inside a value are bounded
(`papervault.sources.limits`): past a bound the file or entry is one problem and the rest goes on. Each field is
read in place, only up to its read cap (`_read_cap`, from `FIELD_CAPS`): a longer one is cut with a warning
naming the entry and field, and what lies past the cap is never copied.
"""

from __future__ import annotations

import re
import unicodedata
from pathlib import Path
from typing import Iterator

from papervault.models import SourceRecord
from papervault.sources.dedup import normalize_arxiv, normalize_doi
from papervault.sources.files import order_main_first
from papervault.sources.limits import (FIELD_CAPS, MAX_AUTHOR_CHARS, MAX_AUTHORS, MAX_BIBTEX_BRACE_DEPTH,
                                       MAX_BIBTEX_ENTRY_CHARS, MAX_BIBTEX_FILE_BYTES, MAX_TAG_CHARS, MAX_TAGS,
                                       cut_text)
from papervault.sources.problems import SourceProblem

_ENTRY_START = re.compile(r"^[ \t]*@[ \t]*([A-Za-z][\w-]*)[ \t]*([{(])", re.M)
_MONTHS = {m: str(i) for i, m in enumerate("jan feb mar apr may jun jul aug sep oct nov dec".split(), 1)}

_ACCENTS = {'"': "\u0308", "'": "\u0301", "`": "\u0300", "^": "\u0302", "~": "\u0303", "=": "\u0304",
            ".": "\u0307", "u": "\u0306", "v": "\u030c", "H": "\u030b", "c": "\u0327", "k": "\u0328",
            "r": "\u030a", "d": "\u0323", "b": "\u0331"}
_SPECIAL = {"ss": "ß", "ae": "æ", "AE": "Æ", "oe": "œ", "OE": "Œ", "o": "ø", "O": "Ø", "l": "ł", "L": "Ł",
            "aa": "å", "AA": "Å", "i": "ı", "j": "ȷ", "&": "&", "%": "%", "$": "$", "_": "_", "#": "#", "{": "{", "}": "}"}
_ACCENT_RE = re.compile(r"\\([\"'`^~=.])\s*(?:\{\s*(\\?[A-Za-z])\s*\}|(\\?[A-Za-z]))|\\([uvHckrdb])\s*(?:\{\s*(\\?[A-Za-z])\s*\}|\s+(\\?[A-Za-z]))")
_SPECIAL_RE = re.compile(r"\\(ss|ae|AE|oe|OE|aa|AA|o|O|l|L|i|j)(?![A-Za-z])|\\([&%$_#{}])")
_CMD_RE = re.compile(r"\\[A-Za-z]+\*?\s*")


def latex_to_text(value: str) -> str:
    """BibTeX field text as plain Unicode: accents composed, braces and font commands dropped, `--` as a dash."""
    if "\\" in value:
        def accent(m: re.Match) -> str:
            mark = _ACCENTS[m.group(1) or m.group(4)]
            base = m.group(2) or m.group(3) or m.group(5) or m.group(6)
            base = {"\\i": "i", "\\j": "j"}.get(base, base)
            return unicodedata.normalize("NFC", base + mark)

        value = _ACCENT_RE.sub(accent, value)
        value = _SPECIAL_RE.sub(lambda m: _SPECIAL[m.group(1) or m.group(2)], value)
        value = value.replace("\\\\", " ")
        value = _CMD_RE.sub("", value)
    value = value.replace("{", "").replace("}", "").replace("~", " ")
    value = value.replace("---", "—").replace("--", "–")
    return re.sub(r"\s+", " ", value).strip()


class _Bad(Exception):
    """A malformed entry; `offset` points into the file's text (None: the entry's start)."""

    def __init__(self, msg: str, offset: int | None = None):
        super().__init__(msg)
        self.offset = offset


_BRACE_STOPS = re.compile(r"[\\{}]")
_QUOTE_STOPS = re.compile(r'[\\{}"]')
_WORD = re.compile(r"[^\s,#{}()\"=]+")
_NAME = re.compile(r"[A-Za-z][\w:.+-]*")


def _skip_ws(text: str, i: int, stop: int) -> int:
    while i < stop and text[i].isspace():
        i += 1
    return i


def _braced(text: str, i: int, stop: int) -> tuple[int, int]:
    """The bounds of the content of a `{...}` group starting at text[i] == '{' (its end is the closing brace).

    Bounds, not a copy: the caller slices only what it keeps, so a 50 MB value is never copied."""
    depth = 0
    start = i
    while True:
        m = _BRACE_STOPS.search(text, i, stop)
        if not m:
            raise _Bad("unbalanced braces: a '{' is never closed", start)
        i = m.start()
        c = text[i]
        if c == "\\":
            i += 2
            continue
        if c == "{":
            depth += 1
            if depth > MAX_BIBTEX_BRACE_DEPTH:
                raise _Bad(f"braces nested deeper than {MAX_BIBTEX_BRACE_DEPTH} levels", i)
        else:
            depth -= 1
            if depth == 0:
                return start + 1, i
        i += 1


def _quoted(text: str, i: int, stop: int) -> tuple[int, int]:
    """The bounds of the content of a `"..."` value starting at text[i] == '"'."""
    start, depth = i, 0
    i += 1
    while True:
        m = _QUOTE_STOPS.search(text, i, stop)
        if not m:
            raise _Bad('a quoted value is never closed (missing ")', start)
        i = m.start()
        c = text[i]
        if c == "\\":
            i += 2
            continue
        if c == "{":
            depth += 1
            if depth > MAX_BIBTEX_BRACE_DEPTH:
                raise _Bad(f"braces nested deeper than {MAX_BIBTEX_BRACE_DEPTH} levels", i)
        elif c == "}":
            depth -= 1
            if depth < 0:
                raise _Bad("unbalanced braces inside a quoted value", i)
        elif depth == 0:
            return start + 1, i
        i += 1


def _value(text: str, i: int, stop: int, macros: dict[str, str], cap: int) -> tuple[str, int, int]:
    """A field value: pieces joined by `#`, each braced, quoted, a number or a @string macro.

    Returns the value's first `cap` characters, its whole length and the index after it: past `cap` nothing is
    copied, so the memory a value costs is bounded by its cap, not by the file."""
    parts, total, kept = [], 0, 0
    while True:
        i = _skip_ws(text, i, stop)
        if i >= stop:
            raise _Bad("the entry ends inside a field value", i)
        c = text[i]
        if c == "{" or c == '"':
            a, b = _braced(text, i, stop) if c == "{" else _quoted(text, i, stop)
            size, i = b - a, b + 1
            piece = text[a:min(b, a + cap - kept)] if kept < cap else ""
        else:
            m = _WORD.match(text, i, stop)
            if not m:
                raise _Bad(f"unexpected {c!r} where a value should be", i)
            if m.end() - i > cap:
                piece = text[i:i + cap - kept] if kept < cap else ""
                size = m.end() - i
            else:
                word = m.group(0)
                piece = word if word.isdigit() else macros.get(word.lower(), _MONTHS.get(word.lower()[:3], word))
                size = len(piece)
                piece = piece[:cap - kept]
            i = m.end()
        parts.append(piece)
        kept += len(piece)
        total += size
        if total > MAX_BIBTEX_ENTRY_CHARS:   # `@string` macros joined with `#` can double at every step
            raise _Bad(f"a value longer than {MAX_BIBTEX_ENTRY_CHARS >> 20} M characters once @string macros "
                       "are expanded", i)
        i = _skip_ws(text, i, stop)
        if i < stop and text[i] == "#":
            i += 1
            continue
        return "".join(parts), total, i


def _fields(text: str, i: int, stop: int, macros: dict[str, str],
            cut: dict[str, int] | None = None) -> dict[str, str]:
    """`name = value, ...` pairs of text[i:stop] (an entry body after its key).

    Each value is read up to its field's read cap (`_read_cap`); a longer one is cut there and its whole length
    is put in `cut`. Without `cut` (`@string` macros) values are read whole, within the entry's bound."""
    out: dict[str, str] = {}
    while True:
        i = _skip_ws(text, i, stop)
        while i < stop and text[i] == ",":
            i = _skip_ws(text, i + 1, stop)
        if i >= stop:
            return out
        m = _NAME.match(text, i, stop)
        if not m:
            raise _Bad(f"expected a field name, found {text[i]!r}", i)
        name = m.group(0).lower()
        i = _skip_ws(text, m.end(), stop)
        if i >= stop or text[i] != "=":
            raise _Bad(f"field {name!r} has no '=' (a missing comma before it?)", i)
        cap = _read_cap(name) if cut is not None else MAX_BIBTEX_ENTRY_CHARS
        value, size, i = _value(text, i + 1, stop, macros, cap)
        out[name] = value
        if cut is not None:
            if size > cap:
                cut[name] = size
            else:
                cut.pop(name, None)
        i = _skip_ws(text, i, stop)
        if i < stop and text[i] != ",":
            raise _Bad(f"missing comma after field {name!r}", i)


def split_names(value: str) -> list[str]:
    """BibTeX names (`Lamport, Leslie and {IEEE Computer Society} and others`) as "First Last" strings."""
    names, depth, cur = [], 0, []
    tokens = re.split(r"(\s+and\s+|[{}])", value, flags=re.I)
    for tok in tokens:
        if tok == "{":
            depth += 1
        elif tok == "}":
            depth -= 1
        if depth == 0 and re.fullmatch(r"\s+and\s+", tok or "", flags=re.I):
            names.append("".join(cur))
            cur = []
        else:
            cur.append(tok or "")
    names.append("".join(cur))
    out = []
    for raw in names:
        raw = raw.strip()
        if not raw or raw.lower() == "others":
            continue
        if raw.startswith("{") and raw.endswith("}") and raw.count("{") == 1:
            out.append(latex_to_text(raw))
            continue
        parts = [p.strip() for p in _split_top(raw, ",")]
        if len(parts) == 1:
            out.append(latex_to_text(parts[0]))
        else:   # "Last, First" or "Last, Jr, First"
            last, first = parts[0], parts[-1]
            jr = f", {parts[1]}" if len(parts) == 3 else ""
            out.append(latex_to_text(f"{first} {last}{jr}".strip()))
    return [n for n in out if n]


def _split_top(text: str, sep: str) -> list[str]:
    """Split on `sep` outside braces."""
    out, depth, cur = [], 0, []
    for ch in text:
        if ch == "{":
            depth += 1
        elif ch == "}":
            depth -= 1
        if ch == sep and depth == 0:
            out.append("".join(cur))
            cur = []
        else:
            cur.append(ch)
    out.append("".join(cur))
    return out


def file_field_paths(value: str, base: Path) -> list[str]:
    """PDF paths of a `file` field: `Desc:path.pdf:application/pdf;...` (Zotero/JabRef) or plain `a.pdf;b.pdf`.

    Trusted at import only: the user chose this .bib, so the files it names (`../`, absolute) may be read, once,
    by `papervault add`, which copies the PDF into `pdfs/<sha256>.pdf`. The note keeps these paths in `files:`
    as provenance and nothing reads them from the note again (a note may arrive with a shared vault): only
    `pdfs/` is read afterwards (`papervault.pdfstore.pdf_of`). Better BibTeX JSON attachments
    (`papervault.sources.csl`) follow the same rule."""
    paths = []
    for item in re.split(r"(?<!\\);", value):
        item = item.strip()
        if not item:
            continue
        parts = re.split(r"(?<!\\):", item)
        if len(parts) >= 3:
            cand = ":".join(parts[1:-1]) if len(parts) > 3 and len(parts[1]) == 1 else parts[1]  # C:\ paths
        else:
            cand = item
        cand = cand.replace("\\:", ":").replace("\\;", ";").replace("\\\\", "\\").strip()
        if cand.lower().endswith(".pdf"):
            p = Path(cand).expanduser()
            paths.append(str(p if p.is_absolute() else (base / p).resolve()))
    return paths


# Which record field (`FIELD_CAPS`) each BibTeX field becomes, for those a record keeps whole.
_RECORD_FIELD = {"title": "title", "abstract": "abstract", "url": "url", "doi": "doi", "journal": "venue",
                 "journaltitle": "venue", "booktitle": "venue"}
BIB_FIELD_CHARS = 2_000     # each of BIB_FIELDS (pages, publisher, note, ...) as kept in `PaperMeta.bib`
_LATEX_SLACK = 8            # raw characters read per character kept: `{\"{o}}` is 7 for one letter


def _read_cap(name: str) -> int:
    """How many raw characters of field `name` are read: enough for what the record keeps of it once LaTeX is
    turned into text, and no more, so a 50 MB abstract costs its cap, not its size."""
    if name in ("author", "editor"):
        return MAX_AUTHORS * (MAX_AUTHOR_CHARS + len(" and "))
    if name == "keywords":
        return MAX_TAGS * (MAX_TAG_CHARS + len("; "))
    if name == "file":
        return 64_000   # Zotero lists every attachment (snapshots, supplements), each a full path
    return max(FIELD_CAPS.get(_RECORD_FIELD.get(name, ""), 0), BIB_FIELD_CHARS) * _LATEX_SLACK


def _year(fields: dict[str, str]) -> int | None:
    for f in ("year", "date", "issued"):
        m = re.search(r"(1[5-9]\d\d|20\d\d|2100)", fields.get(f, ""))
        if m:
            return int(m.group(1))
    return None


# Standard BibTeX/biblatex fields kept as they are (`PaperMeta.bib`) besides those the record has its own
# place for (title, author, year, doi, eprint, url, abstract, keywords, file).
BIB_FIELDS = ("pages", "volume", "number", "issue", "publisher", "editor", "edition", "institution", "series",
              "isbn", "issn", "note", "address", "organization", "school", "month", "chapter", "howpublished",
              "type", "journal", "journaltitle", "booktitle", "location", "eventtitle", "pagetotal", "language")


def _bib_fields(entry_type: str, fields: dict[str, str]) -> dict[str, str]:
    out = {"entrytype": entry_type.lower()} if entry_type else {}
    for name in BIB_FIELDS:
        value = fields.get(name)
        if value and value.strip():
            out[name] = latex_to_text(value)[:BIB_FIELD_CHARS]
    if "pages" in out:
        out["pages"] = out["pages"].replace("–", "--").replace("—", "--")
    return out


def record_from_fields(entry_type: str, key: str, fields: dict[str, str], source: str, base: Path,
                       cut: dict[str, int] | None = None) -> SourceRecord:
    """A SourceRecord from one entry's raw fields; `cut` names the fields read only up to their read cap, with
    their whole length, and each is cut to its field cap here with a warning (the source file keeps the rest)."""
    cut = cut or {}
    warnings = []

    def t(name: str) -> str | None:
        if not fields.get(name):
            return None
        text = latex_to_text(fields[name])
        if name in cut and name in _RECORD_FIELD:
            keep = FIELD_CAPS[_RECORD_FIELD[name]]
            warnings.append(f"field {name!r} is {cut[name]:,} characters; kept the first {keep:,} "
                            "(the source file keeps the rest)")
            text = cut_text(text, keep) if len(text) > keep else text
        return text

    for name in sorted(set(cut) - set(_RECORD_FIELD)):
        warnings.append(f"field {name!r} is {cut[name]:,} characters; read the first {_read_cap(name):,} "
                        "(the source file keeps the rest)")
    authors = split_names(fields.get("author") or fields.get("editor") or "")
    arxiv = None
    if (fields.get("archiveprefix", "") + fields.get("eprinttype", "")).lower().startswith("arxiv") or \
            re.match(r"^\d{4}\.\d{4,5}", fields.get("eprint", "")):
        arxiv = normalize_arxiv(fields.get("eprint"))
    doi_raw = t("doi")
    arxiv = arxiv or normalize_arxiv(doi_raw) or normalize_arxiv(fields.get("url"))
    pdfs = file_field_paths(fields["file"], base) if fields.get("file") else []
    if fields.get("doi") and not normalize_doi(doi_raw) and not arxiv:
        warnings.append(f"doi {doi_raw!r} is not a DOI; ignored")
    keywords = [k.strip() for k in re.split(r"[;,]", t("keywords") or "") if k.strip()]
    missing = [p for p in pdfs if not Path(p).is_file()]
    if missing:
        warnings.append(f"file field names missing PDF(s): {', '.join(missing)}")
        pdfs = [p for p in pdfs if p not in missing]
    return SourceRecord(
        origin="bibtex", source=f"{source}#{key}" if key else source, key=key or None, title=t("title"),
        authors=authors, year=_year(fields),
        venue=t("journaltitle") or t("journal") or t("booktitle") or t("publisher") or t("institution") or t("school"),
        doi=normalize_doi(doi_raw), arxiv=arxiv, url=t("url"), abstract=t("abstract"), tags=keywords,
        pdfs=order_main_first(pdfs), warnings=warnings, bib=_bib_fields(entry_type, fields),
    )


_KEY = re.compile(r"[^\s,{}()\"'=#%~\\]+")
_MAX_KEY_SCAN = 10_000   # a citation key is a few dozen characters; the record keeps 200 (FIELD_CAPS["key"])


def parse_bibtex(text: str, source: str = "<bibtex>", base: Path | None = None) -> Iterator[SourceRecord | SourceProblem]:
    """Every entry of a BibTeX/biblatex text as a record; a malformed entry as a problem with its line.

    The entry is read in place (bounds into `text`, never a copy of it), and each field only up to its read
    cap, so one 50 MB field costs no more memory than the file's own text."""
    base = base or Path.cwd()
    macros: dict[str, str] = {}
    starts = list(_ENTRY_START.finditer(text))
    line, counted_to = 1, 0
    for n, m in enumerate(starts):
        kind = m.group(1).lower()
        end = starts[n + 1].start() if n + 1 < len(starts) else len(text)
        line += text.count("\n", counted_to, m.start())   # counted incrementally: linear in the file
        counted_to = m.start()
        if kind in ("comment", "preamble"):
            continue
        if end - m.end() > MAX_BIBTEX_ENTRY_CHARS:
            yield SourceProblem(source, f"@{kind} entry skipped: longer than {MAX_BIBTEX_ENTRY_CHARS >> 20} M "
                                        f"characters (line {line})", line=line)
            continue
        open_at = m.end() - 1
        try:
            if m.group(2) == "{":
                a, b = _braced(text, open_at, end)
            else:
                b = text.rfind(")", open_at, end)
                if b < 0:
                    raise _Bad("unbalanced parentheses: the entry is never closed")
                a = open_at + 1
            if kind == "string":
                macros.update(_fields(text, a, b, macros))
                continue
            comma = text.find(",", a, min(b, a + _MAX_KEY_SCAN))
            if comma < 0 and b - a >= _MAX_KEY_SCAN:
                raise _Bad(f"the citation key is longer than {_MAX_KEY_SCAN:,} characters")
            comma = b if comma < 0 else comma
            key = text[a:comma].strip()
            if not key or not _KEY.fullmatch(key):
                raise _Bad("the entry has no citation key")
            cut: dict[str, int] = {}
            fields = _fields(text, min(comma + 1, b), b, macros, cut)
            yield record_from_fields(kind, key, fields, source, base, cut)
        except _Bad as exc:
            bad_line = line + text.count("\n", m.start(), exc.offset) if exc.offset is not None else line
            yield SourceProblem(source, f"@{kind} entry skipped: {exc} (line {bad_line}); fix it and add the file again",
                                line=line)
        except Exception as exc:  # one entry never stops the file
            yield SourceProblem(source, f"@{kind} entry skipped: {type(exc).__name__}: {exc}", line=line)


def read_bibtex(path: str | Path) -> Iterator[SourceRecord | SourceProblem]:
    """Entries of a .bib file; `file` paths are resolved relative to the file's folder."""
    path = Path(path).expanduser().resolve()
    try:
        size = path.stat().st_size
        if size > MAX_BIBTEX_FILE_BYTES:
            yield SourceProblem(str(path), f"the file is {size >> 20} MB, more than the {MAX_BIBTEX_FILE_BYTES >> 20} "
                                           "MB a BibTeX file may have; split it and add the parts")
            return
        raw = path.read_bytes()
    except OSError as exc:
        yield SourceProblem(str(path), f"cannot read: {exc.strerror or exc}")
        return
    try:
        text = raw.decode("utf-8-sig")
    except UnicodeDecodeError:
        text = raw.decode("latin-1")   # old .bib files are often Latin-1; every byte decodes
    del raw   # the text alone is kept while the entries are read
    yield from parse_bibtex(text, str(path), path.parent)
