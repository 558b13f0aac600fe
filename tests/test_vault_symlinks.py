"""No file outside the vault is read, indexed, published or served (issue 16, finding 3).

A shared vault may hold symbolic links: `papers/x/paper.md -> ~/secret`, a note, a figure, a whole paper folder,
a page of the user's. Through the user's entry points (`papervault index`, `search`, `site build` and the MCP
server over stdio) none of the linked files' text may come out, and each refused file is a one-line warning.
"""

from __future__ import annotations

import json
import os
from pathlib import Path

import anyio
import pymupdf
import pytest
from click.testing import CliRunner
from mcp import Client, StdioServerParameters

from conftest import without_multilingual
from papervault.cli import cli
from papervault.errors import UnsafePathError
from papervault.vault.paths import safe_vault_path
from support_mcp import papervault_cmd, server_env
from support_site import png

SECRET_FT = "zanzibarquokka"       # words found only in the files outside the vault
SECRET_NOTE = "marmaladeocelot"
SECRET_FOLDER = "tamarindpangolin"
SECRET_PAGE = "saffronaxolotl"


def _pdf(path: Path, title: str, body: str) -> Path:
    doc = pymupdf.open()
    page = doc.new_page()
    page.insert_text((50, 90), title, fontsize=16)
    page.insert_text((50, 130), body, fontsize=10)
    doc.set_metadata({"title": title, "author": "Ada Author"})
    doc.save(str(path))
    doc.close()
    return path


@pytest.fixture(scope="module")
def linked(tmp_path_factory):
    """A workspace with two real papers, then links out of the vault planted as a collaborator's pull would."""
    tmp = tmp_path_factory.mktemp("symlinks")
    root = tmp / "ws"
    runner = CliRunner()
    assert runner.invoke(cli, ["init", str(root)]).exit_code == 0
    without_multilingual(root)      # no question in another language here: one vector space is enough
    a = _pdf(tmp / "alpha.pdf", "Alpha Replication Protocols", "Replicas agree on a log of commands.")
    b = _pdf(tmp / "beta.pdf", "Beta Storage Engines", "Log structured merge trees compact sorted runs.")
    c = _pdf(tmp / "gamma.pdf", "Gamma Clean Paper", "Vector clocks order concurrent events partially.")
    res = runner.invoke(cli, ["add", str(a), str(b), str(c), "--no-index", "--quiet", "--workspace", str(root)])
    assert res.exit_code == 0, res.output
    papers = root / "vault" / "papers"
    alpha, beta, gamma = sorted(p.name for p in papers.iterdir() if p.is_dir())

    outside = tmp / "outside"
    outside.mkdir()
    (outside / "secret.md").write_text(f"# Secret\n\nThe password is {SECRET_FT}.\n", encoding="utf-8")
    (outside / "note.md").write_text(f"---\nid: {beta}\ntitle: {SECRET_NOTE}\n---\n\n# {SECRET_NOTE}\n\n{SECRET_NOTE}\n",
                                     encoding="utf-8")
    (outside / "secret.png").write_bytes(png(value=200))
    folder = outside / "folder"
    folder.mkdir()
    (folder / "note.md").write_text(f"---\nid: evilfolder\ntitle: {SECRET_FOLDER}\n---\n\n{SECRET_FOLDER}\n",
                                    encoding="utf-8")
    (folder / "paper.md").write_text(f"# {SECRET_FOLDER}\n\n{SECRET_FOLDER} text.\n", encoding="utf-8")
    (outside / "page.md").write_text(f"# {SECRET_PAGE}\n\n{SECRET_PAGE}\n", encoding="utf-8")

    (papers / alpha / "paper.md").unlink()
    (papers / alpha / "paper.md").symlink_to(outside / "secret.md")            # full text out of the vault
    (papers / beta / "note.md").unlink()
    (papers / beta / "note.md").symlink_to(outside / "note.md")                # note out of the vault
    (papers / alpha / "figures").mkdir(exist_ok=True)
    (papers / alpha / "figures" / "leak.png").symlink_to(outside / "secret.png")
    (papers / "evilfolder").symlink_to(folder, target_is_directory=True)        # a whole paper folder
    (root / "vault" / "leak.md").symlink_to(outside / "page.md")                # a page of the user's
    (root / "vault" / "inside.md").write_text("# Inside\n\nA page of the user's.\n", encoding="utf-8")
    (root / "vault" / "alias.md").symlink_to(root / "vault" / "inside.md")      # a link inside the vault is fine
    return {"root": root, "alpha": alpha, "beta": beta, "gamma": gamma, "outside": outside}


