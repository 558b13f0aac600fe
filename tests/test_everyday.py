"""Issue 18 through the user's entry points: export, locate, the reader's highlights everywhere, and the
papercuts a newcomer hit (exit codes, empty commits, silent skips, vague messages, MCP user scope)."""

from __future__ import annotations

import json
import os
import re
import shlex
import shutil
import subprocess
import sys
from pathlib import Path

import anyio
import pytest
from click.testing import CliRunner

from papervault.cli import cli
from papervault.workspace import Workspace

from conftest import RUN_SPEED_VARS, run_speed_env
from support_llm import SAMPLE_PAPER, make_paper_vault

ROOT = Path(__file__).resolve().parents[1]

READER_NOTES = """\
Read this for the thesis, chapter 3 <script>alert(1)</script>.

#### Annotations on widgets.pdf
> Gizmo keeps a sorted index of free capacity. (p. 2)
Compare with the Sprocket scan.

> Compared to Sprocket, Gizmo reduces latency by 69%. (p. 2)
"""


def invoke(*args: str, ok: bool = True):
    res = CliRunner().invoke(cli, list(args))
    if ok:
        assert res.exit_code == 0, (res.output, res.exception)
    return res


@pytest.fixture
def ws(tmp_path, workspace_env) -> Workspace:
    """A workspace with two parsed papers (tags, a Zotero collection, BibTeX fields) and one metadata-only."""
    ws, _ = Workspace.init(workspace_env)
    make_paper_vault(ws.root, "doe2020widgets", venue="Proc. of WidgetConf", tags=["thesis"],
                     collections=["Scheduling"], doi="10.1000/widgets",
                     bib={"entrytype": "inproceedings", "pages": "11--20", "publisher": "ACM", "address": "Oslo"})
    make_paper_vault(ws.root, "roe2021gadgets", text=SAMPLE_PAPER.replace("Gizmo", "Gadget"),
                     title="Gadgets in Practice", authors=["Rob Roe"], year=2021, tags=["later"],
                     bib={"entrytype": "article", "journal": "Gadget Journal", "volume": "7", "number": "2"})
    from papervault.models import PaperMeta

    ws.vault.write_note(PaperMeta(id="lamport1998part", title="The Part-Time Parliament", authors=["Leslie Lamport"],
                                  year=1998, venue="ACM Transactions on Computer Systems", status="metadata",
                                  abstract="Recent archaeological discoveries on the island of Paxos.",
                                  sources=["refs.bib#lamport1998part"], bib={"volume": "16", "pages": "133--169"}),
                        "# The Part-Time Parliament\n")
    ws.vault.commit("add: metadata-only paper")
    return ws


# --- export ------------------------------------------------------------------------------------------

def test_export_writes_bibtex_and_csl_of_the_library_a_tag_a_collection_and_a_survey(ws, tmp_path):
    from papervault.survey import export as E
    from papervault.survey.select import load_papers

    everything = invoke("export").output
    assert everything.count("\n@") + everything.startswith("@") == 3
    assert "@inproceedings{doe2020widgets," in everything and "@article{roe2021gadgets," in everything
    # every bibliographic field the note carries, through the survey's own writer
    assert "pages = {11--20}" in everything and "publisher = {ACM}" in everything and "address = {Oslo}" in everything
    assert "volume = {7}" in everything and "doi = {10.1000/widgets}" in everything
    papers, _ = load_papers(ws.vault, ["doe2020widgets", "lamport1998part", "roe2021gadgets"])
    assert everything == E.bibtex(papers)

    tagged = invoke("export", "--tag", "thesis").output
    assert "doe2020widgets" in tagged and "roe2021gadgets" not in tagged
    coll = invoke("export", "--collection", "scheduling", "--format", "csl").output
    items = json.loads(coll)
    assert [i["id"] for i in items] == ["doe2020widgets"]
    assert items[0]["page"] == "11–20" and items[0]["publisher-place"] == "Oslo" and items[0]["DOI"] == "10.1000/widgets"

    # a survey's references: the papers its references.json lists
    sdir = ws.vault.survey_dir("widgets")
    sdir.mkdir(parents=True)
    (sdir / "survey.md").write_text("# Widgets\n\nGizmo is fast [@doe2020widgets, p. 2].\n")
    (sdir / "references.json").write_text(json.dumps(E.csl_json(load_papers(ws.vault, ["doe2020widgets",
                                                                                       "lamport1998part"])[0])))
    out = tmp_path / "survey.bib"
    res = invoke("export", "--survey", "widgets", "-o", str(out))
    assert "Exported 2 papers" in res.output
    text = out.read_text()
    assert "@inproceedings{doe2020widgets," in text and "lamport1998part" in text and "roe2021gadgets" not in text

    missing = invoke("export", "--survey", "nope", ok=False)
    assert missing.exit_code != 0 and "no survey 'nope'" in str(missing.exception)


