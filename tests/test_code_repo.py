"""add-repo end to end on real git repositories: index, incremental re-runs, paper links, code note, search."""

from __future__ import annotations

import shutil

import git
import pytest
from click.testing import CliRunner

from papervault.chunking.code import CHUNKER_VERSION
from papervault.errors import IndexMismatchError, LockedError, NotFoundError, SourceError
from papervault.index.code import CodeIndex, CodeSearchError, CodeSearcher, search_code
from papervault.index.embed import Embedder
from papervault.models import PaperMeta, ParsedPaper
from papervault.add_repo import add_repo
from papervault.vault import frontmatter
from papervault.workspace import Workspace
from support_code import FILES, commit_all, make_repo

REMOTE = "https://github.com/Example/sample.git"


def _paper(ws: Workspace, pid: str, title: str, text: str) -> None:
    ws.vault.write_note(PaperMeta(id=pid, title=title), f"# {title}\n")
    ws.vault.write_fulltext(pid, ParsedPaper(markdown=f'<a id="page-1"></a>\n\n{text}\n', pages=1))
    ws.vault.commit(f"add {pid}")


@pytest.fixture(scope="module")
def embedder(model_dir):
    return Embedder(Workspace("/nonexistent").settings.embed)


@pytest.fixture(scope="module")
def indexed(tmp_path_factory, embedder):
    """One workspace with the sample repository added once; tests here only read it."""
    base = tmp_path_factory.mktemp("code")
    repo = make_repo(base / "sample", remote=REMOTE)
    ws, _ = Workspace.init(base / "ws")
    _paper(ws, "doe2024sample", "Sample: fast training",
           "Our code is available at https://github.com/example/sample. It reproduces every table.")
    _paper(ws, "roe2023other", "Another paper", "Code at https://github.com/someone/else.")
    _paper(ws, "poe2022manual", "A paper linked by hand", "No code link in this text.")
    report = add_repo(ws, str(base / "sample"), papers=["poe2022manual"], embedder=embedder)
    return ws, repo, report


def test_add_repo_indexes_every_language_and_records_the_commit(indexed):
    ws, repo, report = indexed
    assert report.repo == "sample" and report.commit == repo.head.commit.hexsha
    # README.md and the binary are not code files; the 10 others are
    assert report.files == 10 and len(report.added) == 10 and report.embedded == report.chunks
    rows = CodeIndex(ws).rows("sample")
    langs = {r["language"] for r in rows}
    assert {"python", "c", "go", "yaml", "toml", "make"} <= langs
    kinds = {r["kind"] for r in rows}
    assert {"repository", "file", "function", "class", "module", "test", "config", "target"} <= kinds
    assert all(r["commit"] == report.commit for r in rows)
    saxpy = next(r for r in rows if r["symbol"] == "saxpy" and r["kind"] == "function")
    assert (saxpy["path"], saxpy["start_line"], saxpy["end_line"]) == ("kernels/saxpy.c", 6, 11)
    assert saxpy["callers"] == ["kernels/saxpy.c::normalise"]


def test_papers_are_linked_from_their_text_and_by_hand(indexed):
    ws, _, report = indexed
    got = {(p["paper_id"], p["how"]) for p in report.papers}
    assert got == {("doe2024sample", "fulltext"), ("poe2022manual", "explicit")}
    links = CodeIndex(ws).links(repo="sample")
    assert {(l["paper_id"], l["how"]) for l in links} == got
    assert next(l for l in links if l["how"] == "fulltext")["evidence"] == "https://github.com/example/sample"
    assert ws.vault.read_meta("doe2024sample").code == ["sample"]
    assert ws.vault.read_meta("poe2022manual").code == ["sample"]
    assert ws.vault.read_meta("roe2023other").code == []


def test_code_note_and_one_vault_commit(indexed):
    ws, repo, report = indexed
    assert report.note == "code/sample.md"
    meta, body = frontmatter.split((ws.vault_dir / report.note).read_text())
    assert meta["commit"] == repo.head.commit.hexsha and meta["papers"] == ["doe2024sample", "poe2022manual"]
    assert "Sample implements a tiny training loop" in body
    assert "[Sample: fast training](../papers/doe2024sample/note.md)" in body
    assert "`sample-train` -> sample.train:main (pyproject.toml)" in body
    assert "| python | 4 |" in body and "kernels/ (2 files)" in body and "- `Makefile`" in body
    last = ws.vault.history(limit=1)[0]
    assert last["sha"] == report.vault_commit
    assert last["message"].startswith("add-repo: sample @ ") and "10 added" in last["message"]
    changed = ws.vault.repo.git.show("--name-only", "--format=", report.vault_commit).split()
    assert sorted(changed) == ["code/sample.md", "papers/doe2024sample/note.md", "papers/poe2022manual/note.md"]
    assert ws.vault.is_clean()


