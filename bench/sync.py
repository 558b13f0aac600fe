"""Sync benchmark: the time of an empty `papervault sync` pass and of a pass with 10 changes.

    python bench/sync.py                         # 2,000 CSL records, a 1,000-item Zotero library, 20 PDFs
    python bench/sync.py --records 500 --zotero 200 --pdfs 5 --json
    python bench/sync.py --base /work/bench-ws/sync20k   # a copy of a workspace that holds the 20k records

`--base` copies an existing workspace (`papervault add conference-20k.csl.json` into it once: about a minute)
instead of adding `--records` records; the copy is changed, the base never.

A workspace gets a slice of ../shared/corpus/conference-20k.csl.json (`add`, not timed as sync), follows a Zotero
library (tests/support_zotero.py) and a watched folder of PDFs; a first pass brings them in. Then, timed:
an empty pass with the database file untouched (its stat says nothing changed), an empty pass after Zotero
rewrote its file without changing an item (the copy is read and every item's stamp compared), and a pass with
10 changes (4 titles edited and 3 items added in Zotero, 2 PDFs added and 1 removed in the folder). The index
is left out (`index=False`): its incremental cost is bench/index.py's. New arXiv versions are followed
(`arxiv_versions = true`) against a loopback arXiv server (tests/support_arxiv.py) that lists every arXiv paper of
the vault: `arxiv_requests` counts the API requests of each timed pass, `costs` what the versions pass read.
"""

from __future__ import annotations

import argparse
import json
import os
import sqlite3
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "tests"))
CORPUS = Path(os.environ.get("PAPERVAULT_SHARED", ROOT.parent / "shared")) / "corpus" / "conference-20k.csl.json"


