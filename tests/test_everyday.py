"""Issue 18 through the user's entry points: export, locate, the reader's highlights everywhere, and the
papercuts a newcomer hit (exit codes, empty commits, silent skips, vague messages, MCP user scope)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import anyio
import pytest
from click.testing import CliRunner

from papervault.cli import cli
from papervault.workspace import Workspace

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
    assert "Exported 2 paper(s)" in res.output
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
                                           if k in os.environ}, "PYTHONPATH": str(ROOT)})

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
    assert "Added 2 paper(s)" in report.output
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
    assert "the index is empty (3 paper(s) in the vault). Run `papervault index`" in invoke("search", "widgets").output
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
    raw = json.loads(invoke(*query, "--json").output)
    both = {h["section"] for h in raw if h["level"] == "section"} & {h["section"] for h in raw if h["level"] == "paragraph"}
    assert long_section in both        # the raw hits hold the section and its own paragraph
    out = invoke(*query).output
    assert long_title in out
    shown = [line.split(" · ")[0].strip() for line in out.splitlines() if f" · {long_section} · " in line]
    assert "paragraph" in shown and "section" not in shown


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


def test_survey_shows_its_stages_not_prefects_log_lines(workspace_env, tmp_path):
    """Through a real process with Prefect's INFO logging on: one line per stage on stderr, no `Task run`
    lines, the wall time of the whole command, the report's path, and task runs named by paper."""
    from papervault.demo import make_synthetic_papers

    ws, _ = Workspace.init(workspace_env)
    invoke("add", *map(str, make_synthetic_papers(tmp_path / "pdfs")), "--backend", "extractive")
    env = {**os.environ, "PYTHONPATH": str(ROOT), "PREFECT_LOGGING_LEVEL": "INFO"}
    r = subprocess.run([sys.executable, "-m", "papervault", "survey", "replication in storage systems",
                        "--backend", "extractive", "--slug", "repl", "-w", str(ws.root)],
                       capture_output=True, text=True, timeout=900, cwd=ROOT, env=env)
    assert r.returncode == 0, r.stderr[-3000:]
    assert "Task run" not in r.stderr and "Flow run" not in r.stderr
    stages = [line.split()[1] for line in r.stderr.splitlines() if line.startswith("[") and " s" in line
              and not line.startswith("[0/")]
    assert stages == ["retrieve", "parse", "analyse", "index", "correlate", "outline", "draft", "polish"]
    assert str(ws.vault.survey_dir("repl") / "polish-report.md") in r.stdout
    done = next(line for line in r.stdout.splitlines() if line.startswith("Done in"))
    wall, in_stages = (float(x) for x in done.replace("(", " ").split()[2:5:2])
    assert wall >= in_stages
    survey = (ws.vault.survey_dir("repl") / "survey.md").read_text()
    assert "[polish-report.md](polish-report.md)" in survey and "3 papers" in survey

    names = subprocess.run([sys.executable, "-c", TASK_RUN_NAMES], capture_output=True, text=True, timeout=300,
                           env=env, cwd=ROOT)
    assert names.returncode == 0, names.stderr[-2000:]
    runs = set(json.loads(names.stdout.strip().splitlines()[-1]))
    assert {f"analyse-{pid}" for pid in ws.vault.paper_ids()} <= runs
    assert {f"parse-{pid}" for pid in ws.vault.paper_ids()} <= runs


TASK_RUN_NAMES = """
import asyncio, json
from prefect.client.orchestration import get_client
async def main():
    async with get_client() as c:
        print(json.dumps([t.name for t in await c.read_task_runs(limit=200)]))
asyncio.run(main())
"""


