"""A BibTeX entry whose PDF cannot be parsed (corrupt, or abandoned past the parse timeout) is not lost: it is a
metadata-only paper, the PDF's problem is reported, and the next `add` of the same file parses the PDF again."""

from __future__ import annotations

import json
from pathlib import Path

from papervault.workspace import Workspace
from support_arxiv import make_pdf

TITLE = "Leases for Replicated Logs Under Partial Failure"


def _bib(folder: Path) -> Path:
    bib = folder / "refs.bib"
    bib.write_text("@article{doe2021leases, title={" + TITLE + "}, author={Doe, Jane and Roe, Ann}, year={2021},\n"
                   "  journal={Journal of Distributed Things}, doi={10.1000/leases.2021}, file={leases.pdf}}\n"
                   "@article{poe2019fine, title={A Fine Paper Without a PDF}, author={Poe, Ed}, year={2019}}\n",
                   encoding="utf-8")
    return bib


def test_an_entry_whose_pdf_fails_is_kept_as_metadata_and_retried(tmp_path, cli_run):
    ws, _ = Workspace.init(tmp_path / "ws")
    w = ["--workspace", ws.root]
    lib = tmp_path / "lib"
    lib.mkdir()
    pdf = lib / "leases.pdf"
    pdf.write_bytes(b"%PDF-1.4\n1 0 obj << /Type /Catalog /Pages 2 0 R >> endobj\nthe rest was lost in a copy\n")
    bib = _bib(lib)

    report = json.loads(cli_run(["add", str(bib), "--json", *w]).stdout)
    assert sorted(report["added"]) == ["doe2021leases", "poe2019fine"], report
    [problem] = report["problems"]
    assert problem["source"] == f"{bib}#doe2021leases"
    assert problem["error"].startswith("its PDF was not imported: ") and "metadata-only" in problem["error"]
    meta = json.loads(cli_run(["show", "doe2021leases", "--json", *w]).stdout)["meta"]
    assert meta["status"] == "metadata" and meta["title"] == TITLE
    assert meta["authors"] == ["Jane Doe", "Ann Roe"] and meta["doi"] == "10.1000/leases.2021"
    assert meta["venue"] == "Journal of Distributed Things" and not meta.get("sha256")
    assert not (ws.vault.root / "papers" / "doe2021leases" / "paper.md").exists()

    # the same file, the PDF still broken: the same problem, nothing new written
    again = json.loads(cli_run(["add", str(bib), "--json", *w]).stdout)
    assert again["added"] == [] and sorted(again["unchanged"]) == ["doe2021leases", "poe2019fine"], again
    assert [p["source"] for p in again["problems"]] == [f"{bib}#doe2021leases"]

    # the PDF repaired: the next `add` of the same file parses it into the paper the entry made
    pdf.write_bytes(make_pdf(TITLE, pages=2, authors="Jane Doe, Ann Roe",
                             body="A lease lets one replica serve reads while the others cannot write."))
    fixed = json.loads(cli_run(["add", str(bib), "--json", *w]).stdout)
    assert fixed["problems"] == [] and fixed["added"] == [], fixed
    assert [m["id"] for m in fixed["merged"] if m["gained_pdf"]] == ["doe2021leases"], fixed
    meta = json.loads(cli_run(["show", "doe2021leases", "--json", *w]).stdout)["meta"]
    assert meta["status"] != "metadata" and meta["sha256"] and meta["title"] == TITLE
    assert "A lease lets one replica serve reads" in (ws.vault.root / "papers" / "doe2021leases" /
                                                      "paper.md").read_text(encoding="utf-8")
    listed = cli_run(["list", "--json", *w]).stdout
    assert sorted(p["id"] for p in json.loads(listed)) == ["doe2021leases", "poe2019fine"]


def test_a_bare_pdf_that_fails_is_still_one_problem_and_no_paper(tmp_path, cli_run):
    ws, _ = Workspace.init(tmp_path / "ws")
    w = ["--workspace", ws.root]
    pdf = tmp_path / "broken.pdf"
    pdf.write_bytes(b"%PDF-1.4\nnothing else\n")
    res = cli_run(["add", str(pdf), "--json", *w], check=False)
    report = json.loads(res.stdout)
    assert report["added"] == [] and [p["source"] for p in report["problems"]] == [str(pdf)], report
    assert "metadata-only" not in report["problems"][0]["error"]
    assert json.loads(cli_run(["list", "--json", *w]).stdout) == []
