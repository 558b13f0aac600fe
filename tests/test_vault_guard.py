"""No command writes, deletes, renames or reads through a link or a note's path outside the vault (issue 36,
items 5-11).

A shared vault may carry links planted at every place the vault writes: a paper's folder, its `figures/`, its
`paper.md`, its `note.md`, a page of the user's, a file of `pdfs/`. Through the user's entry points (`add`,
`rekey`, `delete`, `edit`, `review --done`, `open`, `show`, the survey's stages) nothing outside may change, and
each refusal is one line. Ids and what `edit` stores are checked as an import checks them.
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
from pathlib import Path

from types import SimpleNamespace

import pymupdf
import pytest

from papervault.vault import frontmatter

TITLE = "Paxos Made Simple Consensus Revisited"
PID = "lamport2001paxos"


def _pdf(path: Path, title: str = TITLE, body: str = "The Paxos algorithm implements a fault-tolerant "
         "distributed system.") -> Path:
    doc = pymupdf.open()
    page = doc.new_page()
    page.insert_text((50, 90), title, fontsize=16)
    page.insert_text((50, 130), "Leslie Lamport", fontsize=10)
    page.insert_text((50, 170), body, fontsize=10)
    doc.set_metadata({"title": title, "author": "Leslie Lamport"})
    doc.save(str(path))
    doc.close()
    return path


def _bib(path: Path, *entries: tuple[str, str, str]) -> Path:
    path.write_text("".join(f"@article{{{key}, title={{{title}}}, author={{{author}}}, year={{2001}}}}\n"
                            for key, title, author in entries), encoding="utf-8")
    return path


def _snapshot(folder: Path) -> dict[str, bytes]:
    """Every file under `folder` (not following links) with its bytes: what must not change."""
    out = {}
    for dirpath, _, files in os.walk(folder):
        for name in files:
            p = Path(dirpath) / name
            out[str(p.relative_to(folder))] = p.read_bytes()
    return out


def _one_line_error(res, *words: str) -> str:
    assert res.exit_code == 1, res.output
    assert "Traceback" not in res.output
    lines = [ln for ln in res.stderr.splitlines() if words[0] in ln]        # the reason, said once, on one line
    assert len(lines) == 1 and lines[0].startswith(("error:", "skipped")), res.stderr
    for w in words:
        assert w in lines[0], lines[0]
    return lines[0]


@pytest.fixture
def run(capsys):
    """`papervault ARGS` as the console script runs it (typed errors become one line on stderr):
    -> (exit_code, stdout, stderr, output)."""
    from papervault.cli import main

    def call(args: list) -> SimpleNamespace:
        capsys.readouterr()
        try:
            main([str(a) for a in args])
            code = 0
        except SystemExit as exc:
            code = exc.code or 0
        out = capsys.readouterr()
        return SimpleNamespace(exit_code=code, stdout=out.out, stderr=out.err, output=out.out + out.err)

    return call


@pytest.fixture
def ws(cli_run, workspace_env, tmp_path) -> Path:
    """A workspace holding one metadata-only paper (from BibTeX): `lamport2001paxos`."""
    cli_run(["init", workspace_env])
    cli_run(["add", _bib(tmp_path / "refs.bib", (PID, TITLE, "Lamport, Leslie")), "--quiet"])
    return workspace_env


@pytest.fixture
def outside(tmp_path) -> Path:
    """A folder outside the workspace, as a user's own files: pictures, a page, a note, a PDF."""
    out = tmp_path / "outside"
    out.mkdir()
    (out / "holiday.png").write_bytes(b"\x89PNG\r\n\x1a\n a photo of the user's")
    (out / "family.png").write_bytes(b"\x89PNG\r\n\x1a\n another")
    (out / "diary.md").write_text(f"# Diary\n\nI cite [@{PID}] and papers/{PID}/ in my own notes.\n", encoding="utf-8")
    return out


# --- item 5 and the guard at each place `add` writes --------------------------------------------------