# --- locate --------------------------------------------------------------------------------------------

def test_locate_finds_the_paper_page_and_anchor_of_an_exact_or_near_exact_quote(ws):
    # exact, on page 2 of paper.md
    res = json.loads(invoke("locate", "Placement takes one lookup in the index", "--json").output)
    assert res[0]["paper_id"] == "doe2020widgets" and res[0]["page"] == 2 and res[0]["exact"]
    assert res[0]["anchor"] == "papers/doe2020widgets/paper.md#page-2"
    # typographic quotes, a line-end hyphenation, other case and spacing, a typo: still page 2 of the right paper
    near = json.loads(invoke("locate", "compared to  Sprocket, “Gizmo” re-\nduces latancy by 69%", "--json").output)
    assert near[0]["paper_id"] == "doe2020widgets" and near[0]["page"] == 2
    assert not near[0]["exact"] and near[0]["score"] >= 0.82
    assert "Gizmo reduces latency by 69%" in near[0]["text"]
    # the other paper says it of Gadget, on its own page 1
    one = json.loads(invoke("locate", "Gadget, a widget scheduler that places widgets in constant time",
                            "--json").output)
    assert one[0]["paper_id"] == "roe2021gadgets" and one[0]["page"] == 1
    text = invoke("locate", "Placement takes one lookup in the index").output
    assert "[doe2020widgets] Widgets at Scale (p. 2, exact)" in text

    gone = invoke("locate", "an entirely different sentence about bananas and ships", ok=False)
    assert gone.exit_code == 1 and "Not found" in gone.output
    short = invoke("locate", "Gizmo", ok=False)
    assert "too short" in str(short.exception)


# --- highlights and reader notes -----------------------------------------------------------------------

def test_highlights_are_indexed_linked_shown_on_the_site_and_returned_by_mcp(ws, model_dir, monkeypatch):
    from mcp import Client, StdioServerParameters

    from papervault.site.stage import plan_site, read_vault

    (ws.vault.paper_dir("doe2020widgets") / "reader-notes.md").write_text(READER_NOTES)
    ws.vault.commit("reader notes")
    invoke("index", "-q")

    # locate in a large vault asks the full-text index for its candidates first
    from papervault.app import locate as L

    with monkeypatch.context() as m:
        m.setattr(L, "SCAN_ALL", 0)
        assert L._candidates(ws, "Gadget, a widget scheduler that places widgets", 50)[0] == "roe2021gadgets"
        found = L.locate(ws, "Gadget, a widget scheduler that places widgets in constant time")
        assert found[0].paper_id == "roe2021gadgets" and found[0].exact and found[0].page == 1

    # search --level highlight finds only the reader's own highlights, each on its page
    hits = json.loads(invoke("search", "sorted index of free capacity", "--level", "highlight", "--json").output)
    assert hits and {h["level"] for h in hits} == {"highlight"}
    top = hits[0]
    assert top["paper_id"] == "doe2020widgets" and top["page"] == 2
    assert "Gizmo keeps a sorted index" in top["text"] and "Sprocket scan" in top["text"]
    assert top["anchor"] == "papers/doe2020widgets/paper.md#page-2"

    # the site page shows them, with a link to their page, and nothing hostile gets through
    plan = plan_site(read_vault(ws.vault.root))
    page = plan.pages["papers/doe2020widgets/note.md"]
    assert "## Your highlights and notes" in page
    assert "Gizmo keeps a sorted index of free capacity." in page and "(paper.md#page-2)" in page
    assert "<script>" not in page
    assert page.count("**Authors:**") == 1

    # MCP over stdio: get_paper returns them, locate finds a quote
    params = StdioServerParameters(command=sys.executable, args=["-m", "papervault", "mcp", "--workspace",
                                                                 str(ws.root)],
                                   env={**{k: os.environ[k] for k in ("PAPERVAULT_EMBED_MODEL",
                                                                      "PAPERVAULT_EMBED_MODEL_PATH", "HOME", "PATH")
                                           if k in os.environ}, **run_speed_env(), "PYTHONPATH": str(ROOT)})

    async def main():
        async with Client(params, read_timeout_seconds=120) as c:
            paper = (await c.call_tool("get_paper", {"paper_id": "doe2020widgets"})).structured_content
            notes = paper["reader_notes"]
            assert [n["kind"] for n in notes] == ["note", "highlight", "highlight"]
            assert notes[1]["page"] == 2 and notes[1]["anchor"] == "papers/doe2020widgets/paper.md#page-2"
            assert notes[1]["comment"] == "Compare with the Sprocket scan."
            assert "<script>" not in notes[0]["text"]
            found = (await c.call_tool("locate", {"quote": "Gizmo keeps a sorted index of free capacity"})
                     ).structured_content
            assert found["found"][0]["page"] == 2 and found["found"][0]["cite"] == "[@doe2020widgets, p. 2]"

    anyio.run(main)


