"""No paper of the vault is missing from the index without a word: `paper.md` is read with the lines markdown-it
numbers (text from PDFs carries "\\r", form feeds and Unicode line separators), a paper `index` cannot read
fails the run by id, and `status` and `doctor` name every paper the index lacks."""

from __future__ import annotations

import json

from hypothesis import HealthCheck, example, given, settings, strategies as st

from papervault.chunking.paper import chunk_paper
from papervault.models import PaperMeta
from papervault.vault import paper as paper_md
from papervault.vault.paper import page_anchor
from papervault.workspace import Workspace
from support_index import add_paper

# Every character some library or reader takes for the end of a line. CommonMark (and so markdown-it and the
# reader) ends lines at "\r\n", "\r" and "\n" only; the others are characters of their line.
LINE_BREAKS = ["\r", "\r\n", "\n", "\x0b", "\x0c", "\x1c", "\x1d", "\x1e", "\x85", "\u2028", "\u2029"]


def _hostile_paper(words: list[str], breaks: list[str]) -> str:
    """A paper in the writer's format whose prose lines end with every kind of line break (its text escaped as
    the parser writes it: `escape_html`, so no `<!x` of a PDF's text opens an HTML block over the next pages)."""
    prose = "".join(f"{paper_md.escape_html(w)}{b}" for w, b in zip(words, breaks))
    return "\n".join([
        page_anchor(1), "", "# A Paper Read Back", "", "## 1 Introduction", "", prose, "",
        page_anchor(2), "", "## 2 Design\r", "", "Leases bound the recovery time.\rSecond line.\r\rThird para.", "",
        "![Figure 1: Latency\u2028of reads](figures/fig-1.png)", "",
        "Table 1: Running times", "", "| n | time |\r|---|---|\r| 10 | 3 |", "",
        page_anchor(3), "", "## References", "", "[1] A. Person. Something cited. 2001.\r", ""])


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(st.tuples(st.text(alphabet="abcxyz #*|![]()-<>\\`", max_size=12), st.sampled_from(LINE_BREAKS)),
                min_size=1, max_size=40))
@example(pairs=[("```", "\r")])         # a PDF line that would open a code fence over the rest of the paper
@example(pairs=[("x", "\n"), ("  ~~~", "\r\n")])
def test_the_reader_reads_text_with_every_line_break(pairs):
    words, breaks = [w for w, _ in pairs], [b for _, b in pairs]
    text = _hostile_paper(words, breaks)
    doc = paper_md.read(text)             # never an IndexError, whatever ends the lines
    assert doc.title == "A Paper Read Back"
    assert doc.pages == [1, 2, 3]
    # every anchor offset points at the anchor as written, so the site's page marks land on it
    assert all(text.startswith(page_anchor(p), off) for p, off in doc.anchors)
    assert [f.src for f in doc.figures][-1:] == ["figures/fig-1.png"]
    assert doc.tables and doc.tables[-1].rows[-1] == ["10", "3"]
    assert doc.references_text().strip().startswith("[1] A. Person")
    for b in doc.blocks:
        assert all(0 <= n < len(paper_md._LINE_END.split(text)) for n in b.numbers)
    chunks = chunk_paper(PaperMeta(id="p", title="A Paper Read Back"), text, "## Summary\n\nRead back.\n")
    assert any("Leases bound the recovery time." in c.text for c in chunks)


def test_index_reads_every_paper_and_names_those_it_cannot(tmp_path, cli_run):
    """A paper.md with every line break is indexed and found; a paper the index cannot take fails `index` by id
    (exit status 1, the rest indexed), and `status` (text and --json) and `doctor` name it until it is fixed."""
    from conftest import without_multilingual

    ws, _ = Workspace.init(tmp_path / "ws")
    without_multilingual(ws.root)
    text = _hostile_paper([f"carriage{i}" for i in range(len(LINE_BREAKS))], LINE_BREAKS)
    text = text.replace("Third para.", "Quorum leases keep lone carriage returns readable.")
    add_paper(ws.vault, "cr2021", title="A Paper Read Back", fulltext=text, year=2021)
    add_paper(ws.vault, "ok2020", title="An Ordinary Paper", fulltext="\n".join(
        [page_anchor(1), "", "# An Ordinary Paper", "", "Plain text about sketches.", ""]), year=2020)
    add_paper(ws.vault, "bad2019", title="A Paper Whose Note Is Wrong", year=2019)
    note = ws.vault.note_path("bad2019")
    note.write_text(note.read_text(encoding="utf-8").replace("id: bad2019", "id: other"), encoding="utf-8")
    w = ["--workspace", ws.root]

    run = cli_run(["index", *w], check=False)
    assert run.exit_code == 1, run.output
    assert "error: bad2019 not indexed: note id 'other' differs from its folder" in run.stderr
    assert "error: 1 paper of the vault not indexed (bad2019)" in run.stderr
    assert "cr2021" not in run.stderr and "skipped" not in run.stderr
    hits = json.loads(cli_run(["search", "quorum leases carriage returns", "--json", *w]).stdout)
    assert hits and hits[0]["paper_id"] == "cr2021"
    assert any("Quorum leases keep lone carriage returns readable." in h["text"] for h in hits)

    as_json = cli_run(["index", "--json", *w], check=False)
    assert as_json.exit_code == 1 and list(json.loads(as_json.stdout)["errors"]) == ["bad2019"]

    st_json = json.loads(cli_run(["status", "--json", *w]).stdout)
    assert st_json["not_indexed"] == ["bad2019"]
    assert st_json["index_health"].startswith("stale: 1 of 3 papers not indexed (bad2019)")
    assert "not indexed (bad2019)" in cli_run(["status", *w]).stdout
    doctor = cli_run(["doctor", "--json", *w], check=False)
    [check] = [c for c in json.loads(doctor.stdout)["checks"] if c["name"] == "index"]
    assert check["level"] == "warning" and "1 paper of the vault not in the index: bad2019" in check["detail"]

    note.write_text(note.read_text(encoding="utf-8").replace("id: other", "id: bad2019"), encoding="utf-8")
    fixed = cli_run(["index", *w])
    assert fixed.exit_code == 0 and "error" not in fixed.stderr
    st_json = json.loads(cli_run(["status", "--json", *w]).stdout)
    assert st_json["not_indexed"] == [] and st_json["index_health"] == "ok"