def _no_secret(text: str) -> None:
    for word in (SECRET_FT, SECRET_NOTE, SECRET_FOLDER, SECRET_PAGE):
        assert word not in text


def test_the_helper_refuses_links_out_and_follows_links_in(linked):
    vault = linked["root"] / "vault"
    with pytest.raises(UnsafePathError, match="leads out of the vault"):
        safe_vault_path(vault, f"papers/{linked['alpha']}/paper.md")
    with pytest.raises(UnsafePathError):
        safe_vault_path(vault, "papers/evilfolder/note.md")          # the link is a parent folder
    with pytest.raises(UnsafePathError):
        safe_vault_path(vault, "../outside/secret.md")
    assert safe_vault_path(vault, "alias.md") == (vault / "inside.md").resolve()
    assert safe_vault_path(vault, f"papers/{linked['beta']}/paper.md").is_file()


def test_index_and_search_skip_linked_files(linked):
    root = linked["root"]
    runner = CliRunner()
    res = runner.invoke(cli, ["index", "--workspace", str(root)])
    # a paper whose paper.md or note.md is a link out of the vault is left out of the index, and `index` says
    # so: one error line per paper naming it and the link, then the count, and exit status 1
    assert res.exit_code == 1, res.output
    errors = [line for line in res.output.splitlines() if line.startswith("error:")]
    refused = {linked["alpha"]: f"papers/{linked['alpha']}/paper.md",
               linked["beta"]: f"papers/{linked['beta']}/note.md",
               "evilfolder": "papers/evilfolder/note.md"}
    assert len(errors) == len(refused) + 1, res.output
    for pid, path in refused.items():
        assert sum(e.startswith(f"error: {pid} not indexed: {path} leads out of the vault") for e in errors) == 1, \
            res.output
    assert errors[-1].startswith(f"error: 3 papers of the vault not indexed ({', '.join(sorted(refused))})"), errors
    assert linked["gamma"] not in "\n".join(errors)
    assert "Indexed in" in res.output                              # the other papers were indexed
    _no_secret(res.output)
    status = json.loads(runner.invoke(cli, ["status", "--json", "--workspace", str(root)]).output)
    assert {linked["alpha"], linked["beta"]} <= set(status["not_indexed"]), status
    assert linked["gamma"] not in status["not_indexed"]
    for word in (SECRET_FT, SECRET_NOTE, SECRET_FOLDER):
        found = runner.invoke(cli, ["search", word, "--json", "--workspace", str(root)])
        assert found.exit_code == 0, found.output
        _no_secret(found.output)
    # the paper whose files are inside the vault is indexed and found
    clean = runner.invoke(cli, ["search", "vector clocks concurrent events", "--json", "--workspace", str(root)])
    assert clean.exit_code == 0, clean.output
    hits = json.loads(clean.output)
    assert hits and {h["paper_id"] for h in hits} == {linked["gamma"]}


