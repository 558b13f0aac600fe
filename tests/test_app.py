"""The application layer: a survey without Prefect, `delete`, the one year grammar, the backend registry, cache
keys that follow the workspace's own templates, and templates that ship as package data."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tomllib
from pathlib import Path

import pytest

from papervault.errors import BackendError, InputError
from papervault.workspace import Workspace

from support_llm import make_paper_vault

ROOT = Path(__file__).resolve().parents[1]


# --- a survey without Prefect ----------------------------------------------------------------------

SURVEY_SCRIPT = r"""
import json, sys
from pathlib import Path
from papervault.app.adding import add
from papervault.app.surveyplan import run_survey_inprocess
from papervault.demo import make_synthetic_papers
from papervault.workspace import Workspace

ws, _ = Workspace.init(Path(sys.argv[1]))
papers = make_synthetic_papers(ws.state_dir / "demo-papers")
report = add(ws, [str(p) for p in papers], backend="extractive")
# the demo's own topic: its three papers are about replication (two) and consistency (one)
told = []      # the progress handed down: (stage, seconds) as each stage ends
result = run_survey_inprocess("replication and consistency in storage systems", workspace=ws.root, slug="repl",
                              progress=lambda stage, seconds: told.append(stage))
print(json.dumps({"added": report.added, "result": result, "told": told,
                  "loaded": sorted(m for m in sys.modules if m.split(".")[0] in ("prefect", "flows", "mcp", "mcp_server")
                                   or m.startswith(("papervault.commands", "papervault.cli")))}))