@pytest.mark.parametrize("query, path, symbol", [
    ("cosine learning rate schedule", "sample/optim.py", "cosine_schedule"),
    ("y = a * x + y over floats", "kernels/saxpy.c", "saxpy"),
    ("HTTP server answering prediction requests", "server/main.go", "Server"),
    ("mean squared error gradient", "sample/train.py", "compute_gradients"),
    ("learning_rate warmup steps", "configs/base.yaml", "base.yaml"),
])
def test_search_finds_the_right_chunk(indexed, embedder, query, path, symbol):
    ws, _, _ = indexed
    hits = CodeSearcher(ws, embedder).search(query, limit=3)
    assert (hits[0]["path"], hits[0]["symbol"]) == (path, symbol), [h["location"] for h in hits]
    assert hits[0]["location"] == f"{path}:{hits[0]['start_line']}-{hits[0]['end_line']}"


def test_search_filters_and_budget_expansion(indexed, embedder):
    ws, _, _ = indexed
    s = CodeSearcher(ws, embedder)
    hits = s.search("normalise a batch by its mean", language="c", kind="function", limit=5)
    assert hits and all(h["language"] == "c" and h["kind"] == "function" for h in hits)
    assert hits[0]["symbol"] in ("normalise", "mean")
    top = s.search("compute gradients for one training epoch", kind="function", limit=1, budget=400)[0]
    assert top["symbol"] == "train_epoch"
    related = {(c["relation"], c["symbol"]) for c in top["context"]}
    assert ("callee", "compute_gradients") in related and ("caller", "main") in related
    assert all(c["path"] and c["lines"] for c in top["context"])
    small = s.search("compute gradients for one training epoch", kind="function", limit=1, budget=60)[0]
    assert len(small["context"]) < len(top["context"])
    with pytest.raises(CodeSearchError, match="unknown kind"):
        s.search("x", kind="method")
    assert search_code(ws, "saxpy", repo="nope") == []


def test_rerun_updates_only_changed_files(tmp_path, embedder):
    repo = make_repo(tmp_path / "sample", remote=REMOTE)
    ws, _ = Workspace.init(tmp_path / "ws")
    first = add_repo(ws, str(tmp_path / "sample"), embedder=embedder)
    index = CodeIndex(ws, embedder)
    before = {r["id"]: r for r in index.rows("sample")}

    again = add_repo(ws, str(tmp_path / "sample"), embedder=embedder)
    assert (again.embedded, again.rows_written, again.added, again.changed) == (0, 0, [], [])
    assert again.unchanged == first.files and again.vault_commit is None

    root = tmp_path / "sample"
    (root / "sample/train.py").write_text(FILES["sample/train.py"].replace(
        "def compute_gradients(params, batch):\n    \"\"\"Mean squared error gradient of a linear model.\"\"\"",
        "def compute_gradients(params, batch):\n    \"\"\"Absolute error subgradient of a linear model.\"\"\""))
    (root / "server/main.go").unlink()
    (root / "sample/data.py").write_text('"""Data."""\n\n\ndef load_batches(path):\n    """Read batches."""\n'
                                         '    return compute_gradients([], [])\n')
    sha = commit_all(repo, "change train, drop server, add data")
    third = add_repo(ws, str(root), embedder=embedder)
    assert third.changed == ["sample/train.py"] and third.removed == ["server/main.go"]
    assert third.added == ["sample/data.py"] and third.unchanged == first.files - 2
    after = {r["id"]: r for r in index.rows("sample")}
    # only the changed and added files (and the repository summary) were embedded again
    embedded_paths = {r["path"] for i, r in after.items() if i not in before or r["embed_hash"] != before[i]["embed_hash"]}
    assert embedded_paths == {"sample/train.py", "sample/data.py", ""}
    assert not any(r["path"] == "server/main.go" for r in after.values())
    untouched = next(r for r in after.values() if r["symbol"] == "saxpy" and r["kind"] == "function")
    assert untouched["commit"] == first.commit                 # unchanged file: row not rewritten
    assert next(r for r in after.values() if r["symbol"] == "compute_gradients")["commit"] == sha
    # a new caller in a new file updates the callers of a function in a changed file
    cg = next(r for r in after.values() if r["symbol"] == "compute_gradients")
    assert "sample/data.py::load_batches" in list(cg["callers"])
    hits = search_code(ws, "absolute error subgradient", limit=1)
    assert hits[0]["symbol"] == "compute_gradients" and hits[0]["commit"] == sha
    assert "server/main.go" not in ws.vault.code_dir.joinpath("sample.md").read_text()


