"""Benchmark of paper identity: titles, authors and years read from PDFs, against two baselines.

    .venv/bin/python bench/identity.py [--corpus DIR] [--json]

The labelled set is the shared corpus (labels in bench/identity_labels.yaml, read off the rendered pages)
plus the PDFs of bench/identity_pdfs.py, made at run time in the hard header styles (banners, stamps,
running heads, volume lines, institutions, multi-line titles, two-column author blocks, cover pages, arXiv
margin stamps, spaced-out glyphs, OT1 ligatures and dashes, mis-mapped punctuation, a font whose Unicode
map turns every word into a non-word).

Systems:
  papervault   `papervault.parse.pdf.read_front` (the header reader `add` uses, on the first pages)
  pdf-metadata the PDF's document information (title, author) and its creation year, as PyMuPDF gives them
  first-line   the first text line of page 1 as the title, the next one's names, the first year on page 1

The layout classes (`identity_pdfs.CLASSES`: an author line taken as the title, a header or publisher line, a
broken text layer, a title cut short, a scanned first page) are reported per class, in the part the header
reader was adjusted on (`tuned`), the part it was not (`heldout`) and layouts written after its last change
and run once (`fresh`), with how many titles are marked low
confidence and how many wrong titles are not.

Measures: title exact match (after `ids.normalize_title`: case, accents and punctuation do not count), author
F1 (family names, per paper, averaged), year accuracy (a paper that prints no year must get none), papers
whose id has no year although the paper prints one, and, on the pages the parser repaired (and those whose
text layer it replaced by OCR because it was mostly non-words), the share of words that are dictionary words
before (plain `get_text`) and after. The dictionary is the parser's own (`papervault.parse.words`: the
whole-word vocabulary of the all-MiniLM-L6-v2 tokenizer).
"""

from __future__ import annotations

import argparse
import json
import re
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "bench"))
sys.modules.setdefault("pymupdf.layout", None)

import pymupdf  # noqa: E402
import yaml  # noqa: E402

from identity_pdfs import make_all, make_classes  # noqa: E402
from papervault.ids import fold, key_base, last_name, normalize_title  # noqa: E402
from papervault.parse import words  # noqa: E402
from papervault.parse.pdf import parse_pdf, read_front  # noqa: E402

CORPUS = Path("/work/shared/corpus/pdfs")
_YEAR = re.compile(r"(?<!\d)(1[89]\d\d|20[0-4]\d)(?!\d)")


def labels(corpus: Path, gen_dir: Path) -> dict[str, dict]:
    out = {}
    data = yaml.safe_load((ROOT / "bench" / "identity_labels.yaml").read_text(encoding="utf-8"))
    for name, lab in data.items():
        if (corpus / name).is_file():
            out[str(corpus / name)] = {**lab, "set": "corpus"}
    for path, lab in make_all(gen_dir).items():
        out[path] = {**lab, "set": "generated"}
    for path, lab in make_classes(gen_dir / "classes").items():
        out[path] = {**lab, "set": "classes"}
    return out


def by_class(results: dict[str, dict], labs: dict[str, dict]) -> dict:
    """Titles right per class of the issue, in the tuned and the held-out part; and the low-confidence
    share of the wrong and the right titles."""
    out: dict = {}
    for p, lab in labs.items():
        if lab["set"] != "classes":
            continue
        right = normalize_title(results[p]["title"]) == normalize_title(lab["title"])
        low = results[p].get("confidence") == "low"
        for key in (lab["class"], "all"):
            row = out.setdefault(lab["part"], {}).setdefault(key, {"papers": 0, "title_right": 0, "low_confidence": 0,
                                                                   "wrong_but_high": 0})
            row["papers"] += 1
            row["title_right"] += right
            row["low_confidence"] += low
            row["wrong_but_high"] += (not right and not low)
    return out


def run_papervault(path: str) -> dict:
    h = read_front(Path(path))
    return {"title": h.title, "authors": h.authors, "year": h.year,
            "confidence": h.provenance.get("title_confidence")}


def run_metadata(path: str) -> dict:
    with pymupdf.open(path) as doc:
        info = doc.metadata or {}
    authors = [a.strip() for a in re.split(r";|,|\band\b", info.get("author") or "") if a.strip()]
    m = re.match(r"D:(\d{4})", info.get("creationDate") or "")
    return {"title": (info.get("title") or "").strip(), "authors": authors, "year": int(m.group(1)) if m else None}


def run_first_line(path: str) -> dict:
    with pymupdf.open(path) as doc:
        text = doc[0].get_text()
    lines = [ln.strip() for ln in text.splitlines() if ln.strip()]
    title = lines[0] if lines else ""
    authors = [a.strip() for a in re.split(r",|\band\b", lines[1])] if len(lines) > 1 else []
    m = _YEAR.search(text)
    return {"title": title, "authors": [a for a in authors if a], "year": int(m.group(1)) if m else None}


def _names(authors: list[str]) -> list[str]:
    return [re.sub(r"[^a-z]", "", fold(last_name(a)).lower()) for a in authors if a.strip()]


def author_f1(got: list[str], want: list[str]) -> float:
    g, w = _names(got), _names(want)
    if not g and not w:
        return 1.0
    if not g or not w:
        return 0.0
    rest = list(w)
    tp = 0
    for n in g:
        if n in rest:
            rest.remove(n)
            tp += 1
    p, r = tp / len(g), tp / len(w)
    return 0.0 if tp == 0 else 2 * p * r / (p + r)