@pytest.mark.parametrize("where", ["figures", "paper.md", "folder"])
def test_add_writes_and_deletes_nothing_through_a_link_in_the_paper_it_completes(ws, outside, tmp_path, cli_run,
                                                                                 where, run):
    """A PDF that completes a metadata-only paper: its figures/, paper.md or the whole folder is a link out.
    Before the guard, a linked figures/ lost every .png."""
    pdir = ws / "vault" / "papers" / PID
    if where == "figures":
        (pdir / "figures").symlink_to(outside, target_is_directory=True)
    elif where == "paper.md":
        (pdir / "paper.md").symlink_to(outside / "diary.md")
    else:
        moved = outside / "paperfolder"
        shutil.move(str(pdir), moved)
        pdir.symlink_to(moved, target_is_directory=True)
    before = _snapshot(outside)
    res = run(["add", _pdf(tmp_path / "paxos.pdf"), "--json"])
    assert _snapshot(outside) == before
    assert pdir.is_symlink() or (pdir / where).is_symlink()      # refused, not replaced
    if where == "folder":
        # a linked folder is no paper of the vault (its note is never read): the PDF becomes a paper of its own
        added = json.loads(res.stdout)["added"]
        assert len(added) == 1 and added[0] != PID
        new = ws / "vault" / "papers" / added[0]
        assert not new.is_symlink() and (new / "paper.md").is_file()
    else:
        problems = json.loads(res.stdout)["problems"]
        assert res.exit_code == 1 and len(problems) == 1, res.output
        assert "leads out of the vault" in problems[0]["error"] and "\n" not in problems[0]["error"]


def test_a_link_in_pdfs_is_replaced_by_the_copy_not_written_through(ws, outside, tmp_path, cli_run):
    pdf = _pdf(tmp_path / "paxos.pdf")
    sha = hashlib.sha256(pdf.read_bytes()).hexdigest()
    (ws / "pdfs").mkdir(exist_ok=True)
    stored = ws / "pdfs" / f"{sha}.pdf"
    stored.symlink_to(outside / "diary.md")
    before = _snapshot(outside)
    cli_run(["add", pdf, "--quiet"])
    assert _snapshot(outside) == before
    assert not stored.is_symlink() and stored.read_bytes() == pdf.read_bytes()


def test_survey_parse_stage_writes_nothing_through_a_linked_figures_folder(ws, outside, tmp_path, cli_run):
    """The survey's parse stage completes a selected paper whose PDF is kept but whose full text is gone."""
    from papervault.app.survey import SurveyContext, parse_paper
    from papervault.workspace import Workspace

    cli_run(["add", _pdf(tmp_path / "paxos.pdf"), "--quiet"])
    pdir = ws / "vault" / "papers" / PID
    (pdir / "paper.md").unlink()
    shutil.rmtree(pdir / "figures", ignore_errors=True)
    (pdir / "figures").symlink_to(outside, target_is_directory=True)
    before = _snapshot(outside)
    out = parse_paper(SurveyContext(Workspace(ws), "", "s", "extractive"), PID)
    assert out["status"] == "failed" and "leads out of the vault" in out["message"] and "\n" not in out["message"]
    assert _snapshot(outside) == before and not (pdir / "paper.md").exists()


# --- item 6: rekey -----------------------------------------------------------------------------------

def test_rekey_rewrites_no_file_outside_the_vault(ws, outside, cli_run):
    vault = ws / "vault"
    (vault / "diary.md").symlink_to(outside / "diary.md")                  # a page that is a link out
    (vault / "inside.md").write_text(f"See [@{PID}].\n", encoding="utf-8")
    (vault / "alias.md").symlink_to(vault / "inside.md")                    # a link inside the vault: fine
    before = _snapshot(outside)
    res = cli_run(["rekey", PID, "lamport2001simple"])
    assert _snapshot(outside) == before
    warnings = [ln for ln in res.stderr.splitlines() if ln.startswith("warning:")]
    assert len(warnings) == 1 and "diary.md leads out of the vault" in warnings[0], res.stderr
    assert (vault / "inside.md").read_text(encoding="utf-8") == "See [@lamport2001simple].\n"
    assert (vault / "alias.md").is_symlink()                                 # the link stays a link
    assert (vault / "papers" / "lamport2001simple" / "note.md").is_file()


# --- item 9: rekey any number of times ------------------------------------------------------------------

