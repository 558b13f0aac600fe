"""One paper once: the same paper from a PDF, a BibTeX entry and a Zotero item is one paper with three sources."""

from __future__ import annotations

import pytest

from papervault.ingest import add
from papervault.workspace import Workspace
from support_arxiv import Catalog, LoopbackServer, Paper, make_pdf
from support_zotero import SHARED_ZOTERO, ZoteroBuilder

DOI = "10.1145/568425.568433"


def _paxos_pdf() -> bytes:
    return make_pdf("Paxos Made Simple", pages=2, authors="Leslie Lamport",
                    body=f"DOI: {DOI}. The Paxos algorithm, when presented in plain English, is very simple.")


@pytest.fixture
def ws(tmp_path):
    return Workspace.init(tmp_path / "ws")[0]


@pytest.mark.skipif(not (SHARED_ZOTERO / "userdata.sql").is_file(), reason="needs ../shared/zotero")
def test_pdf_bibtex_and_zotero_merge_into_one_paper(ws, tmp_path):
    pdf = tmp_path / "downloads" / "lamport-paxos.pdf"
    pdf.parent.mkdir()
    pdf.write_bytes(_paxos_pdf())
    bib = tmp_path / "refs.bib"
    bib.write_text("@article{lamport2001paxos, author={Lamport, Leslie}, title={Paxos Made Simple}, year={2001},\n"
                   f"  journal={{ACM SIGACT News}}, doi={{{DOI}}}}}\n"
                   "@misc{other2020, title={Another Paper Entirely}, author={Other, Ann}, year={2020}}\n")
    z = ZoteroBuilder(tmp_path / "Zotero")
    item, zkey = z.item("journalArticle", authors=[("Leslie", "Lamport")], title="Paxos made simple.",
                        date="2001-12-01", tags=["consensus"], collections=["Classics"])
    z.note(item, "<p>Read this first.</p>")
    z.close()

    report = add(ws, [str(pdf), str(bib)], options={"zotero": str(tmp_path / "Zotero")})
    assert report.problems == []
    assert sorted(report.added) == ["lamport2001paxos", "other2020"]
    merged = {m["origin"]: m for m in report.merged}
    assert set(merged) == {"pdf", "zotero"} or set(merged) == {"bibtex", "zotero"}
    assert all(m["id"] == "lamport2001paxos" for m in report.merged)
    meta = ws.vault.read_meta("lamport2001paxos")
    assert len(meta.sources) == 3
    assert str(pdf.resolve()) in meta.sources and f"{bib}#lamport2001paxos" in meta.sources
    assert f"zotero://select/library/items/{zkey}" in meta.sources
    assert meta.doi == DOI and meta.zotero_key == zkey and meta.sha256 and meta.status != "metadata"
    assert "consensus" in meta.tags and "Classics" in meta.collections
    assert "Read this first." in (ws.vault.paper_dir("lamport2001paxos") / "reader-notes.md").read_text()
    assert sorted(ws.vault.paper_ids()) == ["lamport2001paxos", "other2020"]

    # the same inputs again change nothing
    again = add(ws, [str(pdf), str(bib)], options={"zotero": str(tmp_path / "Zotero")})
    assert again.added == [] and sorted(ws.vault.paper_ids()) == ["lamport2001paxos", "other2020"]


def test_metadata_only_paper_gains_its_pdf_later(ws, tmp_path):
    bib = tmp_path / "refs.bib"
    bib.write_text("@article{lamport2001paxos, author={Lamport, Leslie}, title={Paxos Made Simple}, year={2001},"
                   f" doi={{{DOI}}}}}\n@article{{bad, title={{Unclosed}}\n")
    first = add(ws, [str(bib)])
    assert first.added == ["lamport2001paxos"]
    assert len(first.problems) == 1 and first.problems[0].source.endswith("refs.bib:2")
    assert ws.vault.read_meta("lamport2001paxos").status == "metadata"
    pdf = tmp_path / "paper.pdf"
    pdf.write_bytes(_paxos_pdf())
    second = add(ws, [str(pdf)])
    assert second.added == [] and len(second.merged) == 1
    assert second.merged[0]["id"] == "lamport2001paxos" and second.merged[0]["gained_pdf"]
    meta = ws.vault.read_meta("lamport2001paxos")
    assert meta.sha256 and meta.pages == 2 and meta.files == [str(pdf.resolve())]


