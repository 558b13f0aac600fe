"""The title a person would write, through `papervault add`, on PDFs made with PyMuPDF in each layout class of
real papers whose title readers get wrong (an author line larger than the title, a publisher or series banner
above it, a letter-spaced or out-of-order text layer, a title over lines of several sizes, a scanned first
page); low-confidence identities listed by `status`, `doctor` and `review`."""

from __future__ import annotations

import json
import re
import sys
from pathlib import Path

import pymupdf
import pytest

from conftest import without_multilingual
from papervault.ids import fold, last_name, normalize_title
from papervault.workspace import Workspace

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "bench"))
from identity_pdfs import BODY, CLASSES, make_class  # noqa: E402


@pytest.fixture
def ws(tmp_path):
    root = Workspace.init(tmp_path / "ws")[0].root
    without_multilingual(root)
    return Workspace(root)


def _added(cli_run, ws, folder: Path) -> dict[str, dict]:
    """`papervault add FOLDER --json`; {file name: the note metadata of its paper} (two files of one paper,
    such as the two layouts of *Data Compression*, are one paper with two sources)."""
    report = json.loads(cli_run(["add", str(folder), "--json", "--workspace", ws.root]).stdout)
    assert report["problems"] == [], report["problems"]
    out = {}
    for pid in report["added"]:
        meta = json.loads(cli_run(["show", pid, "--json", "--workspace", ws.root]).stdout)["meta"]
        for src in meta["sources"]:
            out[Path(src).name] = meta
    return out


def _family(name: str) -> str:
    return re.sub(r"[^a-z]", "", fold(last_name(name)).lower())


@pytest.mark.parametrize("part", ["tuned", "heldout"])
def test_each_layout_class_gets_the_title_and_an_author_key(ws, tmp_path, cli_run, part):
    folder = tmp_path / "pdfs"
    folder.mkdir()
    want = {}
    for name, cls, p, _, _, label, _ in CLASSES:
        if p == part:
            want[make_class(name, folder).name] = (cls, label)
    got = _added(cli_run, ws, folder)
    assert sorted(got) == sorted(want)
    for fname, (cls, label) in want.items():
        meta = got[fname]
        assert normalize_title(meta["title"]) == normalize_title(label["title"]), (cls, fname, meta["title"])
        assert [_family(a) for a in meta["authors"]] == [_family(a) for a in label["authors"]], (cls, fname)
        # No year is printed: a year range of the title ("(1969-1980)") is not the paper's year.
        assert meta.get("year") == label["year"], (cls, fname, meta.get("year"))
        # The key's author part is the first author's family name: never "anon", never a word of the title.
        assert meta["id"].startswith(_family(label["authors"][0])), (cls, meta["id"])
        assert meta["provenance"]["title"] == "layout"
        assert meta["provenance"]["title_confidence"] in ("high", "low")
        assert meta["provenance"]["title_evidence"]


def test_a_society_under_the_names_is_an_affiliation_and_a_title_year_range_no_year(ws, tmp_path, cli_run):
    folder = tmp_path / "pdfs"
    folder.mkdir()
    make_class("f-sizes", folder)
    [meta] = _added(cli_run, ws, folder).values()
    assert meta["title"] == "A Brief History of the Internet (1962-1997)"
    assert meta["authors"] == ["Barry M. Leiner", "Vinton G. Cerf"] and meta.get("year") is None
    assert meta["id"].startswith("leiner")


def test_the_banner_author_line_and_fragment_are_the_evidence_against_them(ws, tmp_path, cli_run):
    """A banner over the title and an author line larger than it are kept out of the title, and the note says
    why the title was chosen."""
    folder = tmp_path / "pdfs"
    folder.mkdir()
    for name in ("c-ams", "c-author-big", "c-letters"):
        make_class(name, folder)
    got = _added(cli_run, ws, folder)
    ams = got["c-ams.pdf"]
    assert ams["title"] == "Tail Bounds for Occupancy Problems" and ams["id"].startswith("erdos")
    assert "author block below" in ams["provenance"]["title_evidence"]
    assert got["c-author-big.pdf"]["id"].startswith("saltzer")
    letters = got["lelewer-data-compression.pdf"]
    assert letters["title"] == "Data Compression"
    assert letters["provenance"]["title_confidence"] == "high"
    assert "file name" in letters["provenance"]["title_evidence"]