def score(results: dict[str, dict], labs: dict[str, dict]) -> dict:
    n = len(labs)
    title = sum(normalize_title(results[p]["title"]) == normalize_title(lab["title"]) for p, lab in labs.items())
    f1 = sum(author_f1(results[p]["authors"], lab["authors"]) for p, lab in labs.items())
    year = sum(results[p]["year"] == lab["year"] for p, lab in labs.items())
    no_year = sum(1 for p, lab in labs.items() if lab["year"] and not results[p]["year"])
    return {"papers": n, "title_exact": round(title / n, 4), "author_f1": round(f1 / n, 4),
            "year_accuracy": round(year / n, 4), "ids_without_printed_year": no_year}


def dictionary_share(texts: list[str]) -> float | None:
    share = words.dictionary_share(texts)
    return None if share is None else round(share, 4)


def repaired_pages(labs: dict[str, dict]) -> dict:
    """Parse every labelled PDF; on the pages the parser repaired, and on those it OCR'd because their text
    layer was mostly non-words, compare dictionary words before (plain `get_text`) and after."""
    out = {}
    for kind in ("repaired", "ocr"):
        before: list[str] = []
        after: list[str] = []
        per_paper = {}
        for path in labs:
            paper = _parsed(path)
            chosen = paper.repaired_pages if kind == "repaired" else paper.ocr_pages
            with pymupdf.open(path) as doc:
                plain = {p: doc[p - 1].get_text() for p in chosen}
            # Scanned pages have no text layer to compare: only the pages whose text layer OCR replaced count.
            chosen = [p for p in chosen if plain[p].strip()]
            if not chosen:
                continue
            per_paper[Path(path).name] = chosen
            before.extend(plain[p] for p in chosen)
            pages = re.split(r'<a id="page-(\d+)"></a>', paper.markdown)
            by_page = {int(pages[i]): pages[i + 1] for i in range(1, len(pages) - 1, 2)}
            after.extend(by_page.get(p, "") for p in chosen)
        out[kind] = {"papers": per_paper, "pages": sum(len(v) for v in per_paper.values()),
                     "dictionary_words_before": dictionary_share(before),
                     "dictionary_words_after": dictionary_share(after)}
    return out


_PARSED: dict[str, object] = {}


def _parsed(path: str):
    if path not in _PARSED:
        _PARSED[path] = parse_pdf(Path(path))
    return _PARSED[path]


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--corpus", type=Path, default=CORPUS)
    ap.add_argument("--json", action="store_true")
    ap.add_argument("--no-repair", action="store_true", help="skip the full parses of the repaired-pages measure")
    args = ap.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        labs = labels(args.corpus, Path(tmp))
        systems = {"papervault": run_papervault, "pdf-metadata": run_metadata, "first-line": run_first_line}
        report: dict = {"papers": len(labs), "systems": {}, "errors": {}}
        for name, fn in systems.items():
            t = time.perf_counter()
            results = {p: fn(p) for p in labs}
            s = {"all": score(results, labs)}
            for part in ("corpus", "generated", "classes"):
                sub = {p: lab for p, lab in labs.items() if lab["set"] == part}
                s[part] = score(results, sub)
            s["seconds"] = round(time.perf_counter() - t, 2)
            report["systems"][name] = s
            if name == "papervault":
                report["classes"] = by_class(results, labs)
                report["errors"] = {
                    Path(p).name: {"got": {**results[p], "id": key_base(results[p]["authors"], results[p]["year"],
                                                                        results[p]["title"])},
                                   "want": {k: lab[k] for k in ("title", "authors", "year")}}
                    for p, lab in labs.items() if lab["set"] != "classes" or lab["part"] == "tuned"
                    if normalize_title(results[p]["title"]) != normalize_title(lab["title"])
                    or (results[p]["year"] != lab["year"] and lab["set"] != "classes") or author_f1(results[p]["authors"], lab["authors"]) < 1}
        if not args.no_repair:
            report["repair"] = repaired_pages(labs)
    if args.json:
        print(json.dumps(report, indent=2, ensure_ascii=False))
        return
    print(f"{report['papers']} labelled PDFs "
          f"({sum(1 for v in labs.values() if v['set'] == 'corpus')} corpus, "
          f"{sum(1 for v in labs.values() if v['set'] == 'generated')} generated, "
          f"{sum(1 for v in labs.values() if v['set'] == 'classes')} in the layout classes)\n")
    print(f"{'system':14} {'set':10} {'title':>7} {'authorF1':>9} {'year':>7} {'no-year ids':>12}")
    for name, s in report["systems"].items():
        for part in ("all", "corpus", "generated", "classes"):
            r = s[part]
            print(f"{name:14} {part:10} {r['title_exact']:7.1%} {r['author_f1']:9.3f} {r['year_accuracy']:7.1%} "
                  f"{r['ids_without_printed_year']:12d}")
    print("\nlayout classes (papervault): titles right; low confidence; wrong titles with high confidence")
    for part in ("tuned", "heldout", "fresh"):
        rows = report["classes"].get(part, {})
        for cls, r in sorted(rows.items(), key=lambda kv: kv[0] == "all"):
            print(f"  {part:8} {cls:14} {r['title_right']:3d}/{r['papers']:<3d} {r['title_right'] / r['papers']:7.1%}"
                  f"  low {r['low_confidence']:2d}  wrong-but-high {r['wrong_but_high']:2d}")
    if "repair" in report:
        print()
        for kind, what in (("repaired", "repaired pages"), ("ocr", "text layers replaced by OCR")):
            r = report["repair"][kind]
            print(f"{what}: {r['pages']} in {len(r['papers'])} papers; dictionary words "
                  f"before {r['dictionary_words_before']}, after {r['dictionary_words_after']}")
    for name, e in report["errors"].items():
        print(f"\nmiss: {name}\n  got  {e['got']}\n  want {e['want']}")


if __name__ == "__main__":
    main()