def test_arxiv_ids_are_downloaded_and_deduplicated(ws, tmp_path, monkeypatch):
    cat = Catalog()
    cat.add(Paper("2401.00001", "Paxos Made Moderately Complex", "Multi-decree Paxos explained.",
                  ["Robbert van Renesse"], "2015-03-01T00:00:00Z"))
    with LoopbackServer(cat) as srv:
        srv.settings_env(monkeypatch)
        ws = Workspace(ws.root)          # settings are read from the environment set just now
        report = add(ws, ["arxiv:2401.00001", "https://arxiv.org/abs/2401.00001v2"])
        # the second spelling is the same source of the same paper: nothing to merge, nothing re-analysed
        assert report.added == ["vanrenesse2015paxos"] and report.unchanged == ["vanrenesse2015paxos"]
        assert report.merged == [] and report.reanalysed == []
        meta = ws.vault.read_meta("vanrenesse2015paxos")
        assert meta.arxiv == "2401.00001" and meta.pages == 2 and meta.sha256
        pdf_gets = [p for _, p in cat.requests if p.startswith("/pdf/")]
        assert len(pdf_gets) == 1
        # a paper already in the vault with its PDF is not downloaded again
        add(ws, ["arxiv:2401.00001"])
        assert len([p for _, p in cat.requests if p.startswith("/pdf/")]) == 1


def test_cli_add_reports_problems_warnings_and_merges(ws, tmp_path):
    from click.testing import CliRunner

    from papervault.cli import cli

    bib = tmp_path / "refs.bib"
    bib.write_text("@article{lamport2001paxos, author={Lamport, Leslie}, title={Paxos Made Simple}, year={2001},"
                   " file={missing.pdf}}\n@article{bad, title={Unclosed}\n")
    # the same paper under another key in another file merges (two keys in one file stay two papers)
    more = tmp_path / "more.bib"
    more.write_text("@misc{dup, title={Paxos made simple}, author={Lamport, L.}, year={2001}}\n")
    res = CliRunner().invoke(cli, ["add", str(bib), str(more), "--workspace", str(ws.root)])
    assert res.exit_code == 0, res.output
    out = res.output
    assert f"skipped {bib}:2: @article entry skipped: unbalanced braces" in out
    assert f"warning {bib}#lamport2001paxos: file field names missing PDF(s): {tmp_path / 'missing.pdf'}" in out
    assert f"merged {more}#dup into lamport2001paxos" in out
    assert "Added 1 paper, merged 1" in out


