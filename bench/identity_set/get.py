"""Rebuild the identity set's folder of PDFs from the public repositories the labels name.

    python bench/identity_set/get.py DIR [--labels FILE] [--half tune|heldout|both]

Every line of labels.jsonl names the repository, commit and path the PDF was taken from, and its sha256.
Each file is downloaded from that repository at that commit, checked against the sha256 and written to
DIR/<file> (the name the labels give, which the benchmark looks up). Files already present with the right
sha256 are kept; a file that cannot be had or does not match is reported and skipped, the others go on.
Needs network access to GitHub; the benchmark itself runs offline on the folder.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import sys
import urllib.parse
import urllib.request
from pathlib import Path

HERE = Path(__file__).resolve().parent
RAW = "https://raw.githubusercontent.com/{repo}/{commit}/{path}"
MAX_BYTES = 64 * 1024 * 1024


def url(source: dict) -> str:
    return RAW.format(repo=source["repo"], commit=source["commit"], path=urllib.parse.quote(source["path"]))


def sha256(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def fetch(source: dict) -> bytes:
    with urllib.request.urlopen(url(source), timeout=60) as resp:  # noqa: S310 - fixed https host
        data = resp.read(MAX_BYTES + 1)
    if len(data) > MAX_BYTES:
        raise ValueError("larger than 64 MiB")
    return data


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("dir", type=Path)
    ap.add_argument("--labels", type=Path, default=HERE / "labels.jsonl")
    ap.add_argument("--half", choices=("tune", "heldout", "both"), default="both")
    args = ap.parse_args()
    args.dir.mkdir(parents=True, exist_ok=True)
    rows = [json.loads(line) for line in args.labels.read_text(encoding="utf-8").splitlines() if line.strip()]
    rows = [r for r in rows if args.half == "both" or r["half"] == args.half]
    ok = failed = 0
    for i, r in enumerate(rows, 1):
        name = Path(r["file"]).name          # never a path out of DIR
        target = args.dir / name
        if target.is_file() and sha256(target.read_bytes()) == r["sha256"]:
            ok += 1
            continue
        try:
            data = fetch(r["source"])
        except Exception as exc:  # one missing file never stops the rest
            print(f"[{i}/{len(rows)}] {name}: not fetched ({exc})", file=sys.stderr)
            failed += 1
            continue
        if sha256(data) != r["sha256"]:
            print(f"[{i}/{len(rows)}] {name}: sha256 differs from the label's, skipped", file=sys.stderr)
            failed += 1
            continue
        target.write_bytes(data)
        ok += 1
        print(f"[{i}/{len(rows)}] {name}")
    print(f"{ok} PDFs in {args.dir}, {failed} missing")
    return 0 if failed == 0 else 1


if __name__ == "__main__":
    sys.exit(main())