def test_git_url_is_cloned_then_fetched(tmp_path, embedder):
    origin = make_repo(tmp_path / "origin", {"lib.py": "def alpha():\n    return 1\n"})
    url = (tmp_path / "origin").as_uri()            # file:// URL: a real clone, no network
    ws, _ = Workspace.init(tmp_path / "ws")
    r1 = add_repo(ws, url, embedder=embedder)
    clone = ws.state_dir / "repos" / "origin"
    assert (clone / ".git").is_dir() and r1.commit == origin.head.commit.hexsha and r1.source == url
    (tmp_path / "origin/lib.py").write_text("def alpha():\n    return 1\n\n\ndef beta():\n    return alpha()\n")
    sha = commit_all(origin, "beta")
    r2 = add_repo(ws, url, embedder=embedder)
    assert r2.commit == sha and r2.changed == ["lib.py"]
    assert git.Repo(clone).head.commit.hexsha == sha
    assert search_code(ws, "beta", kind="function", limit=1)[0]["callees"] == ["lib.py::alpha"]
    with pytest.raises(SourceError, match="already has a repository 'origin'"):
        other = make_repo(tmp_path / "x" / "origin", {"a.py": "A = 1\n"})
        add_repo(ws, str(tmp_path / "x" / "origin"), embedder=embedder)
    with pytest.raises(SourceError, match="cannot clone"):
        add_repo(ws, (tmp_path / "missing").as_uri(), embedder=embedder)


def test_errors_a_user_can_hit(tmp_path, embedder):
    ws, _ = Workspace.init(tmp_path / "ws")
    make_repo(tmp_path / "r", {"a.py": "def f():\n    pass\n"})
    with pytest.raises(NotFoundError, match="no paper 'nobody2020x'"):
        add_repo(ws, str(tmp_path / "r"), papers=["nobody2020x"], embedder=embedder)
    with pytest.raises(SourceError, match="no such folder"):
        add_repo(ws, str(tmp_path / "absent"), embedder=embedder)
    with ws.write_lock("index"):
        with pytest.raises(LockedError):
            add_repo(ws, str(tmp_path / "r"), embedder=embedder)
    with pytest.raises(CodeSearchError, match="add-repo"):
        search_code(ws, "anything")


def test_model_mismatch_names_the_rebuild(tmp_path, embedder):
    ws, _ = Workspace.init(tmp_path / "ws")
    make_repo(tmp_path / "r", {"a.py": "def f():\n    pass\n"})
    add_repo(ws, str(tmp_path / "r"), embedder=embedder)
    other = Embedder(ws.settings.embed)
    other.model_name = "BAAI/bge-small-en-v1.5"
    with pytest.raises(IndexMismatchError, match="add-repo PATH --rebuild"):
        CodeSearcher(ws, other)
    # --rebuild with the current model over a table it did not build recreates it
    report = add_repo(ws, str(tmp_path / "r"), rebuild=True, embedder=embedder)
    assert report.embedded == report.chunks


def test_plain_folder_and_hand_edited_note(tmp_path, embedder):
    folder = tmp_path / "plain"
    folder.mkdir()
    (folder / "tool.sh").write_text("#!/bin/sh\nrun() { echo hi; }\nrun\n")
    ws, _ = Workspace.init(tmp_path / "ws")
    r1 = add_repo(ws, str(folder), embedder=embedder)
    assert r1.commit == "" and r1.files == 1
    note = ws.vault.code_dir / "plain.md"
    note.write_text(note.read_text() + "\nMy own remark.\n")
    (folder / "more.sh").write_text("hello() { echo hello; }\n")
    r2 = add_repo(ws, str(folder), embedder=embedder)
    assert r2.note == "code/plain.new.md" and "My own remark." in note.read_text()