# --- the README, as a newcomer types it -----------------------------------------------------------------

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
    ("papervault init ~/research", "papervault init ~/research", "Workspace ready at"),
    ("export PAPERVAULT_WORKSPACE=~/research", "export PAPERVAULT_WORKSPACE=~/research", None),
    ("papervault add ~/Downloads/papers/ refs.bib library.json",
     "papervault add ~/Downloads/papers/ refs.bib library.json", "Added 7 paper(s)"),
    ("papervault list", "papervault list --year 1990-2000", "3 paper(s)"),
    ("papervault delete lamport1998part ongaro2014raft", "papervault delete ongaro2014raft", "Deleted 1 paper(s)"),
    ("papervault index", "papervault index", "Indexed in"),
    ('papervault search "leases for local reads" --json', 'papervault search "leases for local reads" --json',
     '"paper_id": "brenner2023quorum"'),
    ('papervault search "stale reads" --level highlight', 'papervault search "stale reads" --level highlight',
     "[brewer2000towards] Towards Robust Distributed Systems"),
    ('papervault locate "a lease quorum is a set of replicas"', 'papervault locate "a lease quorum is a set of replicas"',
     "[brenner2023quorum]"),
    ("papervault show lamport1998part", "papervault show lamport1998part", "Volume: 16"),
    ("papervault export --tag thesis -o thesis.bib", "papervault export --tag thesis -o thesis.bib",
     "Exported 2 paper(s) as BibTeX to thesis.bib"),
    ("papervault review", "papervault review", None),
    ("papervault edit clark1991grounding --year 1991 --author \"Herbert H. Clark\"",
     "papervault edit clark1991grounding --year 1991 --author \"Herbert H. Clark\"", None),
    ("papervault status --json", "papervault status --json", '"papers": 6'),
]


def test_the_readme_everyday_commands_work_in_a_fresh_shell(tmp_path):
    """The README's everyday commands in its order, typed into a new bash with nothing of the Makefile's
    environment (no PAPERVAULT_EMBED_*, HOME in tmp_path), against a new workspace. The embedding model is
    written into the new workspace's papervault.toml, as a user would (there is no `init --embed-model` yet)."""
    from papervault.demo import make_synthetic_papers

    readme = (ROOT / "README.md").read_text()
    block = readme.split("## Everyday use", 1)[1].split("\n## ", 1)[0]
    lines = [line.strip() for line in block.splitlines() if line.startswith("    ")]
    positions = []
    for shown, _, _ in NEWCOMER:
        at = next((i for i, line in enumerate(lines) if line.startswith(shown)), None)
        assert at is not None, f"the README's everyday block has no line starting {shown!r}"
        positions.append(at)
    assert positions == sorted(positions), "the test types the README's commands in the README's order"
    assert not any(line.startswith(".venv/bin/papervault") for line in lines), "one way to run papervault"

    home = tmp_path / "home"
    downloads = home / "Downloads" / "papers"
    make_synthetic_papers(downloads)
    work = tmp_path / "work"
    work.mkdir()
    (work / "refs.bib").write_text(NEWCOMER_BIB)
    (work / "library.json").write_text(json.dumps(NEWCOMER_CSL))
    venv = Path(sys.executable).parent.parent
    assert (venv / "bin" / "activate").is_file() and (venv / "bin" / "papervault").is_file()
    model = Path(os.environ.get("PAPERVAULT_EMBED_MODEL_PATH") or "/work/shared/models/all-MiniLM-L6-v2-onnx")
    if not (model / "model.onnx").is_file():
        pytest.skip(f"the local embedding model is not at {model}")

    env = {"HOME": str(home), "PATH": "/usr/bin:/bin", "LANG": "C.UTF-8", "HF_HUB_OFFLINE": "1",
           "DO_NOT_TRACK": "1", "PYTHONPATH": str(ROOT)}   # this checkout's code through the installed script
    for k in ("PAPERVAULT_EMBED_MODEL", "PAPERVAULT_EMBED_MODEL_PATH", "PAPERVAULT_WORKSPACE"):
        assert k not in env
    script = ["set -e", "cd " + str(work)]
    for i, (_, typed, _) in enumerate(NEWCOMER):
        script.append(f"echo '=== {i}'")
        script.append(typed.format(venv=venv))
        if typed.startswith("papervault init"):
            script.append("sed -i 's|^\\[embed\\]$|[embed]\\nmodel = \"sentence-transformers/all-MiniLM-L6-v2\"\\n"
                          f"model_path = \"{model}\"|' ~/research/papervault.toml")
    r = subprocess.run(["bash", "--noprofile", "--norc", "-c", "\n".join(script)], capture_output=True, text=True,
                       env=env, timeout=900)
    assert r.returncode == 0, (r.stdout[-3000:], r.stderr[-3000:])
    outputs = r.stdout.split("=== ")[1:]
    assert len(outputs) == len(NEWCOMER)
    for (_, typed, want), out in zip(NEWCOMER, outputs):
        if want:
            assert want in out, (typed, out[-2000:])
    assert "Traceback" not in r.stderr
    thesis = (work / "thesis.bib").read_text()
    assert "@article{lamport1998part," in thesis and "@incollection{clark1991grounding," in thesis
    assert "pages = {133--169}" in thesis and "ongaro2014raft" not in thesis
    assert 'model_path = "' in (home / "research" / "papervault.toml").read_text()


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