def test_a_merge_rewrites_the_notes_head_unless_a_person_edited_it(tmp_path):
    """`papervault add` of a PDF, then of its BibTeX entry: the entry fills the venue and year, and the note's own
    head (title, Authors, Published) says so; a note a person edited keeps its body. The other order (entry,
    then PDF) gives the same head."""
    from click.testing import CliRunner

    from papervault.cli import cli

    pdf = tmp_path / "downloads" / "lamport-paxos.pdf"
    pdf.parent.mkdir()
    pdf.write_bytes(_paxos_pdf())
    bib = tmp_path / "refs.bib"
    bib.write_text("@article{lamport2001paxos, author={Lamport, Leslie}, title={Paxos Made Simple}, year={2001},\n"
                   f"  journal={{ACM SIGACT News}}, doi={{{DOI}}}}}\n", encoding="utf-8")
    published = "**Published:** ACM SIGACT News, 2001  \n"

    def add_cli(ws: Workspace, *inputs) -> str:
        res = CliRunner().invoke(cli, ["add", *map(str, inputs), "--workspace", str(ws.root)])
        assert res.exit_code == 0, (res.output, res.exception)
        return res.output

    ws = Workspace.init(tmp_path / "pdf-first")[0]
    add_cli(ws, pdf)
    (pid,) = ws.vault.paper_ids()
    before = ws.vault.read_note(pid)[1]
    assert "ACM SIGACT News" not in before and "**Authors:** Leslie Lamport  \n" in before
    assert f"merged {bib}#lamport2001paxos into {pid}" in add_cli(ws, bib)
    meta, body = ws.vault.read_note(pid)
    assert meta.venue == "ACM SIGACT News" and meta.year == 2001 and ws.vault.paper_ids() == [pid]
    assert published in body and body.count("**Published:**") == body.count("**Authors:**") == 1
    assert body.lstrip().startswith("# Paxos Made Simple\n") and "**Authors:** Leslie Lamport  \n" in body
    assert body.split("## ", 1)[1] == before.split("## ", 1)[1]          # the rest of the note is kept
    assert not ws.vault.is_edited(pid) and ws.vault.is_clean()

    # a body a person edited stays as they left it (no note.new.md); the record is still merged
    ws = Workspace.init(tmp_path / "edited")[0]
    add_cli(ws, pdf)
    (pid,) = ws.vault.paper_ids()
    note = ws.vault.note_path(pid)
    note.write_text(note.read_text(encoding="utf-8") + "\nMy own reading.\n", encoding="utf-8")
    ws.vault.commit("my edit")
    mine = ws.vault.read_note(pid)[1]
    add_cli(ws, bib)
    assert ws.vault.read_note(pid)[1] == mine and ws.vault.read_meta(pid).venue == "ACM SIGACT News"
    assert not (note.parent / "note.new.md").exists()

    # the entry first, then its PDF: the PDF merges into the entry's paper, whose head names the entry's venue
    ws = Workspace.init(tmp_path / "bib-first")[0]
    add_cli(ws, bib)
    add_cli(ws, pdf)
    assert ws.vault.paper_ids() == ["lamport2001paxos"]
    body = ws.vault.read_note("lamport2001paxos")[1]
    assert published in body and "**Authors:** Leslie Lamport  \n" in body and "## " in body


# --- a big import: the catalog on disk, commits in parts, memory that does not grow with the library --------

def _csl(path, n: int, start: int = 0):
    """`n` records of the shared 20k CSL-JSON export, from record `start`."""
    import json
    from pathlib import Path

    from conftest import SHARED

    shared = SHARED / "corpus" / "conference-20k.csl.json"
    path.write_text(json.dumps(json.loads(shared.read_text())[start:start + n]))
    return path


