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
