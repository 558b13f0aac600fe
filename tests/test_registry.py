"""The registries of what can be plugged in (papervault/registry.py): backends, site engines and sync sources are
entry points, the built-ins included, and a package installed beside papervault adds one that the command line
offers, describes and runs, without papervault changing."""

from __future__ import annotations

import sys
import textwrap

import pytest

from papervault.registry import BACKENDS, SITE_ENGINES, SYNC_SOURCES


@pytest.fixture
def plugin_dist(tmp_path, monkeypatch):
    """A package `pvplugin` with a backend, a site engine and a sync source, installed as a dist-info folder on
    sys.path the way pip leaves one."""
    (tmp_path / "pvplugin.py").write_text(textwrap.dedent('''
        from papervault.agents import BackendSpec, Capabilities
        from papervault.agents.extractive import ExtractiveBackend
        from papervault.site.build import SiteEngine

        SPEC = BackendSpec("quotebot", lambda settings, **common: ExtractiveBackend(**common),
                           Capabilities(takes_schema=True), "quotes, from a plugin")
        ENGINE = SiteEngine("plainpages", lambda ws, strict, whats_new: {"engine": "plainpages", "pages": 0})


        class Feed:
            kind, order, removable = "feed", 50, False

            def __init__(self, ws):
                self.ws, self.name = ws, "feed"

            @classmethod
            def followed(cls, ws):
                return [cls(ws)]

            def list_items(self):
                return {"item-1": "v1"}

            def fetch(self, items):
                return []

            def run(self, report, *, accept=False):
                report.skipped.append({"source": self.name, "reason": "listed " + ", ".join(self.list_items())})
                return "unchanged"
    '''))
    info = tmp_path / "pvplugin-1.0.dist-info"
    info.mkdir()
    (info / "METADATA").write_text("Metadata-Version: 2.1\nName: pvplugin\nVersion: 1.0\n")
    (info / "entry_points.txt").write_text("[papervault.backends]\nquotebot = pvplugin:SPEC\n\n"
                                           "[papervault.site_engines]\nplainpages = pvplugin:ENGINE\n\n"
                                           "[papervault.sync_sources]\nfeed = pvplugin:Feed\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    yield tmp_path
    sys.modules.pop("pvplugin", None)


@pytest.fixture
def workspace(workspace_env):
    from papervault.workspace import Workspace

    return Workspace.init(workspace_env)[0]


def test_the_built_ins_are_entry_points_of_papervault(workspace):
    assert BACKENDS.names() == ("claude", "extractive", "openai")
    assert SITE_ENGINES.names() == ("mkdocs", "zensical")
    assert set(SYNC_SOURCES.names()) == {"zotero", "folder", "arxiv", "arxiv_versions"}
    from papervault.agents import EXTRACTIVE
    from papervault.app.syncsources import (ArxivQuerySource, ArxivVersionsSource, FolderSource, SyncSource,
                                            ZoteroSource)
    from papervault.site.build import MKDOCS

    assert BACKENDS.get("Extractive") is EXTRACTIVE and SITE_ENGINES.get("mkdocs") is MKDOCS
    assert SYNC_SOURCES.get("zotero") is ZoteroSource
    for source in (ZoteroSource(workspace), FolderSource(workspace, "~/Papers"), ArxivQuerySource(workspace, "q"),
                   ArxivVersionsSource(workspace)):
        assert isinstance(source, SyncSource) and SYNC_SOURCES.get(source.kind) is type(source)
    assert FolderSource(workspace, "~/Papers").name == "folder:~/Papers"
    with pytest.raises(KeyError):
        BACKENDS.get("gpt-9")


def test_the_fallback_built_ins_are_those_pyproject_declares(monkeypatch):
    """Run from a source folder, or from an install older than a group, papervault's own entry points are missing:
    the registry falls back to its BUILTINS, which must say what pyproject.toml says."""
    import tomllib
    from pathlib import Path

    from papervault import registry

    declared = tomllib.loads((Path(__file__).resolve().parents[1] / "pyproject.toml").read_text())
    assert declared["project"]["entry-points"] == registry.BUILTINS
    monkeypatch.setattr(registry, "entry_points", lambda group: ())
    fresh = registry.Registry("backend", "papervault.backends")
    assert set(fresh.names()) == {"claude", "extractive", "openai"}
    from papervault.agents import EXTRACTIVE

    assert fresh.get("extractive") is EXTRACTIVE


def test_an_installed_plugin_is_a_choice_of_the_command_line(plugin_dist, cli_run, workspace):
    assert "quotebot" in BACKENDS.names() and "plainpages" in SITE_ENGINES.names()
    from papervault.agents import capabilities

    assert capabilities("quotebot").takes_schema and not capabilities("quotebot").uses_model
    survey_help = cli_run(["survey", "--help"]).output
    assert "[claude|extractive|openai|quotebot]" in " ".join(survey_help.split())
    assert "claude, extractive, openai or quotebot" in " ".join(survey_help.split())
    site_help = " ".join(cli_run(["site", "build", "--help"]).output.split())
    # papervault's own first, then the plugins'
    assert "[mkdocs|zensical|plainpages]" in site_help and "mkdocs, zensical or plainpages" in site_help
    # the engine is used, not only listed: `site build --engine plainpages` runs the plugin's build
    out = cli_run(["site", "build", "-w", workspace.root, "--engine", "plainpages", "--json"])
    assert '"engine": "plainpages"' in out.output
    bad = cli_run(["site", "build", "-w", workspace.root, "--engine", "nope"], check=False)
    assert bad.exit_code == 2 and "'nope' is not one of 'mkdocs', 'zensical', 'plainpages'" in bad.output


def test_an_installed_sync_source_runs_in_the_pass(plugin_dist, workspace):
    from papervault.app.sync import followed, sync

    assert [s.name for s in followed(workspace)] == ["feed"]       # the workspace follows no built-in source
    report = sync(workspace, index=False)
    assert report.sources[0]["source"] == "feed" and report.sources[0]["status"] == "unchanged"
    assert report.skipped == [{"source": "feed", "reason": "listed item-1"}]


def test_a_backend_registered_in_process_is_a_choice_too(cli_run):
    from papervault.agents import Capabilities, register
    from papervault.agents.extractive import ExtractiveBackend

    register("inline-quotes", lambda settings, **common: ExtractiveBackend(**common), Capabilities())
    try:
        assert "inline-quotes" in " ".join(cli_run(["survey", "--help"]).output.split())
    finally:
        BACKENDS.unregister("inline-quotes")
    assert "inline-quotes" not in BACKENDS.names()
