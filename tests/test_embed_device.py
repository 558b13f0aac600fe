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
    assert EmbedSettings(threads=1).batch() == 1 and EmbedSettings(threads=4).batch() == 16
    assert EmbedSettings(threads=1, batch_size=8).batch() == 8
    texts = TEXTS + ["A much longer passage about leases, quorums and reads served locally by any replica " * 6,
                     "Short."]
    one = Embedder(EmbedSettings(threads=1))
    assert one.batch_size == 1
    batched = Embedder(EmbedSettings(threads=1, batch_size=16))
    np.testing.assert_allclose(one.embed(texts), batched.embed(texts), rtol=0, atol=1e-6)