def test_a_zotero_import_links_its_reader_notes_from_the_note(tmp_path, workspace_env):
    """Annotations on a PDF and a child note of an item without one: both notes link reader-notes.md."""
    from papervault.demo import make_synthetic_papers

    from support_zotero import ZoteroBuilder

    ws, _ = Workspace.init(workspace_env)
    pdf = make_synthetic_papers(tmp_path / "pdfs")[0]
    z = ZoteroBuilder(tmp_path / "Zotero")
    a, _ = z.item("conferencePaper", authors=[("Ada", "Brenner")], title="Quorum Leases for Fast Local Reads",
                  date="2023")
    att, _ = z.stored_pdf(a, "quorum.pdf", pdf.read_bytes())
    z.annotation(att, "a lease quorum is a set of replicas", "the key idea", "1", sort="00000|000100|00010")
    b, _ = z.item("journalArticle", authors=[("Leslie", "Lamport")], title="The Part-Time Parliament", date="1998")
    z.note(b, "<p>Read the <b>Paxos</b> story first.</p>")
    report = invoke("add", "--zotero", str(z.close()), "--backend", "extractive")
    assert "Added 2 papers" in report.output
    with_notes = [pid for pid in ws.vault.paper_ids() if (ws.vault.paper_dir(pid) / "reader-notes.md").is_file()]
    assert len(with_notes) == 2
    for pid in with_notes:
        body = ws.vault.read_note(pid)[1]
        assert "[reader-notes.md](reader-notes.md)" in body, (pid, body)


# --- papercuts ----------------------------------------------------------------------------------------

def test_add_exits_non_zero_when_every_input_failed(ws, tmp_path):
    res = invoke("add", str(tmp_path / "missing.pdf"), "nonsense-input", ok=False)
    assert res.exit_code == 1
    assert "nothing was added: 2 inputs failed" in res.output


def test_re_adding_an_unchanged_bib_makes_no_commit(ws, tmp_path):
    bib = tmp_path / "refs.bib"
    bib.write_text("@article{knuth1974structured,\n  title = {Structured Programming with go to Statements},\n"
                   "  author = {Knuth, Donald E.},\n  year = {1974},\n  journal = {ACM Computing Surveys},\n"
                   "  volume = {6},\n  pages = {261--301}\n}\n")
    invoke("add", str(bib))
    head = ws.vault.history(limit=1)[0]
    res = invoke("add", str(bib))
    assert "unchanged 1" in res.output and "vault commit" not in res.output
    assert ws.vault.history(limit=1)[0] == head and ws.vault.is_clean()


def test_reanalyse_says_when_a_hand_edited_note_is_kept(workspace_env, tmp_path):
    from papervault.demo import make_synthetic_papers

    ws, _ = Workspace.init(workspace_env)
    pdf = make_synthetic_papers(tmp_path / "pdfs")[0]
    invoke("add", str(pdf), "--backend", "extractive")
    pid = ws.vault.paper_ids()[0]
    note = ws.vault.note_path(pid)
    note.write_text(note.read_text() + "\nMy own reading of it.\n")
    ws.vault.commit("my edit")
    res = invoke("add", str(pdf), "--backend", "extractive", "--reanalyse")
    assert f"{pid}: note.md was edited by hand; the new analysis is in note.new.md" in res.output
    assert "1 re-analysed" in res.output
    assert "My own reading of it." in note.read_text()
    assert (note.parent / "note.new.md").is_file()
    # the same again without an edit: a re-analysis that changes nothing commits nothing
    head = ws.vault.history(limit=1)[0]
    invoke("add", str(pdf), "--backend", "extractive", "--reanalyse")
    assert ws.vault.history(limit=1)[0] == head