def test_cli_add_repo(tmp_path, embedder, monkeypatch):
    from papervault.cli import cli

    ws, _ = Workspace.init(tmp_path / "ws")
    make_repo(tmp_path / "r", {"a.py": "def f():\n    pass\n"})
    monkeypatch.setenv("PAPERVAULT_WORKSPACE", str(ws.root))
    result = CliRunner().invoke(cli, ["add-repo", str(tmp_path / "r")])
    assert result.exit_code == 0, result.output
    assert result.output.startswith("r @ ") and "note: vault/code/r.md" in result.output
    result = CliRunner().invoke(cli, ["add-repo", str(tmp_path / "r"), "--paper", "zz2020none"])
    assert result.exit_code != 0 and "no paper 'zz2020none'" in str(result.exception)


def _pdf(path, title: str, body: str):
    """A one-page PDF made with PyMuPDF: a title line, then the body text."""
    import pymupdf

    doc = pymupdf.open()
    page = doc.new_page()
    page.insert_text((72, 90), title, fontsize=16)
    page.insert_textbox(pymupdf.Rect(72, 130, 540, 780), body, fontsize=10)
    doc.set_metadata({"title": title, "author": "Ada Tester"})
    doc.save(path)
    doc.close()
    return path


def test_paper_added_after_the_repository_is_linked_to_it(tmp_path, embedder):
    import json

    from papervault.cli import cli

    make_repo(tmp_path / "tinyrepo", {"README.md": "# tinyrepo\n\nTiny implements one solver.\n",
                                      "tiny.py": "def solve(x):\n    \"\"\"Solve it.\"\"\"\n    return x\n"},
              remote="https://github.com/example/tinyrepo")
    ws, _ = Workspace.init(tmp_path / "ws")
    first = add_repo(ws, str(tmp_path / "tinyrepo"), embedder=embedder)
    assert first.papers == [] and "_No paper is linked yet" in (ws.vault.code_dir / "tinyrepo.md").read_text()

    pdfs = tmp_path / "pdfs"
    pdfs.mkdir()
    _pdf(pdfs / "solver.pdf", "A Tiny Solver for Everything",
         "Abstract. We present a tiny solver. Our code is at github.com/example/tinyrepo and reproduces "
         "every experiment of this paper.")
    _pdf(pdfs / "other.pdf", "Unrelated Results on Sorting",
         "Abstract. We study sorting networks. No code accompanies this paper.")
    run = CliRunner().invoke(cli, ["add", str(pdfs), "--json", "--workspace", str(ws.root)])
    assert run.exit_code == 0, run.output
    out = json.loads(run.output)
    assert len(out["added"]) == 2 and out["problems"] == [] and out["warnings"] == []
    titles = {pid: ws.vault.read_meta(pid).title for pid in out["added"]}
    solver = next(pid for pid, t in titles.items() if t.startswith("A Tiny Solver"))
    other = next(pid for pid in out["added"] if pid != solver)
    assert out["code_links"] == [{"paper_id": solver, "repo": "tinyrepo", "how": "fulltext",
                                  "evidence": "https://github.com/example/tinyrepo"}]

    # the link is in the links table and in the paper's frontmatter, as `papervault show --json` prints it
    links = CodeIndex(ws).links(repo="tinyrepo")
    assert [(l["paper_id"], l["how"], l["evidence"]) for l in links] == [
        (solver, "fulltext", "https://github.com/example/tinyrepo")]
    shown = json.loads(CliRunner().invoke(cli, ["show", solver, "--json", "--workspace", str(ws.root)]).output)
    assert shown["meta"]["code"] == ["tinyrepo"]
    shown = json.loads(CliRunner().invoke(cli, ["show", other, "--json", "--workspace", str(ws.root)]).output)
    assert shown["meta"].get("code", []) == []
    assert CodeIndex(ws).links(paper_id=other) == []

    # the code note lists the new paper, in the same vault commit as the papers
    meta, body = frontmatter.split((ws.vault.code_dir / "tinyrepo.md").read_text())
    assert meta["papers"] == [solver]
    assert f"[A Tiny Solver for Everything](../papers/{solver}/note.md) `[@{solver}]` (fulltext)" in body
    changed = ws.vault.repo.git.show("--name-only", "--format=", out["commit"]).split()
    assert "code/tinyrepo.md" in changed and f"papers/{solver}/note.md" in changed
    assert f"linked to code: {solver} -> tinyrepo" in ws.vault.history(limit=1)[0]["message"]
    assert ws.vault.is_clean()

    # add-repo again renders the very same note: nothing to commit
    again = add_repo(ws, str(tmp_path / "tinyrepo"), embedder=embedder)
    assert again.vault_commit is None and {p["paper_id"] for p in again.papers} == {solver}


