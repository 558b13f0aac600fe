"""BibTeX and biblatex files: a tolerant reader that reports a broken entry with its line and imports the rest.

Each entry is parsed on its own, from its `@type{` to the next line that starts an entry, so an unbalanced brace
costs that entry only. `@string` macros, `#` concatenation, `{...}` and `"..."` values, LaTeX accents, biblatex
fields (`date`, `journaltitle`, `eprint`/`eprinttype`) and `file` fields (Zotero, Better BibTeX, JabRef) are
understood. The file size, an entry's size and the brace depth inside a value are bounded
(`papervault.sources.limits`): past a bound the file or entry is one problem and the rest goes on.
"""

from __future__ import annotations

import re
import unicodedata
from pathlib import Path
from typing import Iterator

from papervault.models import SourceRecord
from papervault.sources.dedup import normalize_arxiv, normalize_doi
from papervault.sources.files import order_main_first
from papervault.sources.limits import MAX_BIBTEX_BRACE_DEPTH, MAX_BIBTEX_ENTRY_CHARS, MAX_BIBTEX_FILE_BYTES
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
    """A malformed entry; `offset` points into the entry's text."""

    def __init__(self, msg: str, offset: int = 0):
        super().__init__(msg)
        self.offset = offset


def _skip_ws(text: str, i: int) -> int:
    while i < len(text) and text[i].isspace():
        i += 1
    return i


def _braced(text: str, i: int) -> tuple[str, int]:
    """The content of a `{...}` group starting at text[i] == '{', and the index after it."""
    depth = 0
    start = i
    while i < len(text):
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
            if depth == 0:
                return text[start + 1:i], i + 1
        i += 1
    raise _Bad("unbalanced braces: a '{' is never closed", start)


def _quoted(text: str, i: int) -> tuple[str, int]:
    start, depth = i, 0
    i += 1
    while i < len(text):
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
        elif c == '"' and depth == 0:
            return text[start + 1:i], i + 1
        i += 1
    raise _Bad('a quoted value is never closed (missing ")', start)


def _value(text: str, i: int, macros: dict[str, str]) -> tuple[str, int]:
    """A field value: pieces joined by `#`, each braced, quoted, a number or a @string macro."""
    parts, total = [], 0
    while True:
        i = _skip_ws(text, i)
        if i >= len(text):
            raise _Bad("the entry ends inside a field value", i)
        c = text[i]
        if c == "{":
            piece, i = _braced(text, i)
        elif c == '"':
            piece, i = _quoted(text, i)
        else:
            m = re.compile(r"[^\s,#{}()\"=]+").match(text, i)
            if not m:
                raise _Bad(f"unexpected {c!r} where a value should be", i)
            word = m.group(0)
            piece = word if word.isdigit() else macros.get(word.lower(), _MONTHS.get(word.lower()[:3], word))
            i = m.end()
        parts.append(piece)
        total += len(piece)
        if total > MAX_BIBTEX_ENTRY_CHARS:   # `@string` macros joined with `#` can double at every step
            raise _Bad(f"a value longer than {MAX_BIBTEX_ENTRY_CHARS >> 20} M characters once @string macros "
                       "are expanded", i)
        i = _skip_ws(text, i)
        if i < len(text) and text[i] == "#":
            i += 1
            continue
        return "".join(parts), i


def _fields(body: str, macros: dict[str, str]) -> dict[str, str]:
    """`name = value, ...` pairs of an entry body (after its key)."""
    out: dict[str, str] = {}
    i = 0
    while True:
        i = _skip_ws(body, i)
        while i < len(body) and body[i] == ",":
            i = _skip_ws(body, i + 1)
        if i >= len(body):
            return out
        m = re.compile(r"[A-Za-z][\w:.+-]*").match(body, i)
        if not m:
            raise _Bad(f"expected a field name, found {body[i]!r}", i)
        name = m.group(0).lower()
        i = _skip_ws(body, m.end())
        if i >= len(body) or body[i] != "=":
            raise _Bad(f"field {name!r} has no '=' (a missing comma before it?)", i)
        value, i = _value(body, i + 1, macros)
        out[name] = value
        i = _skip_ws(body, i)
        if i < len(body) and body[i] not in ",":
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
            out[name] = latex_to_text(value)[:2000]
    if "pages" in out:
        out["pages"] = out["pages"].replace("–", "--").replace("—", "--")
    return out


def record_from_fields(entry_type: str, key: str, fields: dict[str, str], source: str, base: Path) -> SourceRecord:
    """A SourceRecord from one entry's raw fields."""
    t = lambda name: latex_to_text(fields[name]) if fields.get(name) else None  # noqa: E731
    authors = split_names(fields.get("author") or fields.get("editor") or "")
    arxiv = None
    if (fields.get("archiveprefix", "") + fields.get("eprinttype", "")).lower().startswith("arxiv") or \
            re.match(r"^\d{4}\.\d{4,5}", fields.get("eprint", "")):
        arxiv = normalize_arxiv(fields.get("eprint"))
    doi_raw = t("doi")
    arxiv = arxiv or normalize_arxiv(doi_raw) or normalize_arxiv(fields.get("url"))
    pdfs = file_field_paths(fields["file"], base) if fields.get("file") else []
    warnings = []
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


def parse_bibtex(text: str, source: str = "<bibtex>", base: Path | None = None) -> Iterator[SourceRecord | SourceProblem]:
    """Every entry of a BibTeX/biblatex text as a record; a malformed entry as a problem with its line."""
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
        chunk = text[m.end() - 1:end]
        try:
            close = ")" if m.group(2) == "(" else "}"
            if close == "}":
                body, _ = _braced(chunk, 0)
            else:
                j = chunk.rfind(")")
                if j < 0:
                    raise _Bad("unbalanced parentheses: the entry is never closed", 0)
                body = chunk[1:j]
            if kind == "string":
                f = _fields(body, macros)
                macros.update({k: v for k, v in f.items()})
                continue
            key, _, rest = body.partition(",")
            key = key.strip()
            if not key or not re.fullmatch(r"[^\s,{}()\"'=#%~\\]+", key):
                raise _Bad("the entry has no citation key", 0)
            fields = _fields(rest, macros)
            yield record_from_fields(kind, key, fields, source, base)
        except _Bad as exc:
            bad_line = line + chunk.count("\n", 0, exc.offset) if exc.offset else line
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
    yield from parse_bibtex(text, str(path), path.parent)