def test_edit_corrects_the_notes_own_head_that_show_prints(workspace_env, tmp_path):
    """`edit` changes the record, and the note's head (title, Authors, Published) that `show`, MCP and the
    index read says the same; the rest of the note is kept, and a note a person edited is left as it is."""
    from papervault.demo import make_synthetic_papers

    ws, _ = Workspace.init(workspace_env)
    pdfs = [str(p) for p in make_synthetic_papers(tmp_path / "pdfs")[:2]]
    invoke("add", *pdfs, "--backend", "extractive")
    pid, other = ws.vault.paper_ids()
    before = ws.vault.read_note(pid)[1]
    assert "**Authors:**" in before and "**Published:**" in before
    out = invoke("edit", pid, "--title", "Corrected Title", "--year", "1999", "--author", "Ada Lovelace",
                 "--venue", "Imaginary Conf").output
    assert "Corrected Title — Ada Lovelace (1999)" in out
    shown = invoke("show", pid).output
    assert "# Corrected Title\n" in shown and "**Authors:** Ada Lovelace  \n" in shown
    assert "**Published:** Imaginary Conf, 1999  \n" in shown
    body = ws.vault.read_note(pid)[1]
    assert body.split("## Summary", 1)[1] == before.split("## Summary", 1)[1]
    assert body.count("**Authors:**") == body.count("**Published:**") == 1
    assert not ws.vault.is_edited(pid) and ws.vault.is_clean()     # still papervault's own note
    # a re-analysis writes the same head: nothing to commit
    head = ws.vault.history(limit=1)[0]
    invoke("add", *pdfs, "--backend", "extractive", "--reanalyse")
    assert ws.vault.read_note(pid)[1] == body and ws.vault.history(limit=1)[0] == head

    # a note a person edited keeps its body; the record still changes
    note = ws.vault.note_path(other)
    note.write_text(note.read_text() + "\nMy own reading.\n")
    ws.vault.commit("my edit")
    mine = ws.vault.read_note(other)[1]
    invoke("edit", other, "--year", "2001")
    assert ws.vault.read_note(other)[1] == mine and ws.vault.read_meta(other).year == 2001


def test_show_prints_the_record_of_a_metadata_only_paper(ws):
    out = invoke("show", "lamport1998part").output
    for want in ("Authors: Leslie Lamport", "Year: 1998", "Venue: ACM Transactions on Computer Systems",
                 "Recent archaeological discoveries", "refs.bib#lamport1998part", "Pages: 133--169"):
        assert want in out
    assert "Widgets at Scale" in invoke("show", "doe2020widgets").output


def test_search_says_precisely_why_there_is_nothing(ws):
    empty = invoke("search", "  ", ok=False)
    assert "the search query is empty" in str(empty.exception)
    unknown = invoke("search", "widgets", "--paper", "nobody2020", ok=False)
    assert "no paper 'nobody2020'" in str(unknown.exception)
    assert "the index is empty (3 papers in the vault). Run `papervault index`" in invoke("search", "widgets").output
    # another process holds the writer lock for `index --rebuild`: the reader is told, not sent to index
    with ws.write_lock("index"):
        lock = json.loads(ws.lock_path.read_text())
        out = subprocess.run([sys.executable, "-m", "papervault", "search", "widgets", "-w", str(ws.root)],
                             capture_output=True, text=True, timeout=300, cwd=ROOT,
                             env={**os.environ, "PYTHONPATH": str(ROOT)}).stdout
    assert f"`papervault index` (pid {lock['pid']}) is rebuilding the index" in out


def test_search_prints_whole_titles_and_sections_and_no_doubled_passage(ws, model_dir):
    long_title = "A Very Long Title About Widget Scheduling That Goes On Well Past Seventy Characters In All"
    ws.vault.update_meta("roe2021gadgets", title=long_title)
    long_section = "3 Evaluation of Gadget Latency Against Sprocket Under Load"
    text = ws.vault.read_fulltext("roe2021gadgets").replace("## 3 Evaluation", f"## {long_section}")
    ws.vault.fulltext_path("roe2021gadgets").write_text(text)
    ws.vault.commit("longer title and section")
    invoke("index", "-q")
    query = ["search", "Gadget latency against Sprocket", "--paper", "roe2021gadgets", "-n", "20"]
    from papervault.index.search import Searcher

    raw = Searcher(ws).search(query[1], limit=20, filters={"paper": "roe2021gadgets"})
    both = {h.section for h in raw if h.level == "section"} & {h.section for h in raw if h.level == "paragraph"}
    assert long_section in both        # the index's hits hold the section and its own paragraph
    out = invoke(*query).output
    assert long_title in out
    shown = [line.split(" · ")[0].strip() for line in out.splitlines() if f" · {long_section} · " in line]
    assert "paragraph" in shown and "section" not in shown
    answered = json.loads(invoke(*query, "--json").output)      # --json answers what the listing shows
    levels = [h["level"] for h in answered if h["section"] == long_section]
    assert "paragraph" in levels and "section" not in levels


