"""Benchmark of paper identity: titles, authors and years read from PDFs, against two baselines.

    .venv/bin/python bench/identity.py [--corpus DIR] [--json]
    .venv/bin/python bench/identity.py --set DIR [--labels FILE] [--half tune|heldout|both] [--json]
        [--model-reads FILE [--model-url URL]]

With `--set`, the benchmark reads the identity set instead: real PDFs from public collections in DIR, labelled
in bench/identity_set/labels.jsonl (see bench/identity_set/README.md; get.py rebuilds DIR), split into a tune
half and a held-out half. It reports per half, for each system, titles exact, author F1, years, venues (where
the system reports one) and bad citation keys, also per document type and for scanned versus born-digital
papers. A key is bad when its name part is not the family name of a labelled author: `anon` when the page
prints authors, or a word that is no labelled author's family name (an affiliation, an address, a title word),
or any name when the page prints none. Misses are listed for the tune half only, so that tuning on them never
looks at the held-out half. With `--model-reads`, a fourth system, `papervault+model`, is the header reader's
reading settled against a model's first-page read (bench/identity_model.py), as `add` with a model does it.

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
from types import SimpleNamespace

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "bench"))
sys.modules.setdefault("pymupdf.layout", None)

import pymupdf  # noqa: E402
import yaml  # noqa: E402

from identity_pdfs import make_all, make_classes  # noqa: E402
from front_cache import cached_inputs  # noqa: E402
from identity_model import run_model  # noqa: E402
from papervault.ids import fold, key_base, key_name, last_name, normalize_title  # noqa: E402
from papervault.ingest_records import key_confident  # noqa: E402
from papervault.lineshapes import is_person_name  # noqa: E402
from papervault.parse.header import read_header  # noqa: E402
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


CACHE: Path | None = None     # --cache: the header reader's inputs kept per PDF (bench/front_cache.py)


def run_papervault(path: str) -> dict:
    if CACHE is not None:
        args = dict(cached_inputs(path, CACHE))
        h = read_header(args.pop("pages"), args.pop("heights"), **args)
    else:
        h = read_front(Path(path))
    # The key `add` makes of this reading (`ingest_records.key_confident` decides what it may be built from).
    confident = key_confident(h.provenance, SimpleNamespace(provenance=h.provenance, authors=h.authors))
    return {"title": h.title, "authors": h.authors, "year": h.year, "venue": h.venue,
            "confidence": h.provenance.get("title_confidence"), "key_confident": confident}


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


_SUFFIX = re.compile(r",?\s+(?:jr|sr|ii|iii|iv)\.?$", re.I)


def _family_full(author: str) -> str:
    """The family name of an author with its particles ("Raúl Sánchez de la Sierra" -> "delasierra"), lowercase
    ASCII letters, without a Jr./Sr./II suffix."""
    return re.sub(r"[^a-z]", "", fold(last_name(_SUFFIX.sub("", author.strip()))).lower())


def _family(author: str) -> str:
    """The last word of the family name ("Robert E. Lucas, Jr." -> "lucas", "P.M.C. DE OLIVEIRA" and
    "P.M.C. de Oliveira" -> "oliveira"), so that a particle's case does not decide a match."""
    words = last_name(_SUFFIX.sub("", author.strip())).split()
    return re.sub(r"[^a-z]", "", fold(words[-1]).lower()) if words else ""


def _names(authors: list[str]) -> list[str]:
    return [_family(a) for a in authors if a.strip()]


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


SET_LABELS = ROOT / "bench" / "identity_set" / "labels.jsonl"
HALVES = ("tune", "heldout")


def set_labels(labels_file: Path, set_dir: Path, half: str) -> tuple[dict[str, dict], list[str]]:
    """The identity set's labels for `half` ("both" for all), keyed by the PDF's path in `set_dir`; and the
    labelled files that are not in `set_dir`."""
    labs: dict[str, dict] = {}
    missing: list[str] = []
    for line in labels_file.read_text(encoding="utf-8").splitlines():
        if not line.strip():
            continue
        lab = json.loads(line)
        if half != "both" and lab["half"] != half:
            continue
        path = set_dir / Path(lab["file"]).name
        if path.is_file():
            labs[str(path)] = lab
        else:
            missing.append(lab["file"])
    return labs, missing