def test_repository_indexed_before_remotes_were_recorded_is_not_linked(tmp_path, embedder):
    from papervault.ingest import add
    from papervault.index.code import REPOS

    make_repo(tmp_path / "tinyrepo", {"tiny.py": "def solve(x):\n    return x\n"},
              remote="git@github.com:Example/TinyRepo.git")
    ws, _ = Workspace.init(tmp_path / "ws")
    add_repo(ws, str(tmp_path / "tinyrepo"), embedder=embedder)
    index = CodeIndex(ws)
    assert index.known_remotes() == {"tinyrepo": {"github.com/example/tinyrepo"}}
    index.db.drop_table(REPOS)           # a workspace indexed before: no remotes known
    note = (ws.vault.code_dir / "tinyrepo.md").read_text()

    pdf = _pdf(tmp_path / "solver.pdf", "A Tiny Solver", "Code: https://github.com/example/tinyrepo.")
    report = add(ws, [str(pdf)])
    assert len(report.added) == 1 and report.code_links == [] and report.warnings == []
    assert CodeIndex(ws).links() == [] and (ws.vault.code_dir / "tinyrepo.md").read_text() == note
    # add-repo records the remotes again and then links the paper from its text
    again = add_repo(ws, str(tmp_path / "tinyrepo"), embedder=embedder)
    assert [(p["paper_id"], p["how"]) for p in again.papers] == [(report.added[0], "fulltext")]
    assert CodeIndex(ws).known_remotes() == {"tinyrepo": {"github.com/example/tinyrepo"}}


# --- a chunker or token-limit change re-chunks, reusing vectors -------------------------------------------------

NEXT_CHUNKER = " # (as the next chunker renders it)"


def _next_chunker():
    """A chunker whose output differs from today's as a next version's would: test chunks get other text (new
    embeddings), and functions start a line earlier (new ids, the same embedded text)."""
    from papervault.chunking.code import chunk_file

    def chunker(*args, **kwargs):
        chunks = chunk_file(*args, **kwargs)
        for c in chunks:
            if c.kind == "test":
                c.text += NEXT_CHUNKER
            elif c.kind == "function" and c.start_line > 1:
                c.start_line -= 1
        return chunks

    return chunker


def _two_repos(tmp_path, embedder):
    """A workspace with a folder repository and a cloned one (file:// URL: a real clone, no network)."""
    make_repo(tmp_path / "sample", remote=REMOTE)
    origin = make_repo(tmp_path / "origin", {"lib.py": "def alpha():\n    return 1\n\n\ndef test_alpha():\n"
                                                       "    assert alpha() == 1\n"})
    ws, _ = Workspace.init(tmp_path / "ws")
    add_repo(ws, str(tmp_path / "sample"), embedder=embedder)
    add_repo(ws, (tmp_path / "origin").as_uri(), embedder=embedder)
    return ws, origin


def _table(ws, embedder) -> dict[str, dict]:
    index = CodeIndex(ws, embedder)
    return {r["id"]: r for repo in index.repos() for r in index.rows(repo, with_vectors=True)}


def _assert_same_rows(got: dict[str, dict], fresh: dict[str, dict]) -> None:
    import numpy as np

    assert set(got) == set(fresh)
    for i, row in fresh.items():
        assert {k: v for k, v in got[i].items() if k != "vector"} == {k: v for k, v in row.items() if k != "vector"}
        assert np.allclose(got[i]["vector"], row["vector"], atol=1e-5)