def test_rekey_three_times_in_a_row_with_aliases(ws, tmp_path, cli_run, run):
    cli_run(["add", _bib(tmp_path / "more.bib", ("gray1978notes", "Notes on Data Base Operating Systems",
                                                 "Gray, Jim"),
                         ("liskov2012vr", "Viewstamped Replication Revisited", "Liskov, Barbara")), "--quiet"])
    cli_run(["rekey", PID, "paxos2001"])              # lamport's note now has an alias
    cli_run(["rekey", "gray1978notes", "gray1978"])   # the second rekey crashed here
    cli_run(["rekey", "paxos2001", "paxos"])           # and a third, of a paper that has an alias already
    out = json.loads(cli_run(["rekey", "liskov2012vr", "--json"]).stdout)     # a fresh id made again
    assert out["id"] == "liskov2012vr" and out["new"]
    listed = {p["id"] for p in json.loads(cli_run(["list", "--json"]).stdout)}
    assert {"paxos", "gray1978", out["new"]} <= listed and PID not in listed
    shown = json.loads(cli_run(["show", PID, "--json"]).stdout)                # the first id still resolves
    assert shown["meta"]["id"] == "paxos" and shown["meta"]["aliases"] == [PID, "paxos2001"]
    res = run(["rekey", "paxos", "gray1978notes"])           # an alias is taken
    _one_line_error(res, "is taken")


# --- item 8: delete ------------------------------------------------------------------------------------

def test_delete_of_a_linked_paper_folder_is_one_line_and_deletes_nothing(ws, outside, tmp_path, cli_run, run):
    folder = outside / "evil"
    folder.mkdir()
    (folder / "note.md").write_text("---\nid: evil\ntitle: Evil\n---\n\n# Evil\n", encoding="utf-8")
    (folder / "paper.md").write_text("# Evil\n", encoding="utf-8")
    (ws / "vault" / "papers" / "evil").symlink_to(folder, target_is_directory=True)
    before = _snapshot(outside)
    for ids in (["evil"], [PID, "evil"]):             # a linked folder among others refuses them all
        res = run(["delete", *ids])
        _one_line_error(res, "papers/evil leads out of the vault", "not deleted")
        assert _snapshot(outside) == before
        assert (ws / "vault" / "papers" / PID / "note.md").is_file()
    cli_run(["delete", PID])


# --- item 10: ids and slugs are whole lines -------------------------------------------------------------

def test_ids_and_slugs_with_a_trailing_newline_are_refused_and_doctor_finds_such_folders(ws, cli_run, run):
    papers = ws / "vault" / "papers"
    before = sorted(p.name for p in papers.iterdir())
    _one_line_error(run(["rekey", PID, "y\n"]), "not a valid id")
    _one_line_error(run(["show", PID + "\n"]), "invalid paper id")
    _one_line_error(run(["survey", "consensus", "--slug", "s\n", "--papers", "all", "--select-only"]),
                    "invalid survey name")
    assert sorted(p.name for p in papers.iterdir()) == before
    assert not (ws / "vault" / "surveys" / "s\n").exists()
    # a folder such a name made earlier (or a collaborator's) is found by doctor
    bad = papers / "x\n"
    shutil.copytree(papers / PID, bad)
    report = json.loads(run(["doctor", "--json"]).stdout)
    check = next(c for c in report["checks"] if c["name"] == "folder names")
    assert not check["ok"] and repr("x\n") in check["detail"] and "\n" not in check["detail"]


# --- item 11: edit checks what it stores -----------------------------------------------------------------

@pytest.mark.parametrize("args, words", [
    (["--doi", "javascript:alert(document.cookie)"], ["is not a DOI"]),
    (["--doi", "../../x"], ["is not a DOI"]),
    (["--arxiv", "../../x"], ["is not an arXiv id"]),
    (["--arxiv", "javascript:alert(1)"], ["is not an arXiv id"]),
    (["--title", "T" * 1001], ["1,001 characters", "1,000"]),
    (["--venue", "V" * 501], ["501 characters"]),
])
def test_edit_refuses_what_an_import_would_not_store(ws, cli_run, args, words, run):
    note = ws / "vault" / "papers" / PID / "note.md"
    before = note.read_bytes()
    _one_line_error(run(["edit", PID, *args]), *words)
    assert note.read_bytes() == before