NOT_A_SURNAME = "not a surname (a word of a heading, an affiliation, an address, the title)"
SOMEONE_ELSE = "another person's surname, not a labelled author's (an editor, a transcriber, a thanked colleague)"


def bad_key(result: dict, lab: dict) -> tuple[str, str | None]:
    """The key `add` builds of the system's reading (`ids.key_base`, with `ingest_records.key_confident` for
    the header reader), and why it is bad: its name part is not the family name of a labelled author (a word
    of an affiliation, an address, a heading, the title, a thanked colleague), a name for a page that prints
    none, or `anon` while the page prints authors. A key built from a short form of the title where no author
    was read (`sorting2004`) is not built from a non-surname: it is counted apart (`title_key`). A key whose
    name part is not a labelled author's is told apart by its first author: a person's name (another person
    printed on the page, `SOMEONE_ELSE`) or not (`NOT_A_SURNAME`, what `non_surname_keys` counts)."""
    confident = result.get("key_confident", True)
    key = key_base(result["authors"], result["year"], result["title"], confident)
    got = key_name(result["authors"], result["title"], confident)     # the name part exactly as `key_base` builds it
    if not got:
        if key.startswith("anon") and lab["authors"]:
            return key, "anon while the page prints authors"
        return key, None
    if not lab["authors"]:
        return key, "name where the page prints none"
    # A family name with a particle ("de la Sierra") may be keyed on all of it or on its last word.
    families = {_family_full(a) for a in lab["authors"]} | {_family(a) for a in lab["authors"]}
    if got in families:
        return key, None
    if is_person_name(result["authors"][0]):
        return key, SOMEONE_ELSE
    return key, NOT_A_SURNAME


def reading_bad_key(result: dict, lab: dict) -> str | None:
    """The measure used before the keys followed `add`: the first author read (or "anon" when none) is not a
    labelled author's family name. It counts a reading that found no author as bad even where `add` keys the
    paper on its title."""
    got = re.sub(r"[^a-z0-9]", "", fold(last_name(result["authors"][0])).lower())[:30] if result["authors"] else ""
    got = got or "anon"
    if not lab["authors"]:
        return None if got == "anon" else "name where the page prints none"
    if got == "anon":
        return "no author read while the page prints authors"
    families = {_family_full(a) for a in lab["authors"]} | {_family(a) for a in lab["authors"]}
    return None if got in families else "not a labelled author's family name"


def _venue_words(venue: str | None) -> str:
    words = normalize_title(venue).split()
    return " ".join(w for w in words if w not in ("the", "of", "and", "in", "on", "for"))


def venue_right(got: str | None, want: str | None) -> bool:
    g, w = _venue_words(got), _venue_words(want)
    return bool(g and w) and (g in w or w in g)


def score_set(results: dict[str, dict], labs: dict[str, dict], venue: bool) -> dict:
    """Titles, authors, years, keys (and venues, for a system that reports them) on a part of the set."""
    n = len(labs)
    if not n:
        return {"papers": 0}
    out = score(results, labs)
    reasons: dict[str, int] = {}
    for p, lab in labs.items():
        _, why = bad_key(results[p], lab)
        if why:
            reasons[why] = reasons.get(why, 0) + 1
    out["bad_keys"] = round(sum(reasons.values()) / n, 4)
    out["bad_key_reasons"] = reasons
    out["non_surname_keys"] = reasons.get(NOT_A_SURNAME, 0)
    out["title_keys"] = sum(1 for p, lab in labs.items()
                            if not key_name(results[p]["authors"], results[p]["title"],
                                            results[p].get("key_confident", True))
                            and not bad_key(results[p], lab)[0].startswith("anon"))
    out["title_keys_while_authors_printed"] = sum(
        1 for p, lab in labs.items() if lab["authors"] and not key_name(
            results[p]["authors"], results[p]["title"], results[p].get("key_confident", True))
        and not bad_key(results[p], lab)[0].startswith("anon"))
    out["reading_bad_keys"] = round(sum(reading_bad_key(results[p], lab) is not None for p, lab in labs.items()) / n, 4)
    if venue:
        reported = [p for p in labs if results[p].get("venue")]
        out["venues_reported"] = len(reported)
        out["venue_right_of_reported"] = (round(sum(venue_right(results[p]["venue"], labs[p]["venue"])
                                                    for p in reported) / len(reported), 4) if reported else None)
        out["venue_where_none_printed"] = sum(1 for p in reported if not labs[p]["venue"])
    return out