def _timed(fn):
    t = time.perf_counter()
    out = fn()
    return round(time.perf_counter() - t, 3), out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--records", type=int, default=2000)
    ap.add_argument("--zotero", type=int, default=1000)
    ap.add_argument("--pdfs", type=int, default=20)
    ap.add_argument("--base", type=Path, help="copy this workspace (its records) instead of adding --records")
    ap.add_argument("--json", action="store_true")
    args = ap.parse_args()

    import shutil

    from support_arxiv import Catalog, LoopbackServer, Paper, make_pdf
    from support_zotero import build_large_library

    from papervault.app.adding import add
    from papervault.app.sync import sync
    from papervault.workspace import Workspace

    base = Path(tempfile.mkdtemp(prefix="pv-sync-bench-"))
    if args.base is None:
        records = json.loads(CORPUS.read_text(encoding="utf-8"))[:args.records]
        (base / "slice.json").write_text(json.dumps(records), encoding="utf-8")
    zot = build_large_library(base / "Zotero", args.zotero)
    folder = base / "Papers"
    folder.mkdir()
    for i in range(args.pdfs):
        (folder / f"p{i}.pdf").write_bytes(make_pdf(f"Benchmark paper number {i} on replicated logs",
                                                    authors=f"Ann Author{i}", body=f"Body of paper {i}."))
    if args.base is not None:
        t_import, _ = _timed(lambda: shutil.copytree(args.base, base / "ws", symlinks=True))
        ws = Workspace.resolve(str(base / "ws"))
    else:
        ws, _ = Workspace.init(base / "ws")
    with open(ws.config_path, "a", encoding="utf-8") as fh:
        fh.write(f'\n[sync]\nzotero = "{zot}"\nfolders = ["{folder}"]\narxiv_versions = true\n')
    ws = Workspace.resolve(str(base / "ws"))
    if args.base is None:
        t_import, rep = _timed(lambda: add(ws, [str(base / "slice.json")], index=False))
    arxiv_ids = sorted({m.arxiv for m in ws.vault.iter_meta() if m.arxiv})
    server = LoopbackServer(Catalog())
    server.catalog.add(*[Paper(a, f"arXiv paper {a}", "An abstract.", ["Ann Author"]) for a in arxiv_ids])
    server.__enter__()
    os.environ.update(PAPERVAULT_ARXIV_API_URL=f"{server.url}/api/query", PAPERVAULT_ARXIV_PDF_URL=f"{server.url}/pdf/",
                      PAPERVAULT_ARXIV_DELAY="0")
    ws = Workspace.resolve(str(base / "ws"))

    def api_calls() -> int:
        return sum("/api/query" in path for _, path in server.catalog.requests)

    calls: dict[str, int] = {}

    def timed_pass(name: str):
        n = api_calls()
        out = _timed(lambda: sync(ws, index=False))
        calls[name] = api_calls() - n
        return out

    t_first, first = timed_pass("first")
    t_empty, empty = timed_pass("empty")
    os.utime(zot / "zotero.sqlite")       # Zotero rewrote its file, no item changed
    t_rescan, rescan = timed_pass("rewritten_db")

    db = sqlite3.connect(zot / "zotero.sqlite")
    regular = [r[0] for r in db.execute(
        "SELECT itemID FROM items WHERE itemTypeID IN (SELECT itemTypeID FROM itemTypes WHERE typeName NOT IN "
        "('note', 'attachment', 'annotation')) ORDER BY itemID LIMIT 4")]
    for iid in regular:
        vid = db.execute("SELECT MAX(valueID) + 1 FROM itemDataValues").fetchone()[0]
        db.execute("INSERT INTO itemDataValues (valueID, value) VALUES (?, ?)", (vid, f"Edited title {iid} of a benchmark item"))
        db.execute("UPDATE itemData SET valueID = ? WHERE itemID = ? AND fieldID = 1", (vid, iid))
        db.execute("UPDATE items SET dateModified = '2025-06-01 10:00:00', version = version + 1 WHERE itemID = ?",
                   (iid,))
    for n in range(3):
        iid = db.execute("SELECT MAX(itemID) + 1 FROM items").fetchone()[0]
        db.execute("INSERT INTO items (itemID, itemTypeID, dateAdded, dateModified, clientDateModified, libraryID, "
                   "key) VALUES (?, 1, '2025-06-01', '2025-06-01', '2025-06-01', 1, ?)", (iid, f"NEWKEY{n:02d}"))
        vid = db.execute("SELECT MAX(valueID) + 1 FROM itemDataValues").fetchone()[0]
        db.execute("INSERT INTO itemDataValues (valueID, value) VALUES (?, ?)", (vid, f"A brand new benchmark item number {n}"))
        db.execute("INSERT INTO itemData (itemID, fieldID, valueID) VALUES (?, 1, ?)", (iid, vid))
    db.commit()
    db.close()
    for i in range(2):
        (folder / f"new{i}.pdf").write_bytes(make_pdf(f"New benchmark paper {i} about consensus",
                                                      authors="Bo New", body=f"New body {i}."))
    (folder / "p0.pdf").unlink()
    t_ten, ten = timed_pass("ten_changes")
    server.__exit__(None, None, None)

    papers = len(ws.vault.paper_ids())
    per = t_empty / max(1, papers)
    out = {
        "papers": papers, "csl_records": args.records, "zotero_items": args.zotero, "folder_pdfs": args.pdfs,
        "import_s": t_import, "first_pass_s": t_first, "first_pass_added": len(first.added),
        "empty_pass_s": t_empty, "empty_pass_changes": len(empty.added + empty.updated + empty.marked),
        "empty_pass_rewritten_db_s": t_rescan,
        "rescan_changes": len(rescan.added + rescan.updated + rescan.marked),
        "ten_changes_pass_s": t_ten,
        "ten_changes": {"added": len(ten.added), "updated": len(ten.updated), "marked": len(ten.marked)},
        "sources": {s["source"]: s["seconds"] for s in ten.sources},
        "failed": {s["source"]: s["error"] for p in (first, empty, rescan, ten) for s in p.sources
                   if s["status"] == "failed"},
        "sources_empty_pass": {s["source"]: s["seconds"] for s in empty.sources},
        "arxiv_papers": len(arxiv_ids), "arxiv_requests": calls,
        "costs": {"first": first.costs, "empty": empty.costs, "ten_changes": ten.costs},
    }
    if args.base is not None:
        out["csl_records"] = f"from {args.base} (copied in import_s)"
    note = (f"An empty pass reads no paper of the vault: it costs the stat of the Zotero database, of the "
            f"Zotero PDFs and of the folder's {args.pdfs} files, and asks arXiv nothing within versions_every "
            f"({t_empty:.2f} s at {papers} papers; {per * 1000:.3f} ms per paper if it grew with the vault, which "
            f"it does not); a rewritten Zotero "
            f"file costs one copy and one query of {args.zotero} items ({t_rescan:.2f} s), independent of the "
            f"vault's size.")
    out["note"] = note
    if args.json:
        print(json.dumps(out, indent=2))
    else:
        for k, v in out.items():
            print(f"{k:28} {v}")


if __name__ == "__main__":
    main()