def test_edit_stores_a_doi_and_arxiv_id_as_an_import_does(ws, cli_run):
    out = json.loads(cli_run(["edit", PID, "--doi", "https://doi.org/10.1145/568425.568433", "--arxiv",
                              "arXiv:2106.04561v2", "--title", "  Paxos Made\nSimple  ", "--json"]).stdout)
    assert out["doi"] == "10.1145/568425.568433" and out["arxiv"] == "2106.04561"
    assert out["title"] == "Paxos Made Simple"                      # one line


# --- item 7: a shared note's `files:` are never read ---------------------------------------------------

def test_a_shared_notes_files_path_is_read_by_no_command(ws, outside, tmp_path, cli_run, run):
    """A note that arrived with a shared vault names PDFs outside pdfs/: absolute and `../`. Neither `open`,
    `show` nor the survey's parse stage reads them; each says why in one line."""
    from papervault.app.survey import SurveyContext, parse_paper
    from papervault.workspace import Workspace

    secret = _pdf(outside / "private.pdf", "Private Salary Review", "confidential quokka figures")
    note = ws / "vault" / "papers" / PID / "note.md"
    for files in ([str(secret)], [os.path.relpath(secret, note.parent)]):
        data, body = frontmatter.split(note.read_text(encoding="utf-8"))
        data.update(files=files, status="metadata")
        data.pop("sha256", None)
        note.write_text(frontmatter.join(data, body), encoding="utf-8")
        res = run(["open", PID, "--print"])
        _one_line_error(res, "a note's files are not read")
        shown = json.loads(cli_run(["show", PID, "--json"]).stdout)
        assert shown["pdf"] is None
        out = parse_paper(SurveyContext(Workspace(ws), "", "s", "extractive"), PID)
        assert out["status"] == "no-pdf" and "a note's files are not read" in out["message"]
        assert not (note.parent / "paper.md").exists()
    assert "quokka" not in "".join(p.read_text(errors="replace") for p in (ws / "vault").rglob("*.md"))


def test_an_import_from_a_bib_the_user_chose_reads_its_file_field_and_keeps_a_copy(ws, tmp_path, cli_run):
    """The other side of item 7: a .bib the user adds may name PDFs by `../` paths; they are read at import
    and copied into pdfs/<sha256>.pdf, which is what every command reads afterwards."""
    papers = tmp_path / "library" / "pdfs"
    papers.mkdir(parents=True)
    pdf = _pdf(papers / "gray.pdf", "Notes on Data Base Operating Systems", "Two-phase commit and locking.")
    bib = tmp_path / "library" / "bib" / "gray.bib"
    bib.parent.mkdir()
    bib.write_text("@article{gray1978notes, title={Notes on Data Base Operating Systems}, author={Gray, Jim},"
                   " year={1978}, file={../pdfs/gray.pdf}}\n", encoding="utf-8")
    cli_run(["add", bib, "--quiet"])
    sha = hashlib.sha256(pdf.read_bytes()).hexdigest()
    pdf.unlink()                                          # the original may go: the kept copy is read
    url = cli_run(["open", "gray1978notes", "--print"]).stdout.strip()
    assert url.endswith(f"pdfs/{sha}.pdf")


# --- the guard at the note: edit and review --done ---------------------------------------------------------

@pytest.mark.parametrize("command", [["edit", PID, "--title", "Hijacked"], ["review", PID, "--done"]])
def test_a_linked_note_is_neither_read_nor_rewritten(ws, outside, cli_run, command, run):
    note = ws / "vault" / "papers" / PID / "note.md"
    shutil.copy(note, outside / "note.md")
    note.unlink()
    note.symlink_to(outside / "note.md")
    before = _snapshot(outside)
    res = run(command)
    assert res.exit_code != 0 and "Traceback" not in res.output
    assert "leads out of the vault" in res.output
    assert _snapshot(outside) == before


def test_a_linked_survey_folder_is_not_written(ws, outside, cli_run, run):
    (ws / "vault" / "surveys" / "consensus").symlink_to(outside, target_is_directory=True)
    before = _snapshot(outside)
    res = run(["survey", "consensus", "--slug", "consensus", "--papers", "all", "--select-only"])
    _one_line_error(res, "leads out of the vault")
    assert _snapshot(outside) == before
