"""`[embed] device`: ONNX Runtime providers chosen by fastembed; without a CUDA provider `cuda` falls back to the
CPU with one line saying so, and gives the CPU's vectors."""

from __future__ import annotations

import logging

import numpy as np
import onnxruntime
import pytest

from papervault.config import EmbedSettings
from papervault.index.embed import CPU, CUDA, Embedder, execution_providers

TEXTS = ["Paxos replicas agree on a sequence of commands.", "Harvest and yield trade consistency for availability."]


def test_cuda_falls_back_to_cpu_in_one_line(model_dir, caplog, monkeypatch):
    if CUDA in onnxruntime.get_available_providers():
        pytest.skip("this machine has a CUDA provider: nothing falls back")
    monkeypatch.setenv("PAPERVAULT_EMBED_VECTOR_CACHE", "")    # both embedders compute their vectors
    cpu = Embedder(EmbedSettings(device="cpu"))
    with caplog.at_level(logging.WARNING, logger="papervault.index.embed"):
        cuda = Embedder(EmbedSettings(device="cuda"))
        vecs = cuda.embed(TEXTS)
    said = [r.getMessage() for r in caplog.records if "device = cuda" in r.getMessage()]
    assert len(said) == 1 and "\n" not in said[0] and "CPU" in said[0]
    assert cuda.provider == CPU and cpu.provider == CPU
    np.testing.assert_array_equal(vecs, cpu.embed(TEXTS))
    assert execution_providers("auto") == [CPU] and execution_providers("cpu") == [CPU]


def test_unknown_device_is_refused(tmp_path):
    from papervault.config import Settings
    from papervault.errors import PapervaultError

    with pytest.raises(PapervaultError) as err:
        Settings({"embed": {"device": "tpu"}})
    assert "device" in str(err.value)


def test_one_thread_embeds_a_text_per_call_with_the_vectors_of_batches(model_dir, monkeypatch):
    """`[embed] batch_size` unset: 1 on one ONNX thread, 16 on more; a set value is kept. The batch size is not
    part of the vector key, so texts of different lengths must get the same vectors whatever the batching."""
    monkeypatch.setenv("PAPERVAULT_EMBED_VECTOR_CACHE", "")
    monkeypatch.delenv("PAPERVAULT_EMBED_THREADS", raising=False)    # the suite's one thread per process
    f32 = {"precision": "float32"}
    assert EmbedSettings(threads=1, **f32).batch() == 1 and EmbedSettings(threads=4, **f32).batch() == 16
    assert EmbedSettings(threads=1, batch_size=8, **f32).batch() == 8
    texts = TEXTS + ["A much longer passage about leases, quorums and reads served locally by any replica " * 6,
                     "Short."]
    one = Embedder(EmbedSettings(threads=1, **f32))
    assert one.batch_size == 1
    batched = Embedder(EmbedSettings(threads=1, batch_size=16, **f32))
    np.testing.assert_allclose(one.embed(texts), batched.embed(texts), rtol=0, atol=1e-6)


def test_int8_embeds_each_text_alone_close_to_the_float32_vectors(model_dir, monkeypatch):
    """`[embed] precision = "int8"` (the default): the quantized model scales activations per call, so it always
    embeds one text per call, whatever batch_size says, and a text's vector is the one it gets alone. Its
    vectors stay close to the float32 model's, and the two precisions never share vectors (vector key, index
    name)."""
    from papervault.config import IndexSettings, index_name

    monkeypatch.setenv("PAPERVAULT_EMBED_VECTOR_CACHE", "")
    assert EmbedSettings().precision == "int8"
    assert EmbedSettings(threads=4).batch() == 1 and EmbedSettings(threads=4, batch_size=16).batch() == 1
    texts = TEXTS + ["A much longer passage about leases, quorums and reads served locally by any replica " * 6,
                     "Short."]
    int8 = Embedder(EmbedSettings(threads=2, batch_size=16)).embed(texts)
    alone = np.vstack([Embedder(EmbedSettings(threads=1)).embed([t]) for t in texts])
    np.testing.assert_allclose(int8, alone, rtol=0, atol=1e-6)
    f32 = Embedder(EmbedSettings(precision="float32")).embed(texts)
    cos = (int8 * f32).sum(axis=1)
    assert cos.min() > 0.97 and not np.allclose(int8, f32, atol=1e-3), cos
    assert EmbedSettings().vector_key() != EmbedSettings(precision="float32").vector_key()
    assert index_name(EmbedSettings(), IndexSettings()) != index_name(EmbedSettings(precision="float32"),
                                                                      IndexSettings())
    # an index made before the setting existed (float32, nothing recorded) keeps its name and its vectors
    assert "precision" not in EmbedSettings(precision="float32").vector_key()


def test_int8_copy_is_made_once_and_a_broken_model_is_one_line(model_dir, tmp_path):
    """The int8 copy is made once per model file into the model cache and found again; a model file the
    quantizer cannot read is an IndexMismatchError that names the float32 way out, not a traceback."""
    from papervault.errors import IndexMismatchError
    from papervault.index.quantize import int8_model_dir

    cache = tmp_path / "models"
    first = int8_model_dir(model_dir, "model.onnx", cache)
    made = (first / "model.onnx").stat().st_mtime_ns
    assert (first / "tokenizer.json").is_file() and (first / "model.onnx").stat().st_size < (
        model_dir / "model.onnx").stat().st_size / 3
    assert int8_model_dir(model_dir, "model.onnx", cache) == first
    assert (first / "model.onnx").stat().st_mtime_ns == made
    assert [p.name for p in cache.iterdir() if not p.name.startswith(".")] == [first.name]   # no temporary left
    broken = tmp_path / "broken"
    broken.mkdir()
    (broken / "model.onnx").write_bytes(b"not an onnx graph")
    with pytest.raises(IndexMismatchError, match="cannot make the int8 embedding model") as err:
        int8_model_dir(broken, "model.onnx", cache)
    assert 'precision = "float32"' in err.value.fix and "\n" not in err.value.message
    assert [p.name for p in cache.iterdir() if not p.name.startswith(".")] == [first.name]