def _doubtful_pdf(folder: Path) -> Path:
    """A page whose only large line has nothing to back it: no author block, no abstract, a file name that
    says nothing, no metadata title."""
    doc = pymupdf.open()
    page = doc.new_page()
    page.insert_text((72, 100), "Notes on Replicated Logs", fontsize=18, fontname="tibo")
    y = 140
    for i in range(0, len(BODY), 90):
        page.insert_text((72, y), BODY[i:i + 90], fontsize=10, fontname="tiro")
        y += 13
    path = folder / "scan0001.pdf"
    doc.save(path)
    doc.close()
    return path


def test_low_confidence_identities_are_listed_by_status_doctor_and_review(ws, tmp_path, cli_run):
    folder = tmp_path / "pdfs"
    folder.mkdir()
    _doubtful_pdf(folder)
    make_class("c-dropcap", folder)
    got = _added(cli_run, ws, folder)
    weak, sure = got["scan0001.pdf"], got["c-dropcap.pdf"]
    # No author and a low-confidence title: the id is a short form of the title, never "anon".
    assert weak["id"].startswith("notes") and weak["provenance"]["title_confidence"] == "low"
    assert sure["provenance"]["title_confidence"] == "high" and sure["id"].startswith("meijer")
    w = ["--workspace", ws.root]

    st = json.loads(cli_run(["status", "--json", *w]).stdout)
    assert [d["id"] for d in st["low_confidence"]] == [weak["id"]]
    assert "low confidence" in st["low_confidence"][0]["why"]
    text = cli_run(["status", *w]).stdout
    assert "1 paper with a low-confidence title or id" in text and weak["id"] in text
    checks = {c["name"]: c for c in json.loads(cli_run(["doctor", "--json", *w], check=False).stdout)["checks"]}
    assert weak["id"] in checks["paper identity"]["detail"] and sure["id"] not in checks["paper identity"]["detail"]
    assert "papervault edit" in checks["paper identity"]["fix"]
    listed = cli_run(["review", "--all", *w]).stdout
    assert f"identity to check: title read with low confidence" in listed

    # A person's correction is the paper's identity: it is no longer doubted.
    cli_run(["edit", weak["id"], "--title", "Notes on Replicated Logs", "--author", "Ann Roe", *w])
    st = json.loads(cli_run(["status", "--json", *w]).stdout)
    assert st["low_confidence"] == []


MEGASTORE = "datastores_megastore-providing-scalable-highly-available-storage-for-interactive-services.pdf"


def test_a_notes_pages_are_the_printed_pages_with_the_pdf_page_in_the_link(ws, corpus_dir, cli_run):
    """Megastore is printed on pages 223-234: its note quotes `[p. 225](paper.md#page-3)`, never `[p. 3]`."""
    report = json.loads(cli_run(["add", str(corpus_dir / MEGASTORE), "--json", "--workspace", ws.root]).stdout)
    [pid] = report["added"]
    meta = ws.vault.read_meta(pid)
    assert meta.page_labels[:3] == ["223", "224", "225"]
    note = ws.vault.note_path(pid).read_text(encoding="utf-8")
    cites = re.findall(r"\[p\. ([^\]]+)\]\(paper\.md#page-(\d+)\)", note)
    assert len(cites) >= 5
    for label, page in cites:
        assert label == meta.page_labels[int(page) - 1], (label, page)
    assert all(223 <= int(label) <= 234 for label, _ in cites)