def test_a_chunker_change_rechunks_every_repository_and_reuses_vectors(tmp_path, embedder, monkeypatch):
    """Another chunker is no rebuild: search keeps working, the next `papervault index` re-chunks every
    repository from its checkout in one line, embeds only the texts the chunker changed, and equals a fresh
    build; the version is recorded, so the run after does nothing."""
    import numpy as np

    import papervault.index.code as code_index
    import papervault.add_repo as repo_source
    from papervault.cli import cli

    ws, origin = _two_repos(tmp_path, embedder)
    before = _table(ws, embedder)
    (tmp_path / "origin/lib.py").write_text("def gamma():\n    return 3\n")
    commit_all(origin, "not fetched by a re-chunk")      # re-chunking reads the clone as indexed

    monkeypatch.setattr(code_index, "CHUNKER_VERSION", "code-999")
    monkeypatch.setattr(repo_source, "chunk_file", _next_chunker())
    index = CodeIndex(ws, embedder)
    why = index.rechunk_needed()
    assert why and "code-999" in why
    assert search_code(ws, "saxpy", kind="function", limit=1)[0]["symbol"] == "saxpy"   # searched as built

    monkeypatch.setenv("PAPERVAULT_WORKSPACE", str(ws.root))
    result = CliRunner().invoke(cli, ["index"])
    assert result.exit_code == 0, result.output
    lines = [l for l in result.output.splitlines() if l.startswith("code index:")]
    assert len(lines) == 1 and "re-chunked 2 repositories" in lines[0] and f"chunker {CHUNKER_VERSION}" in lines[0]
    after = _table(ws, embedder)
    old_vectors = {r["embed_hash"]: r["vector"] for r in before.values()}
    new_texts = [r for r in after.values() if r["embed_hash"] not in old_vectors]
    tests = [r for r in after.values() if r["kind"] == "test"]
    assert tests and all(r["text"].endswith(NEXT_CHUNKER) for r in tests)
    assert {r["id"] for r in tests} <= {r["id"] for r in new_texts}
    assert f"{len(new_texts)} chunks embedded, {len(after) - len(new_texts)} reused" in lines[0]
    moved = [r for r in after.values() if r["kind"] == "function" and r["id"] not in before]
    assert moved, "the next chunker gave functions new ids"
    for r in after.values():                             # a reused vector is the stored one, bit for bit
        if r["embed_hash"] in old_vectors:
            assert np.array_equal(r["vector"], old_vectors[r["embed_hash"]])
    assert not any(r["symbol"] == "gamma" for r in after.values())
    assert CodeIndex(ws, embedder).rechunk_needed() is None

    fresh_ws, _ = Workspace.init(tmp_path / "fresh")
    add_repo(fresh_ws, str(tmp_path / "sample"), embedder=embedder)
    add_repo(fresh_ws, str(tmp_path / "ws/.papervault/repos/origin"), name="origin", embedder=embedder)
    fresh = _table(fresh_ws, embedder)
    _assert_same_rows({i: r for i, r in after.items() if r["repo"] == "sample"},
                      {i: r for i, r in fresh.items() if r["repo"] == "sample"})

    again = CliRunner().invoke(cli, ["index"])
    assert again.exit_code == 0 and "code index:" not in again.output
    report = add_repo(ws, str(tmp_path / "sample"), embedder=embedder)
    assert report.rechunked is None and report.embedded == 0


def test_a_token_limit_change_re_embeds_only_the_texts_it_cuts(tmp_path, embedder, monkeypatch):
    """`[embed] max_tokens` changes what a long text's vector is: `add-repo` re-chunks every repository first,
    re-embeds exactly the texts either limit cuts, keeps the others' vectors, and equals a fresh build."""
    import numpy as np

    ws, _ = _two_repos(tmp_path, embedder)
    before = _table(ws, embedder)
    monkeypatch.setenv("PAPERVAULT_EMBED_MAX_TOKENS", "48")
    short = Embedder(Workspace(tmp_path / "ws").settings.embed)
    assert short.settings.max_tokens == 48
    assert "[embed] max_tokens 256" in CodeIndex(ws, short).rechunk_needed()

    report = add_repo(ws, str(tmp_path / "sample"), embedder=short)
    assert report.rechunked and "re-chunked 1 repository" in report.rechunked    # origin; sample below
    after = _table(ws, short)
    assert set(after) == set(before)
    kept = [i for i in after if np.array_equal(after[i]["vector"], before[i]["vector"])]
    assert 0 < len(kept) < len(after)
    # what was re-embedded is what the shorter limit cuts: each of those vectors did change
    cut = [i for i in after if i not in kept]
    assert all(not np.allclose(after[i]["vector"], before[i]["vector"], atol=1e-4) for i in cut)
    assert CodeIndex(ws, short).rechunk_needed() is None

    fresh_ws, _ = Workspace.init(tmp_path / "fresh")
    add_repo(fresh_ws, str(tmp_path / "sample"), embedder=short)
    add_repo(fresh_ws, str(tmp_path / "ws/.papervault/repos/origin"), name="origin", embedder=short)
    _assert_same_rows({i: r for i, r in after.items() if r["repo"] == "sample"},
                      {i: r for i, r in _table(fresh_ws, short).items() if r["repo"] == "sample"})