def _safe(fn, path: str) -> dict:
    try:
        return fn(path)
    except Exception as exc:  # one unreadable PDF never stops the run; it scores as nothing read
        return {"title": "", "authors": [], "year": None, "venue": None, "error": f"{type(exc).__name__}: {exc}"}


def _score_system(report: dict, name: str, results: dict[str, dict], labs: dict[str, dict], halves: list[str],
                  seconds: float) -> None:
    per: dict = {"seconds": seconds}
    venue = name.startswith("papervault")
    for half in halves:
        part = {p: lab for p, lab in labs.items() if lab["half"] == half}
        row = {"all": score_set(results, part, venue)}
        for kind in sorted({lab["type"] for lab in part.values()}):
            row["type:" + kind] = score_set(results, {p: lab for p, lab in part.items() if lab["type"] == kind}, venue)
        for scanned, label in ((True, "scanned"), (False, "born-digital")):
            row[label] = score_set(results, {p: lab for p, lab in part.items() if lab["scanned"] == scanned}, venue)
        per[half] = row
    report["systems"][name] = per
    report["errors"] = report.get("errors", {}) | {f"{name}:{Path(p).name}": r["error"]
                                                   for p, r in results.items() if "error" in r}


def run_set(args) -> dict:
    labs, missing = set_labels(args.labels, args.set, args.half)
    if not labs:
        sys.exit(f"no labelled PDF of the {args.half} half in {args.set}: run bench/identity_set/get.py {args.set}")
    systems = {"papervault": run_papervault, "pdf-metadata": run_metadata, "first-line": run_first_line}
    halves = [h for h in HALVES if args.half in (h, "both")]
    report: dict = {"set": str(args.set), "labels": str(args.labels), "papers": len(labs), "missing": missing,
                    "systems": {}, "misses": {}}
    readings: dict[str, dict] = {}
    for name, fn in systems.items():
        t = time.perf_counter()
        results = {}
        for i, p in enumerate(sorted(labs), 1):
            results[p] = _safe(fn, p)
            if not args.json and (i % 25 == 0 or i == len(labs)):
                print(f"  {name}: {i}/{len(labs)} PDFs read", file=sys.stderr)
        _score_system(report, name, results, labs, halves, round(time.perf_counter() - t, 2))
        if name == "papervault":
            readings = results
    for p, lab in sorted(labs.items()):
        if lab["half"] != "tune":
            continue
        r = readings[p]
        key, why = bad_key(r, lab)
        wrong = [f for f, ok in (("title", normalize_title(r["title"]) == normalize_title(lab["title"])),
                                 ("authors", author_f1(r["authors"], lab["authors"]) == 1),
                                 ("year", r["year"] == lab["year"]), ("key", why is None)) if not ok]
        if wrong:
            report["misses"][lab["file"]] = {
                "wrong": wrong, "key": key, "key_problem": why,
                "got": {k: r.get(k) for k in ("title", "authors", "year", "venue")},
                "want": {k: lab[k] for k in ("title", "authors", "year", "venue", "type", "scanned")}}
    if args.model_reads:
        t = time.perf_counter()
        results, counts = run_model(labs, readings, args)
        report["model"] = counts | {"reads": str(args.model_reads)}
        _score_system(report, "papervault+model", results, labs, halves, round(time.perf_counter() - t, 2))
        for p, lab in sorted(labs.items()):
            r = results[p]
            key, why = bad_key(r, lab)
            if lab["half"] == "tune" and (normalize_title(r["title"]) != normalize_title(lab["title"]) or why):
                report.setdefault("model_misses", {})[lab["file"]] = {
                    "key": key, "key_problem": why,
                    "got": {k: r.get(k) for k in ("title", "authors", "year", "venue", "identity")},
                    "want": {k: lab[k] for k in ("title", "authors", "year", "venue")}}
    return report