def test_mcp_install_claude_code_user_scope_writes_claude_json(ws, tmp_path):
    home = Path(os.environ["HOME"])
    cfg = home / ".claude.json"
    cfg.write_text(json.dumps({"userID": "abc", "mcpServers": {"other": {"type": "stdio", "command": "x"}},
                               "projects": {"/p": {"mcpServers": {}}}}))
    cfg.chmod(0o600)
    res = invoke("mcp", "install", "claude-code", "--scope", "user", "-w", str(ws.root))
    assert str(cfg) in res.output and "every folder" in res.output
    data = json.loads(cfg.read_text())
    assert data["userID"] == "abc" and data["projects"] == {"/p": {"mcpServers": {}}}
    assert data["mcpServers"]["other"] == {"type": "stdio", "command": "x"}
    entry = data["mcpServers"]["papervault"]
    assert entry["type"] == "stdio" and entry["args"][-3:] == ["serve", "--workspace", str(ws.root)]
    assert cfg.stat().st_mode & 0o777 == 0o600
    assert not (ws.root / ".mcp.json").exists()
    invoke("mcp", "install", "claude-code", "-w", str(ws.root))      # project scope stays the default
    assert "papervault" in json.loads((ws.root / ".mcp.json").read_text())["mcpServers"]


# --- the README, as a newcomer types it -----------------------------------------------------------------
# Both tests type the README's own command lines, in its order, into one new bash with nothing of the
# Makefile's environment (no PAPERVAULT_* variable) and HOME in tmp_path: a README change that breaks a
# command fails them. Each step is (the README line it starts with, what is typed, what its output shows).

STEP = "@@@ step {} @@@"


def readme_commands() -> list[str]:
    """The command lines of the README's "Everyday use" block, as shown."""
    block = (ROOT / "README.md").read_text().split("## Everyday use", 1)[1].split("\n## ", 1)[0]
    return [line.strip() for line in block.splitlines() if line.startswith("    ")]


def check_readme_order(steps: list[tuple[str, str, str | None]]) -> None:
    lines = readme_commands()
    positions = []
    for shown, _, _ in steps:
        at = next((i for i, line in enumerate(lines) if line.startswith(shown)), None)
        assert at is not None, f"the README's everyday block has no line starting {shown!r}"
        positions.append(at)
    assert positions == sorted(positions), "the test types the README's commands in the README's order"
    assert not any(line.startswith(".venv/bin/papervault") for line in lines), "one way to run papervault"


def fresh_env(home: Path, **extra: str) -> dict[str, str]:
    """A new shell's environment: HOME in tmp_path, no network, and no PAPERVAULT_* variable but the run's speed
    settings (conftest RUN_SPEED_VARS: one ONNX thread, the run's model, vector and parse caches), which change
    how fast a command runs and never which model or workspace it uses."""
    env = {"HOME": str(home), "PATH": "/usr/bin:/bin", "LANG": "C.UTF-8", "HF_HUB_OFFLINE": "1",
           "DO_NOT_TRACK": "1", "PYTHONPATH": str(ROOT), **extra}   # this checkout's code through the venv's script
    assert not any(k.startswith("PAPERVAULT_") for k in env)
    return {**env, **run_speed_env()}


def type_into_bash(steps: list[tuple[str, str, str | None]], env: dict[str, str], cwd: Path,
                   **values: str) -> list[str]:
    """Type the steps into one new bash (`set -e`); returns each command's output (stdout and stderr) after
    checking it shows what the step expects and holds no traceback."""
    script = ["set -e", "exec 2>&1", f"cd {shlex.quote(str(cwd))}"]
    for i, (_, typed, _) in enumerate(steps):
        script += [f"echo '{STEP.format(i)}'", typed.format(**values)]
    r = subprocess.run(["bash", "--noprofile", "--norc", "-c", "\n".join(script)], capture_output=True,
                       text=True, env=env, timeout=900)
    assert r.returncode == 0, r.stdout[-4000:]
    outputs = [r.stdout.split(STEP.format(i) + "\n", 1)[1].split(STEP.format(i + 1), 1)[0]
               for i in range(len(steps))]
    for (_, typed, want), out in zip(steps, outputs):
        if want:
            assert want.format(**values) in out, (typed, out[-3000:])
    assert "Traceback" not in r.stdout, r.stdout[-4000:]
    return outputs