def test_catalog_on_disk_finds_what_the_notes_find(ws, tmp_path, monkeypatch):
    """The dedup tables in `.papervault/catalog.sqlite` answer as the in-memory index built from the notes does;
    the catalog follows the vault's commits, and is rebuilt when the vault moved without it (a delete)."""
    from papervault.app.papers import delete
    from papervault.models import SourceRecord
    from papervault.sources.catalog import Catalog
    from papervault.sources.dedup import DedupIndex

    monkeypatch.setenv("PAPERVAULT_SOURCES_COMMIT_EVERY", "128")
    ws = Workspace.resolve(str(ws.root))        # settings read again, with the variable
    lib = _csl(tmp_path / "lib.json", 300)
    report = add(ws, [str(lib)])
    assert len(report.added) == 300 and len(report.commits) == 3 and not report.problems
    assert len(list(ws.vault.repo.iter_commits())) == 4       # init + three parts
    metas = list(ws.vault.iter_meta())
    probes = []
    for m in metas[::7]:
        words = m.title.split()
        typo = " ".join(words[:-1] + [words[-1][:-1] + "x" + words[-1][-1:]]) if len(words[-1]) > 4 else m.title
        probes += [SourceRecord(origin="csl", source="probe", title=m.title, authors=m.authors, year=m.year),
                   SourceRecord(origin="csl", source="probe", title=typo, authors=m.authors, year=m.year),
                   SourceRecord(origin="csl", source="probe", title="Unrelated " + m.title[::-1], doi=m.doi)]
    memory = DedupIndex.from_vault(ws.vault)
    cat = Catalog.open(ws)
    try:
        assert not cat.rebuilt                 # the add left it at the vault's last commit
        assert len(cat.dedup) == len(memory) == 300
        for probe in probes:
            got, want = cat.dedup.find(probe), memory.find(probe)
            assert (got.paper_id, got.reason) == (want.paper_id, want.reason) if want else got is None, probe
        assert sum(1 for p in probes if memory.find(p)) >= len(probes) // 3
    finally:
        cat.close()

    gone = report.added[5]
    gone_title = ws.vault.read_meta(gone).title
    delete(ws, [gone])
    cat = Catalog.open(ws)
    try:        # the vault moved by one commit: only the paper it names is looked at again
        assert not cat.rebuilt and cat.caught_up == [gone]
        assert gone not in cat.dedup.ids and report.added[6] in cat.dedup.ids
        assert cat.dedup.find(SourceRecord(origin="csl", source="probe", title=gone_title)) is None
        assert len(cat.dedup) == 299
    finally:
        cat.close()
    note = ws.vault.note_path(report.added[7])      # an uncommitted edit: the notes say more than any commit
    note.write_text(note.read_text(encoding="utf-8") + "\nMy line.\n", encoding="utf-8")
    for _ in range(2):      # read again at every open while it is uncommitted, and only it
        cat = Catalog.open(ws)
        try:
            assert not cat.rebuilt and cat.caught_up == [report.added[7]] and len(cat.dedup) == 299
        finally:
            cat.close()
    ws.vault.commit("my edit")      # as a person commits: everything
    again = add(ws, [str(lib)])
    assert again.added == [gone] and len(again.unchanged) == 299


def test_bulk_add_memory_does_not_grow_with_the_library(tmp_path, monkeypatch):
    """Tripling both the vault and the import adds almost nothing to the traced peak of `add` (it was 4.7 KB a
    record with the dedup tables in memory and git's index read into Python): no structure holds every record or
    every paper. A commit every 64 records (one batch of
    `add`), so that both sizes commit in several parts of the same size.

    CSL-JSON is read in windows of `csl._READ_BYTES` (1 MB), and ijson builds the events of a whole window at
    once: a fixed cost once a file is larger than the window, but one that grows with the file below it (both files
    here are under 1 MB; that window was most of the 2-3.7 KB a record seen before). A 32 KB window puts both
    sizes past it, so what is measured is what `add` itself holds."""
    import tracemalloc

    from papervault.app.adding import add as app_add
    from papervault.sources import csl

    monkeypatch.setenv("PAPERVAULT_SOURCES_COMMIT_EVERY", "64")
    monkeypatch.setattr(csl, "_READ_BYTES", 32 << 10)
    peaks = {}
    for n in (100, 300):
        w, _ = Workspace.init(tmp_path / f"ws{n}")
        app_add(w, [str(_csl(tmp_path / f"lib{n}.json", n))], index=False)   # warm (imports) and a vault of n papers
        lib = _csl(tmp_path / f"more{n}.json", n, start=n)
        tracemalloc.start()
        r = app_add(w, [str(lib)], index=False)
        peaks[n] = tracemalloc.get_traced_memory()[1]
        tracemalloc.stop()
        assert len(r.added) == n and len(r.commits) == -(-n // 64)
    assert peaks[300] - peaks[100] < 200 * 3_500, peaks         # under 3.5 KB for each record more