"""


def test_a_survey_runs_stage_by_stage_without_prefect(tmp_path):
    """add and a whole survey through the application layer in a fresh process: neither Prefect, the flows,
    the MCP server nor the command line is even imported, and every stage writes and commits its artefact."""
    ws_dir = tmp_path / "plain"
    r = subprocess.run([sys.executable, "-c", SURVEY_SCRIPT, str(ws_dir)], capture_output=True, text=True,
                       timeout=600, env={**os.environ, "PYTHONPATH": str(ROOT)})
    assert r.returncode == 0, r.stderr[-3000:]
    out = json.loads(r.stdout.strip().splitlines()[-1])
    assert out["loaded"] == []
    res = out["result"]
    assert len(out["added"]) == 3 and sorted(res["papers"]) == sorted(out["added"])
    assert res["outline"] == "new" and res["sections"] >= 2 and res["claims"] > 0
    assert set(res["timings"]) == {"retrieve", "parse", "analyse", "index", "correlate", "outline", "draft", "polish"}
    assert out["told"] == ["retrieve", "parse", "analyse", "index", "correlate", "outline", "draft", "polish"]
    ws = Workspace(ws_dir)
    sdir = ws.vault.survey_dir("repl")
    for name in ("selection.md", "correlation.md", "outline.md", "survey.md", "references.bib", "references.json", "polish-report.md"):
        assert (sdir / name).is_file(), name
    survey = (sdir / "survey.md").read_text()
    assert all(f"@{pid}" in survey for pid in out["added"])
    # one commit per stage that wrote something, and nothing left uncommitted
    subjects = [c.message.splitlines()[0] for c in ws.vault.repo.iter_commits(max_count=10)]
    for stage in ("select", "correlate", "outline", "draft", "polish"):
        assert any(s.startswith(f"survey repl: {stage}") for s in subjects), (stage, subjects)
    assert len(res["commits"]) == 5 and ws.vault.is_clean()


def test_the_model_fallback_keeps_the_extractive_result(workspace_env):
    """A backend that writes prose but fails leaves the extractive result and says why; one that only quotes
    is never asked."""
    from papervault.agents import Capabilities, register
    from papervault.agents.base import Backend, Task
    from papervault.app.survey import SurveyContext, model_or_extractive

    ws, _ = Workspace.init(workspace_env)
    asked: list[str] = []

    class Broken(Backend):
        name = "broken-test"

        async def ask(self, task):
            asked.append(task.kind)
            raise BackendError("the model is down", fix="try later")

    register("broken-test", lambda settings, **common: Broken(**{**common, "retries": 1, "backoff": 0}),
             Capabilities(writes_prose=True, uses_model=True))
    try:
        notes: list[str] = []
        task = lambda: Task(kind="survey-outline", key="k", system="s", prompt="p", schema={"type": "object"})  # noqa: E731
        ctx = SurveyContext(ws, "t", "t", "broken-test")
        got = model_or_extractive(ctx, "broken-test", task, lambda data, label: "model", "extractive",
                                  lambda exc: notes.append(str(exc)))
        assert got == "extractive" and asked == ["survey-outline"] and "the model is down" in notes[0]
        asked.clear()
        assert model_or_extractive(ctx, "extractive", task, lambda d, l: "model", "extractive") == "extractive"
        assert asked == []
    finally:  # the registry is process-wide: leave only the built-in backends
        from papervault.registry import BACKENDS as REGISTRY

        REGISTRY.unregister("broken-test")


# --- the backend registry --------------------------------------------------------------------------

def test_backends_declare_capabilities_in_one_registry():
    from papervault.agents import BACKENDS, Capabilities, capabilities, get_backend, register, registered
    from papervault.agents.extractive import ExtractiveBackend
    from papervault.config import Settings

    assert set(BACKENDS) == {"extractive", "claude", "openai"} <= set(registered())
    assert not capabilities("extractive").writes_prose and not capabilities("extractive").uses_model
    assert capabilities("claude").writes_prose and capabilities("openai").takes_schema
    assert capabilities(" Claude ") == capabilities("claude")
    with pytest.raises(BackendError, match="unknown backend 'gpt-9'"):
        capabilities("gpt-9")
    # a new backend registers the way the built-in ones do, and get_backend builds it from settings
    register("quotes-too", lambda settings, **common: ExtractiveBackend(**common), Capabilities(takes_schema=True))
    try:
        b = get_backend("quotes-too", Settings(), state_dir=None)
        assert isinstance(b, ExtractiveBackend) and capabilities(b) == capabilities("extractive")
    finally:
        from papervault.registry import BACKENDS as REGISTRY

        REGISTRY.unregister("quotes-too")


def test_no_module_compares_backend_names():
    """Decisions go through capabilities: no `backend != "extractive"` (or ==) outside the registry."""
    offenders = []
    for path in [*ROOT.glob("papervault/**/*.py"), *ROOT.glob("flows/*.py"), *ROOT.glob("mcp_server/*.py")]:
        text = path.read_text(encoding="utf-8")
        for needle in ('!= "extractive"', '== "extractive"'):
            if needle in text and path.name != "__init__.py":
                offenders.append(f"{path.relative_to(ROOT)}: {needle}")
    assert offenders == []


# --- delete, list ----------------------------------------------------------------------------------

@pytest.fixture
def three_papers(workspace_env):
    ws, _ = Workspace.init(workspace_env)
    make_paper_vault(ws.root, "doe2020widgets", venue="OSDI")
    make_paper_vault(ws.root, "roe2012sprocket", title="Sprocket", year=2012, authors=["Rob Roe"])
    make_paper_vault(ws.root, "kim2016gears", title="Gears", year=2016, authors=["Ann Kim"], tags=["scheduling"])
    return ws


def _cli(args: list[str], capsys) -> tuple[int, str, str]:
    from papervault.cli import main

    try:
        main(args)
        code = 0
    except SystemExit as exc:
        code = exc.code or 0
    out = capsys.readouterr()
    return code, out.out, out.err


def test_cli_delete_removes_papers_and_their_index_rows_in_one_commit(three_papers, capsys):
    from papervault.index.store import PaperIndex

    ws = three_papers
    with ws.write_lock("index"):
        PaperIndex(ws).sync()
    before = PaperIndex(ws).stats()["chunks"]
    head = ws.vault.repo.head.commit.hexsha
    code, out, err = _cli(["delete", "roe2012sprocket", "kim2016gears", "--json"], capsys)
    assert code == 0, err
    data = json.loads(out)
    assert data["deleted"] == ["roe2012sprocket", "kim2016gears"] and data["index"]["chunks_removed"] > 0
    assert PaperIndex(ws).stats()["chunks"] == before - data["index"]["chunks_removed"]
    assert ws.vault.paper_ids() == ["doe2020widgets"] and ws.vault.is_clean()
    commit = ws.vault.repo.head.commit
    assert commit.parents[0].hexsha == head and commit.hexsha == data["commit"]
    assert commit.message.startswith("delete: roe2012sprocket, kim2016gears")


def test_cli_delete_refuses_unknown_ids_before_deleting_anything(three_papers, capsys):
    ws = three_papers
    head = ws.vault.repo.head.commit.hexsha
    code, out, err = _cli(["delete", "doe2020widgets", "nobody1999nothing"], capsys)
    assert code == 1 and out == ""
    assert err == "error: no paper 'nobody1999nothing' in the vault. find ids with `papervault list` (MCP: `list_papers`)\n"
    assert len(ws.vault.paper_ids()) == 3 and ws.vault.repo.head.commit.hexsha == head
    code, _, err = _cli(["delete", "../etc"], capsys)
    assert code == 1 and err.startswith("error: ") and err.count("\n") == 1


def test_cli_list_and_mcp_share_one_year_grammar(three_papers, capsys):
    from mcp_server.tools import VaultTools

    code, out, _ = _cli(["list", "--year", "2010-2016", "--json"], capsys)
    assert code == 0 and [r["id"] for r in json.loads(out)] == ["kim2016gears", "roe2012sprocket"]
    code, out, _ = _cli(["list", "--year", "2012"], capsys)
    assert code == 0 and out.splitlines()[-1] == "1 paper" and "roe2012sprocket" in out
    code, out, _ = _cli(["list", "--author", "kim", "--json"], capsys)
    assert [r["id"] for r in json.loads(out)] == ["kim2016gears"]
    assert [p["id"] for p in VaultTools(three_papers).list_papers(year="..2016")["papers"]] == \
        ["kim2016gears", "roe2012sprocket"]
    code, _, err = _cli(["list", "--year", "last year"], capsys)
    assert code == 1 and err.startswith("error: invalid year 'last year'. give a year like 2019")
    from papervault.app.papers import year_range

    assert year_range("2015..") == (2015, 9999) and year_range(2019) == (2019, 2019)
    with pytest.raises(InputError):
        year_range("2015-20")


# --- templates: one loader, package data, cache keys -----------------------------------------------

def test_templates_ship_as_package_data_and_every_package_is_listed():
    from papervault.templating import builtin_dir, files

    cfg = tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["setuptools"]
    assert cfg["package-dir"] == {"papervault.templates": "templates"}
    on_disk = {str(p.parent.relative_to(ROOT)).replace("/", ".")
               for top in ("papervault", "flows", "mcp_server") for p in (ROOT / top).rglob("__init__.py")}
    assert on_disk | {"papervault.templates"} == set(cfg["packages"])
    base = builtin_dir()
    for rel in ("note.md.j2", "note.schema.json", "code_note.md.j2", "prompts/paper-note.system.md.j2",
                "survey/survey.md.j2", "survey/draft.prompt.md.j2"):
        assert (base / rel).is_file(), rel
    assert files("site")                   # pages and assets of the site load through the same loader
    assert any(k.startswith("assets/") for k in files("site")) and any(k.startswith("pages/") for k in files("site"))


def test_a_workspace_template_override_changes_the_survey_cache_keys(workspace_env):
    from papervault.app.survey import SectionInput, SurveyContext, analyse_key, cache_key
    from papervault.templating import builtin_dir, find

    ws, _ = Workspace.init(workspace_env)
    ctx = SurveyContext(ws, "t", "t", "claude")
    params = SectionInput({"title": "s"}, ["a"], {}, "x")
    draft_key = cache_key("draft", ctx, params)
    note_key = analyse_key(ctx, "a")
    assert cache_key("draft", ctx, SectionInput({"title": "s"}, ["a"], {}, "x")) == draft_key      # stable
    own = ws.root / "templates" / "survey" / "draft.prompt.md.j2"
    own.parent.mkdir(parents=True)
    own.write_text((builtin_dir() / "survey" / "draft.prompt.md.j2").read_text() + "\nWrite tersely.\n")
    assert find("draft.prompt.md.j2", "survey", ws.root) == own      # the override is what renders
    assert cache_key("draft", ctx, params) != draft_key
    assert analyse_key(ctx, "a") == note_key
    # an override of the note's prompt changes the analysis key, not the survey's
    survey_key = cache_key("draft", ctx, params)
    prompt = ws.root / "templates" / "prompts" / "paper-note.user.md.j2"
    prompt.parent.mkdir(parents=True)
    prompt.write_text("Read {{ meta.title }} closely.\n")
    assert analyse_key(ctx, "a") != note_key
    assert cache_key("draft", ctx, params) == survey_key


# --- paper.md: one reader, agreeing with the writer ---------------------------------------------------

def test_the_paper_md_reader_agrees_with_the_parser_on_corpus_papers(corpus_dir):
    """Figures (number, page, file), tables (number, page) and pages of real parsed papers, read back."""
    from conftest import parse_once
    from papervault.vault import paper as paper_md

    checked = {"figures": 0, "tables": 0, "html_tables": 0}
    for name in ("time_series_ts-asap.pdf", "languages-theory_liquid_types.pdf",
                 "distributed_systems_tiered-replication-a-cost-effective-alternative-to-full-cluster-geo-replication.pdf"):
        parsed = parse_once(corpus_dir / name)
        doc = paper_md.read(parsed.markdown)
        assert doc.pages == list(range(1, parsed.pages + 1)), name
        assert [(f.number, f.page, f.src) for f in doc.figures] == \
            [(f.number or "", f.page, f"figures/{f.filename}") for f in parsed.figures if f.png], name
        assert [(t.number, t.page) for t in doc.tables] == [(t.number, t.page) for t in parsed.tables], name
        for t, written in zip(doc.tables, parsed.tables):
            assert t.rows and t.caption and " ".join(written.caption.split()).startswith(t.caption[:40])
            checked["html_tables"] += written.markdown.lstrip().startswith("<table")
        spans = doc.page_spans()
        assert all(parsed.markdown[s:].startswith(paper_md.page_anchor(p)) for p, (s, _) in spans.items())
        checked["figures"] += len(doc.figures)
        checked["tables"] += len(doc.tables)
    assert checked["figures"] >= 20 and checked["tables"] >= 3 and checked["html_tables"] >= 1, checked


def test_the_reader_sees_structure_only_where_markdown_has_it():
    from papervault.vault import paper as paper_md

    text = ("# Title\n\n" + paper_md.page_anchor(1) + "\n\n## 1 Intro\n\nTable 1 shows the gist.\n\n"
            "```\n## not a heading\n![not a figure](figures/x.png)\n" + paper_md.page_anchor(9) + "\n```\n\n"
            + paper_md.page_anchor(2) + "\n\n" + paper_md.figure_line("fig-1.png", "1", "Latency [ms] of *x*")
            + "\n\n" + paper_md.table_caption("2", "Results") + "\n\n| a | b |\n|---|---|\n| 1 | 2 |\n")
    doc = paper_md.read(text)
    assert doc.title == "Title" and [s.path for s in doc.sections] == ["1 Intro"]
    assert doc.pages == [1, 2]
    assert [(f.number, f.page, f.src) for f in doc.figures] == [("1", 2, "figures/fig-1.png")]
    assert doc.figures[0].label == r"Figure 1: Latency \[ms\] of *x*"
    assert [(t.number, t.caption, t.rows) for t in doc.tables] == [("2", "Results", [["a", "b"], ["1", "2"]])]
    assert paper_md.page_link("doe2020widgets", 3) == "papers/doe2020widgets/paper.md#page-3"
    assert paper_md.page_link("doe2020widgets", None, prefix="../../papers/") == "../../papers/doe2020widgets/paper.md"


def test_delete_drops_the_papers_code_links_and_rewrites_the_code_note(tmp_path, workspace_env):
    from papervault.app.papers import add_repo, delete
    from papervault.index.code import CodeIndex
    from papervault.vault import frontmatter

    from support_code import make_repo

    ws, _ = Workspace.init(workspace_env)
    make_paper_vault(ws.root, "poe2022manual", title="Linked by hand")
    make_paper_vault(ws.root, "doe2020widgets")
    make_repo(tmp_path / "tiny", {"tiny/core.py": "def lease(term):\n    \"\"\"Grant a read lease.\"\"\"\n    return term + 1\n"})
    add_repo(ws, str(tmp_path / "tiny"), papers=["poe2022manual", "doe2020widgets"])
    assert {l["paper_id"] for l in CodeIndex(ws).links(repo="tiny")} == {"poe2022manual", "doe2020widgets"}
    out = delete(ws, ["poe2022manual"])
    assert out["code_notes"] == ["tiny.md"]
    assert [l["paper_id"] for l in CodeIndex(ws).links(repo="tiny")] == ["doe2020widgets"]
    meta, _ = frontmatter.split((ws.vault.code_dir / "tiny.md").read_text())
    assert meta["papers"] == ["doe2020widgets"]
    changed = ws.vault.repo.git.show("--name-only", "--format=", out["commit"]).split()
    assert "code/tiny.md" in changed and any(c.startswith("papers/poe2022manual/") for c in changed)
    assert ws.vault.is_clean()