NEWCOMER_BIB = """\
@article{lamport1998part, title = {The Part-Time Parliament}, author = {Lamport, Leslie}, year = {1998},
  journal = {ACM Transactions on Computer Systems}, volume = {16}, number = {2}, pages = {133--169},
  keywords = {thesis, consensus}}
@inproceedings{ongaro2014raft, title = {In Search of an Understandable Consensus Algorithm}, year = {2014},
  author = {Ongaro, Diego and Ousterhout, John}, booktitle = {USENIX ATC}, pages = {305--319}}
@incollection{clark1991grounding, title = {Grounding in Communication}, author = {Clark, H. H.}, year = {1990},
  booktitle = {Perspectives on Socially Shared Cognition}, keywords = {thesis}}
"""
# a Better BibTeX JSON export of Zotero: the item's child note becomes a reader note
NEWCOMER_CSL = {"items": [{"itemType": "conferencePaper", "citationKey": "brewer2000towards",
                           "title": "Towards Robust Distributed Systems", "date": "2000", "proceedingsTitle": "PODC",
                           "creators": [{"firstName": "Eric", "lastName": "Brewer", "creatorType": "author"}],
                           "notes": [{"note": "<p>Stale reads are the price of availability here.</p>"}]}]}

# (the README line's command, what the newcomer types, what the output must show)
NEWCOMER = [
    ("source .venv/bin/activate", "source {venv}/bin/activate", None),
    # offline, the model is chosen when the workspace is made (the README's Embeddings paragraph)
    ("papervault init ~/research", "papervault init ~/research --embed-model sentence-transformers/all-MiniLM-L6-v2 "
     "--embed-model-path {model}", "Workspace ready at"),
    ("export PAPERVAULT_WORKSPACE=~/research", "export PAPERVAULT_WORKSPACE=~/research", None),
    ("papervault add ~/Downloads/papers/ refs.bib library.json",
     "papervault add ~/Downloads/papers/ refs.bib library.json", "Added 5 papers"),
    ("papervault list", "papervault list --year 1990-2000", "3 papers"),
    ("papervault delete lamport1998part ongaro2014raft", "papervault delete ongaro2014raft", "Deleted 1 paper"),
    ("papervault index", "papervault index", "Indexed in"),
    ('papervault search "leases for local reads" --json', 'papervault search "leases for local reads" --json',
     '"paper_id": "brenner2023quorum"'),
    ('papervault search "stale reads" --level highlight', 'papervault search "stale reads" --level highlight',
     "[brewer2000towards] Towards Robust Distributed Systems"),
    ('papervault locate "a lease quorum is a set of replicas"', 'papervault locate "a lease quorum is a set of replicas"',
     "[brenner2023quorum]"),
    ("papervault show lamport1998part", "papervault show lamport1998part", "Volume: 16"),
    ("papervault export --tag thesis -o thesis.bib", "papervault export --tag thesis -o thesis.bib",
     "Exported 2 papers as BibTeX to thesis.bib"),
    ("papervault review", "papervault review", None),
    ("papervault edit clark1991grounding --year 1991 --author \"Herbert H. Clark\"",
     "papervault edit clark1991grounding --year 1991 --author \"Herbert H. Clark\"", None),
    ("papervault status --json", "papervault status --json", '"papers": 4'),
]


def test_the_readme_everyday_commands_work_in_a_fresh_shell(tmp_path):
    """The README's everyday commands against a new workspace made with `papervault init`."""
    from papervault.demo import make_synthetic_papers

    check_readme_order(NEWCOMER)
    home = tmp_path / "home"
    downloads = home / "Downloads" / "papers"
    downloads.mkdir(parents=True)
    # one PDF in the folder (the demo workspace test has all three): a folder add, and less to embed
    shutil.copy(next(p for p in make_synthetic_papers(tmp_path / "synthetic") if p.name == "synthetic-ledger.pdf"),
                downloads)
    work = tmp_path / "work"
    work.mkdir()
    (work / "refs.bib").write_text(NEWCOMER_BIB)
    (work / "library.json").write_text(json.dumps(NEWCOMER_CSL))
    venv = Path(sys.executable).parent.parent
    assert (venv / "bin" / "activate").is_file() and (venv / "bin" / "papervault").is_file()
    model = Path(os.environ.get("PAPERVAULT_EMBED_MODEL_PATH") or "/work/shared/models/all-MiniLM-L6-v2-onnx")
    if not (model / "model.onnx").is_file():
        pytest.skip(f"the local embedding model is not at {model}")
    assert "`papervault init DIR --embed-model NAME --embed-model-path FOLDER`" in (ROOT / "README.md").read_text()

    type_into_bash(NEWCOMER, fresh_env(home), work, venv=str(venv), model=str(model))
    thesis = (work / "thesis.bib").read_text()
    assert "@article{lamport1998part," in thesis and "@incollection{clark1991grounding," in thesis
    assert "pages = {133--169}" in thesis and "ongaro2014raft" not in thesis
    assert f'model_path = "{model}"' in (home / "research" / "papervault.toml").read_text()