def test_site_build_publishes_nothing_from_outside(linked):
    root = linked["root"]
    res = CliRunner().invoke(cli, ["site", "build", "--json", "--workspace", str(root)])
    assert res.exit_code == 0, res.output
    result = json.loads(res.output)
    refused = [w for w in result["warnings"] if "leads out of the vault" in w]
    assert len(refused) >= 5, result["warnings"]     # paper.md, note.md, the folder, the figure, the page
    site = root / "site"
    for f in site.rglob("*"):
        if f.is_file():
            _no_secret(f.read_bytes().decode("utf-8", errors="replace"))
    assert not (site / "papers" / linked["alpha"] / "figures" / "leak.png").exists()
    assert not (site / "papers" / "evilfolder").exists()
    assert (site / "inside.html").is_file() and (site / "alias.html").is_file()
    # nothing in the staging folder points out of the vault either
    stage = root / ".papervault" / "site-src"
    for dirpath, _, files in os.walk(stage):
        for name in files:
            p = Path(dirpath) / name
            if p.is_symlink():
                target = p.resolve()
                # the vault, the workspace's kept PDFs (pdfs/<sha256>.pdf), MathJax and the site's own assets
                assert str(target).startswith((str((root / "vault").resolve()), str((root / "pdfs").resolve()))) \
                    or "site-packages" in str(target) or "templates" in str(target), target


def test_mcp_refuses_linked_files_over_stdio(linked):
    root, alpha, beta = linked["root"], linked["alpha"], linked["beta"]
    cmd = papervault_cmd()
    params = StdioServerParameters(command=cmd[0], args=[*cmd[1:], "mcp", "--workspace", str(root)], env=server_env())

    async def main():
        async with Client(params, read_timeout_seconds=120) as c:
            texts = []
            for tool, args in (("read", {"paper_id": alpha}), ("get_paper", {"paper_id": beta}),
                               ("get_paper", {"paper_id": "evilfolder"}),
                               ("read", {"paper_id": "evilfolder", "pages": "1"})):
                r = await c.call_tool(tool, args)
                text = " ".join(getattr(x, "text", "") for x in r.content)
                assert r.is_error, (tool, args, text)
                assert "leads out of the vault" in text, (tool, args, text)
                texts.append(text)
            for uri in (f"papervault://paper/{alpha}/fulltext", f"papervault://paper/{beta}",
                        "papervault://paper/evilfolder", "papervault://paper/evilfolder/fulltext"):
                try:
                    r = await c.read_resource(uri)
                    texts.append(json.dumps([getattr(x, "text", "") for x in r.contents]))
                    raise AssertionError(f"{uri} was served")
                except AssertionError:
                    raise
                except Exception as exc:           # the SDK raises the server's error for a failed read
                    assert "leads out of the vault" in str(exc), (uri, str(exc))    # the reason, not a generic error
                    texts.append(str(exc))
            listed = await c.call_tool("list_papers", {})
            assert not listed.is_error
            ids = {p["id"] for p in listed.structured_content["papers"]}
            assert {alpha, linked["gamma"]} <= ids and beta not in ids and "evilfolder" not in ids
            texts.append(json.dumps(listed.structured_content))
            found = await c.call_tool("search", {"query": f"{SECRET_FT} {SECRET_NOTE} {SECRET_FOLDER}"})
            assert not found.is_error
            texts += [json.dumps(h) for h in found.structured_content["hits"]]      # (the answer repeats the query)
            # beta's full text is inside the vault: served, without its linked note
            part = await c.call_tool("read", {"paper_id": beta})
            assert not part.is_error and "merge trees" in part.structured_content["text"]
            texts.append(json.dumps(part.structured_content))
            # a paper whose files are inside the vault is still served
            ok = await c.call_tool("read", {"paper_id": linked["gamma"]})
            assert not ok.is_error and "Vector clocks" in ok.structured_content["text"]
            return texts

    texts = anyio.run(main)
    _no_secret("\n".join(texts))


def test_survey_reads_no_linked_note_or_full_text(linked):
    """The survey's reader of notes and full texts (stage 2 onwards) skips refused papers with one line each."""
    from papervault.survey.select import load_papers
    from papervault.workspace import Workspace

    ws = Workspace(linked["root"])
    papers, problems = load_papers(ws.vault, [linked["alpha"], linked["beta"], linked["gamma"], "evilfolder"])
    assert [p.id for p in papers] == [linked["gamma"]]
    assert len(problems) == 3 and all("leads out of the vault" in p and "\n" not in p for p in problems)
    _no_secret("\n".join(problems) + "".join(p.note + p.fulltext for p in papers))