def print_set(report: dict) -> None:
    print(f"identity set: {report['papers']} labelled PDFs in {report['set']}"
          + (f" ({len(report['missing'])} labelled files missing)" if report["missing"] else ""))
    head = (f"{'system':13} {'half':8} {'part':26} {'n':>4} {'title':>7} {'authF1':>7} {'year':>7} "
            f"{'badkey':>7} {'titlekey':>8} {'rd-bad':>7} {'venues':>7} {'venue ok':>8}")
    print(head)
    for name, per in report["systems"].items():
        for half in HALVES:
            for part, r in per.get(half, {}).items():
                if not r.get("papers"):
                    continue
                v = r.get("venue_right_of_reported")
                print(f"{name:13} {half:8} {part:26} {r['papers']:4d} {r['title_exact']:7.1%} {r['author_f1']:7.3f} "
                      f"{r['year_accuracy']:7.1%} {r['bad_keys']:7.1%} {r['title_keys']:8d} {r['reading_bad_keys']:7.1%} "
                      f"{r.get('venues_reported', '-')!s:>7} {'-' if v is None else f'{v:.1%}':>8}")
        print(f"{name:13} {per['seconds']:.1f} s")
    pv = report["systems"].get("papervault", {})
    for half in HALVES:
        if half in pv:
            print(f"bad keys ({half}): {pv[half]['all']['bad_key_reasons']}")
    for name, per in report["systems"].items():
        for half in HALVES:
            if half in per and "non_surname_keys" in per[half]["all"]:
                print(f"keys built from a non-surname ({name}, {half}): {per[half]['all']['non_surname_keys']}")
    if "model" in report:
        m = report["model"]
        print(f"model's first-page reads ({m['reads']}): {m['read_by_model']} papers read, {m['stale']} from an "
              f"older request, {m['no_read']} without a read; fields taken from the model: {m['taken']}")
        print(f"titles the page left open, asked of the model: {m['title_asked']}, {m['title_answered']} answered "
              f"({m['title_stale']} from an older request)")
    for name, err in report.get("errors", {}).items():
        print(f"error: {name}: {err}")
    for name, m in report.get("model_misses", {}).items():
        print(f"\nmodel miss (tune): {name} key {m['key']}" + (f" ({m['key_problem']})" if m["key_problem"] else "")
              + f"\n  got  {m['got']}\n  want {m['want']}")
    for name, m in report["misses"].items():
        print(f"\nmiss (tune): {name} {m['wrong']} key {m['key']}"
              + (f" ({m['key_problem']})" if m["key_problem"] else "")
              + f"\n  got  {m['got']}\n  want {m['want']}")


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
    ap.add_argument("--set", type=Path, help="the identity set's folder of PDFs (bench/identity_set/get.py makes it)")
    ap.add_argument("--labels", type=Path, default=SET_LABELS, help="the identity set's labels (JSON lines)")
    ap.add_argument("--half", choices=("tune", "heldout", "both"), default="both")
    ap.add_argument("--cache", type=Path, help="keep the header reader's inputs per PDF in this folder and read "
                    "them from it (bench/front_cache.py; keyed by sha256 and parser version)")
    ap.add_argument("--model-reads", type=Path, help="with --set: also score the header reader settled against a "
                    "model's first-page reads (bench/identity_model.py), recorded in this JSON-lines file")
    ap.add_argument("--model-url", help="OpenAI-compatible endpoint to ask for the reads the file lacks")
    ap.add_argument("--model-name", default="queue", help="the model name sent to --model-url")
    ap.add_argument("--model-timeout", type=float, default=3600.0, help="seconds to wait for one read")
    ap.add_argument("--model-concurrency", type=int, default=64, help="reads asked at once")
    args = ap.parse_args()
    global CACHE
    CACHE = args.cache
    if args.set:
        report = run_set(args)
        if args.json:
            print(json.dumps(report, indent=2, ensure_ascii=False))
        else:
            print_set(report)
        return
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