@pytest.fixture(scope="module")
def make_demo(tmp_path_factory, prefect_api, model_dir) -> dict:
    """The workspace `make demo` builds, made by the Makefile's own `demo` recipe and model settings: make
    runs in a new folder (the demo writes `demo-workspace/synthetic/` under it) with this checkout's
    Makefile, the venv of the running Python (`-o` its install stamp: nothing is installed) and the shared
    folder beside the checkout; no model variable comes from the test (only its speed settings, RUN_SPEED_VARS).
    The demo's survey flow reports to the session's Prefect server (a user's `make demo` starts Prefect's
    temporary one)."""
    from conftest import SHARED

    make = shutil.which("make")
    if make is None:
        pytest.skip("make is not installed (the README's `make demo` needs it)")
    where = tmp_path_factory.mktemp("make-demo")
    venv = Path(sys.executable).parent.parent
    # a user's `make demo` is a top-level make: the suite may itself run under `make test` (MAKELEVEL, MAKEFLAGS)
    env = {k: v for k, v in os.environ.items()
           if (not k.startswith("PAPERVAULT_") or k in RUN_SPEED_VARS)   # the run's caches and one ONNX thread
           and k not in ("MAKELEVEL", "MAKEFLAGS", "MFLAGS")}
    env.update(HOME=str(where), PYTHONPATH=str(ROOT))
    r = subprocess.run([make, "-f", str(ROOT / "Makefile"), "demo", f"VENV={venv}", f"SHARED={SHARED}",
                        "-o", f"{venv}/.installed"], cwd=where, env=env, capture_output=True, text=True,
                       timeout=1200)
    assert r.returncode == 0, (r.stdout[-3000:], r.stderr[-3000:])
    assert r.stdout.splitlines()[0].split() == [f"{venv}/bin/papervault", "demo"]      # the recipe make ran
    ws = where / "demo-workspace" / "synthetic"
    assert f"Workspace: {ws} (3 papers)" in r.stdout
    survey = re.search(r"^Survey: +(\S+)/survey\.md$", r.stdout, re.M)
    assert survey and Path(survey[1]).parent == ws / "vault" / "surveys"
    # the workspace remembers the model the Makefile chose, so later shells need no environment
    assert f'model_path = "{model_dir}"' in (ws / "papervault.toml").read_text()
    return {"ws": ws, "slug": Path(survey[1]).name}


# The demo's three synthetic papers; `open --print` prints the URL instead of starting a viewer. Not typed here,
# as each CLI process costs the suite seconds: add, delete, index, review, edit and status (the new workspace
# types them), --zotero, --arxiv-search and enrich (Zotero, network), add-repo (tests/test_code_repo.py),
# --task-runner dask (tests/test_ingest_flow.py), rekey (tests/test_identity.py), doctor
# (tests/test_crosslingual.py) and doctor --fix (tests/test_recovery.py).
DEMO = [
    ("source .venv/bin/activate", "source {venv}/bin/activate", None),
    ("export PAPERVAULT_WORKSPACE=~/research", "export PAPERVAULT_WORKSPACE={ws}", None),
    ("papervault list", "papervault list", "3 papers"),
    ("papervault open lamport1998part --page 4", "papervault open brenner2023quorum --page 2 --print",
     "file://{ws}/pdfs/"),
    ('papervault search "leases for local reads" --json', 'papervault search "leases for local reads" --json',
     '"paper_id": "brenner2023quorum"'),
    ('papervault locate "a lease quorum is a set of replicas"', 'papervault locate "a lease quorum is a set of replicas"',
     "[brenner2023quorum] Quorum Leases for Fast Local Reads in Replicated Logs (p. 1, exact)"),
    ("papervault show lamport1998part", "papervault show brenner2023quorum", "**Authors:** Ada Brenner, Wei Zhang"),
    ("papervault export --tag thesis -o thesis.bib", "papervault export --survey {slug} -o demo.bib",
     "Exported 3 papers as BibTeX to demo.bib"),
    ('papervault survey "geo-replication" --select-only', 'papervault survey "geo-replication" --select-only',
     "in {ws}/vault/surveys/geo-replication/selection.md: untick or add papers there"),
    ('papervault survey "geo-replication" --backend extractive',
     'papervault survey "geo-replication" --backend extractive', "Survey written to {ws}/vault/surveys/geo-replication"),
    ("papervault site build", "papervault site build", "(3 papers, 2 surveys)"),
    ("papervault mcp install claude-code --scope user", "papervault mcp install claude-code --scope user",
     "every folder"),
]


