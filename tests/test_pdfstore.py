"""The workspace keeps each paper's PDF (pdfs/<sha256>.pdf): `add` copies it in, the note names it by hash,
`open` opens it at a page after the original is gone, and show, MCP, search sources and the site use the copy."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from conftest import without_multilingual
from papervault.hashing import file_sha256
from papervault.workspace import Workspace
from support_faults import run

HARVEST = "distributed_systems_harvest-yield-and-scalable-tolerant-systems.pdf"
UNIX = "operating_systems_unix-time-sharing-system.pdf"


def pv(*args: str, ws: Path, check: bool = True, env: dict | None = None,
       process: bool = False) -> subprocess.CompletedProcess:
    """`papervault ARGS` as the console script runs it: in this process (what it prints, its exit status), or
    with `process` in a process of its own (for what happens outside it: a browser it starts)."""
    if process:
        proc = subprocess.run([sys.executable, "-m", "papervault", *args], capture_output=True, text=True,
                              timeout=600, env=dict(os.environ, PAPERVAULT_WORKSPACE=str(ws), **(env or {})),
                              cwd=ws.parent)
    else:
        proc = run(list(args), ws, env=env)
    if check and proc.returncode != 0:
        raise AssertionError(f"papervault {' '.join(args)} failed ({proc.returncode}):\n{proc.stdout}\n{proc.stderr}")
    return proc


def tracked(ws: Path) -> list[str]:
    return subprocess.run(["git", "ls-files"], cwd=ws / "vault", capture_output=True, text=True, check=True).stdout.split()


@pytest.fixture
def added(tmp_path, corpus_dir):
    """A workspace with one corpus PDF added from a temporary Downloads folder."""
    ws = tmp_path / "ws"
    pv("init", str(ws), ws=ws)
    downloads = tmp_path / "Downloads"
    downloads.mkdir()
    original = downloads / "harvest.pdf"
    shutil.copy(corpus_dir / HARVEST, original)
    out = json.loads(pv("add", str(original), "--json", ws=ws).stdout)
    assert len(out["added"]) == 1 and out["problems"] == [], out
    return ws, out["added"][0], original


def test_add_keeps_the_pdf_and_open_finds_it_after_the_original_is_gone(added, tmp_path):
    ws, pid, original = added
    sha = file_sha256(original)
    w = Workspace(ws)
    meta = w.vault.read_meta(pid)
    assert meta.pdf == sha and meta.sha256 == sha
    stored = ws / "pdfs" / f"{sha}.pdf"
    assert stored.is_file() and file_sha256(stored) == sha
    assert not [f for f in tracked(ws) if f.endswith(".pdf")]     # never in the vault's git history
    assert w.vault.is_clean()

    shutil.rmtree(original.parent)                                # the Downloads folder is gone
    url = pv("open", pid, "--print", "--page", "3", ws=ws).stdout.strip()
    assert url == stored.as_uri() + "#page=3"
    assert Path(url.removeprefix("file://").split("#")[0]).is_file()
    data = json.loads(pv("open", pid, "--json", ws=ws).stdout)
    assert data == {"id": pid, "pdf": str(stored), "url": stored.as_uri(), "page": None, "kept": True}

    # `open` without --print hands the URL to $BROWSER
    got = tmp_path / "browser-args"
    browser = tmp_path / "browser.sh"
    browser.write_text(f'#!/bin/sh\necho "$@" > {got}\n')
    browser.chmod(0o755)
    pv("open", pid, "--page", "2", ws=ws, env={"BROWSER": str(browser)}, process=True)
    for _ in range(100):
        if got.is_file() and got.read_text().strip():
            break
        import time
        time.sleep(0.05)
    assert got.read_text().strip() == stored.as_uri() + "#page=2"

    # errors are one line with a fix
    bad = pv("open", pid, "--page", "99", ws=ws, check=False)
    assert bad.returncode == 1 and "page 99 is not a page of" in bad.stderr and "Traceback" not in bad.stderr
    assert len(bad.stderr.strip().splitlines()) == 1
    missing = pv("open", "nobody1900none", "--print", ws=ws, check=False)
    assert missing.returncode == 1 and "no paper 'nobody1900none'" in missing.stderr

    # show and MCP get_paper name the kept copy
    shown = json.loads(pv("show", pid, "--json", ws=ws).stdout)
    assert shown["pdf"] == str(stored) and shown["meta"]["pdf"] == sha
    assert f"PDF: {stored}" in pv("show", pid, ws=ws).stdout
    from mcp_server.tools import VaultTools

    assert VaultTools(w).get_paper(pid)["pdf"] == str(stored)

    # the site publishes the kept copy and links each full-text page to that page of it
    pv("site", "build", ws=ws)
    site_pdf = ws / "site" / "papers" / pid / "paper.pdf"
    assert site_pdf.is_file() and file_sha256(site_pdf) == sha
    fulltext = (ws / "site" / "papers" / pid / "paper.html").read_text(encoding="utf-8")
    assert 'href="paper.pdf#page=3"' in fulltext and 'id="page-3"' in fulltext
    assert '<a href="paper.pdf">PDF</a>' in (ws / "site" / "papers" / pid / "note.html").read_text(encoding="utf-8")


def test_search_hits_name_the_kept_pdf(added, model_dir):
    ws, pid, original = added
    shutil.rmtree(original.parent)
    without_multilingual(ws)       # the English vectors are the ones searched here
    pv("index", ws=ws)
    hits = json.loads(pv("search", "harvest yield", "--json", ws=ws).stdout)
    rows = hits["results"] if isinstance(hits, dict) else hits
    assert rows and all(h["source"] == str(ws / "pdfs" / f"{Workspace(ws).vault.read_meta(pid).pdf}.pdf")
                        for h in rows if h["paper_id"] == pid)


def _forget(w: Workspace, pid: str) -> Path:
    """Make the paper look as it did before the workspace kept PDFs: no `pdf:`, no copy."""
    sha = w.vault.read_meta(pid).pdf
    w.vault.update_meta(pid, pdf=None)
    w.vault.commit("test: a paper from before the PDF store")
    stored = w.pdf_dir / f"{sha}.pdf"
    stored.unlink()
    return stored


def test_earlier_papers_get_their_pdf_on_doctor_fix_and_on_the_next_add(added, corpus_dir, tmp_path):
    ws, pid, original = added
    w = Workspace(ws)
    stored = _forget(w, pid)
    report = json.loads(pv("doctor", "--json", ws=ws, check=False).stdout)
    check = next(c for c in report["checks"] if c["name"] == "PDFs")
    assert pid in check["detail"] and "doctor --fix" in check["fix"]

    fixed = json.loads(pv("doctor", "--fix", "--json", ws=ws, check=False).stdout)["fixed"]
    assert any("kept 1 PDF" in line for line in fixed), fixed
    assert stored.is_file() and w.vault.read_meta(pid).pdf == stored.stem and w.vault.is_clean()

    # the next `add` (of anything) keeps the PDFs of earlier papers whose originals are still there
    _forget(w, pid)
    other = tmp_path / "other.pdf"
    shutil.copy(corpus_dir / UNIX, other)
    out = json.loads(pv("add", str(other), "--json", ws=ws).stdout)
    assert out["pdfs_kept"] == [pid] and len(out["added"]) == 1
    assert stored.is_file() and w.vault.read_meta(pid).pdf == stored.stem and w.vault.is_clean()

    # the original moved: adding the same bytes from the new place keeps them
    _forget(w, pid)
    moved = tmp_path / "Papers" / "renamed.pdf"
    moved.parent.mkdir()
    shutil.move(original, moved)
    text = pv("add", str(moved), ws=ws).stdout
    assert f"merged {moved} into {pid}" in text and f"kept the PDFs of 1 earlier paper in {w.pdf_dir}: {pid}" in text
    assert stored.is_file() and w.vault.is_clean() and w.vault.read_meta(pid).pdf == stored.stem


def test_a_hostile_pdf_value_or_a_link_in_the_store_is_never_followed(added, tmp_path):
    from papervault.pdfstore import kept
    from papervault.site.build import build_site

    ws, pid, original = added
    w = Workspace(ws)
    sha = w.vault.read_meta(pid).pdf
    secret = tmp_path / "secret.pdf"
    secret.write_bytes(b"%PDF-1.4 not yours\n")
    # a `pdf:` that is a path, not a hash, names nothing
    w.vault.update_meta(pid, pdf="../../" + str(secret))
    w.vault.commit("test: hostile pdf value")
    assert kept(ws, w.vault.read_meta(pid).pdf) is None
    shutil.rmtree(original.parent)
    out = pv("open", pid, "--print", ws=ws, check=False)
    assert out.returncode == 1 and "is not in" in out.stderr and "Traceback" not in out.stderr
    # a link planted in the store, under the right name, leading out of it
    w.vault.update_meta(pid, pdf=sha)
    w.vault.commit("test: pdf back")
    stored = w.pdf_dir / f"{sha}.pdf"
    stored.chmod(0o644)
    stored.unlink()
    stored.symlink_to(secret)
    assert kept(ws, sha) is None
    build_site(w)
    assert not (ws / "site" / "papers" / pid / "paper.pdf").exists()
    assert "not yours" not in "".join(p.read_text(errors="replace") for p in (ws / "site").rglob("*.html"))
    assert not any(p.is_symlink() and p.resolve() == secret for p in (ws / ".papervault" / "site-src").rglob("*"))


def test_survey_parse_stage_reads_the_kept_pdf(added):
    """The survey's parse stage finds a selected paper's PDF in the store when the original is gone."""
    from papervault.app.survey import SurveyContext, parse_paper

    ws, pid, original = added
    w = Workspace(ws)
    shutil.rmtree(original.parent)
    w.vault.fulltext_path(pid).unlink()
    assert parse_paper(SurveyContext(Workspace(ws), "", "s", "extractive"), pid) == {"id": pid, "status": "parsed"}
    assert '<a id="page-3"></a>' in w.vault.read_fulltext(pid)


def test_an_original_that_changed_since_it_was_added_is_not_kept(added, corpus_dir):
    """Backfilling keeps an original only if it still holds the bytes the note records."""
    ws, pid, original = added
    w = Workspace(ws)
    stored = _forget(w, pid)
    original.chmod(0o644)
    shutil.copy(corpus_dir / UNIX, original)          # another paper now sits under the old name
    fixed = json.loads(pv("doctor", "--fix", "--json", ws=ws, check=False).stdout)["fixed"]
    assert not any("kept" in line for line in fixed), fixed
    assert not stored.exists() and w.vault.read_meta(pid).pdf is None
    out = pv("open", pid, "--print", ws=ws, check=False)           # nor opened as if it were this paper's
    assert out.returncode == 1 and "its original is gone or changed" in out.stderr and "papervault add" in out.stderr
    assert json.loads(pv("show", pid, "--json", ws=ws).stdout)["pdf"] is None