def test_the_readme_everyday_commands_work_in_a_fresh_shell_on_the_make_demo_workspace(make_demo, tmp_path):
    """The README's everyday commands against the workspace `make demo` made, in a shell without the Makefile's
    environment: the model the workspace recorded is used by every command, the survey runs in process and
    shows its stages (no Prefect run: tests/test_survey_flow.py checks a flow's task runs, named by paper),
    and the MCP server Claude Code starts from `mcp install`'s entry answers with nothing else set."""
    from mcp import Client, StdioServerParameters

    check_readme_order(DEMO)
    ws, home = make_demo["ws"], tmp_path / "newcomer"
    home.mkdir()
    venv = Path(sys.executable).parent.parent
    # the session's Prefect server, as a user who runs `prefect server start` has it (without it every survey
    # starts Prefect's temporary server, which the Dask add of tests/test_ingest_flow.py covers)
    env = fresh_env(home, PREFECT_API_URL=os.environ["PREFECT_API_URL"])
    steps = dict(zip((typed for _, typed, _ in DEMO),
                     type_into_bash(DEMO, env, tmp_path, venv=str(venv), ws=str(ws), slug=make_demo["slug"])))

    pdf = steps["papervault open brenner2023quorum --page 2 --print"].strip()
    assert pdf.endswith(".pdf#page=2") and Path(pdf.removeprefix("file://").split("#")[0]).is_file()
    assert "@inproceedings{brenner2023quorum," in (tmp_path / "demo.bib").read_text()
    assert (ws / "site" / "papers" / "brenner2023quorum").is_dir() and Workspace(ws).vault.is_clean()

    # the survey: in process, one line per stage, no Prefect log line, the wall time of the whole command, the report
    out = steps['papervault survey "geo-replication" --backend extractive']
    assert "Task run" not in out and "Flow run" not in out and "starting the survey in this process" in out, out
    stages = [line.split()[1] for line in out.splitlines() if re.match(r"\[[1-8]/8\] \S+ +[0-9.]+ s$", line)]
    assert stages == ["retrieve", "parse", "analyse", "index", "correlate", "outline", "draft", "polish"], out
    sdir = ws / "vault" / "surveys" / "geo-replication"
    assert str(sdir / "polish-report.md") in out
    done = next(line for line in out.splitlines() if line.startswith("Done in"))
    wall, in_stages = (float(x) for x in done.replace("(", " ").split()[2:5:2])
    assert wall >= in_stages
    survey = (sdir / "survey.md").read_text()
    assert "[polish-report.md](polish-report.md)" in survey and re.search(r"\b[23] papers\b", survey)

    # `papervault mcp`, started as Claude Code starts it: the command, arguments and env of the user-scope entry
    entry = json.loads((home / ".claude.json").read_text())["mcpServers"]["papervault"]
    assert entry["env"] == {} and entry["args"][-1] == str(ws)
    params = StdioServerParameters(command=entry["command"], args=entry["args"], env={**env, **entry["env"]})

    async def main():
        async with Client(params, read_timeout_seconds=120) as c:
            hits = (await c.call_tool("search", {"query": "leases for local reads", "limit": 3})).structured_content
            assert hits["hits"][0]["paper_id"] == "brenner2023quorum", hits
            paper = (await c.call_tool("get_paper", {"paper_id": "quinn2022cold"})).structured_content
            assert paper["meta"]["title"] == "Cold Replicas: Cheaper Durability through Tiered Placement"
            assert paper["pdf"] and paper["has_fulltext"]

    anyio.run(main)


def test_searches_during_another_process_rebuild_see_the_previous_index(ws, model_dir):
    """`index --rebuild` in another process: every search made meanwhile still finds the papers (the rebuild
    fills staging tables and replaces the live ones at the end), and afterwards the index is whole."""
    import time

    from papervault.index.search import Searcher

    invoke("index", "-q")
    searcher = Searcher(ws)
    assert searcher.search("widget scheduler constant time", limit=3)
    proc = subprocess.Popen([sys.executable, "-m", "papervault", "index", "--rebuild", "-q", "-w", str(ws.root)],
                            cwd=ROOT, env={**os.environ, "PYTHONPATH": str(ROOT)},
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    during = []
    try:
        while proc.poll() is None:
            during.append(len(searcher.search("widget scheduler constant time", limit=3, mode="fts")))
            time.sleep(0.05)
    finally:
        out, err = proc.communicate(timeout=300)
    assert proc.returncode == 0, err
    assert len(during) >= 5 and min(during) > 0, during
    from papervault.index.store import CHUNKS, open_db, table_names

    # no staging table left (the multilingual companion, when that space is on, is the live one)
    assert set(table_names(open_db(ws))) - {"chunks_ml"} == {"papers", CHUNKS}
    assert invoke("status", "--json").output.count('"index_health": "ok"') == 1
