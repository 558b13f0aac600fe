"""Shared fixtures: every test runs in its own workspace under tmp_path (PAPERVAULT_WORKSPACE), offline."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
SHARED = Path(os.environ.get("PAPERVAULT_SHARED", ROOT.parent / "shared")).resolve()
CORPUS = SHARED / "corpus" / "pdfs"
MODEL_DIR = SHARED / "models" / "all-MiniLM-L6-v2-onnx"
SCANNED = CORPUS / "garbage_collection_the_lisp_ii_garbage_collector.pdf"


def pytest_configure(config):
    # Every test uses the small local model, never a hub download.
    if MODEL_DIR.is_dir():
        os.environ.setdefault("PAPERVAULT_EMBED_MODEL_PATH", str(MODEL_DIR))
        os.environ.setdefault("PAPERVAULT_EMBED_MODEL", "sentence-transformers/all-MiniLM-L6-v2")
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    os.environ.setdefault("DO_NOT_TRACK", "1")
    # Prefect keeps its database in one per-session home, so tests never touch ~/.prefect.
    os.environ.setdefault("PREFECT_HOME", str(ROOT / ".pytest_cache" / "prefect-home"))
    # Prefect creates its home without parents; on a fresh clone .pytest_cache does not exist yet.
    Path(os.environ["PREFECT_HOME"]).mkdir(parents=True, exist_ok=True)
    os.environ.setdefault("PREFECT_SERVER_EPHEMERAL_STARTUP_TIMEOUT_SECONDS", "180")
    os.environ.setdefault("PREFECT_SERVER_ANALYTICS_ENABLED", "false")
    os.environ.setdefault("PREFECT_LOGGING_LEVEL", "WARNING")


def _require(path: Path, what: str) -> Path:
    if not path.exists():
        pytest.skip(f"{what} not found at {path}: these tests need ../shared beside the checkout")
    return path


@pytest.fixture(scope="session")
def corpus_dir() -> Path:
    """The 16 real papers of ../shared/corpus/pdfs (skips, saying so, when the folder is absent)."""
    return _require(CORPUS, "the shared corpus")


@pytest.fixture(scope="session")
def model_dir() -> Path:
    """The local all-MiniLM-L6-v2 ONNX folder of ../shared/models."""
    return _require(MODEL_DIR, "the shared embedding model")


@pytest.fixture(autouse=True)
def workspace_env(tmp_path, monkeypatch) -> Path:
    """Moves all state into tmp_path: the workspace every command uses unless told otherwise."""
    ws = tmp_path / "ws"
    monkeypatch.setenv("PAPERVAULT_WORKSPACE", str(ws))
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    (tmp_path / "home").mkdir()
    for var in ("ANTHROPIC_API_KEY", "ANTHROPIC_BASE_URL", "OPENAI_API_KEY", "OPENAI_BASE_URL"):
        monkeypatch.delenv(var, raising=False)
    return ws


def pytest_sessionstart(session):
    tally = ROOT / "test-artifacts" / "fault-tally.json"
    if tally.exists():
        tally.unlink()


def pytest_terminal_summary(terminalreporter):
    """The fault-injection tally: faults injected, runs that recovered, items lost."""
    import json

    tally = ROOT / "test-artifacts" / "fault-tally.json"
    if not tally.exists():
        return
    rows = json.loads(tally.read_text())
    injected = len(rows)
    recovered = sum(1 for r in rows if r.get("recovered"))
    lost = sum(r.get("lost", 0) for r in rows)
    dup = sum(r.get("duplicated", 0) for r in rows)
    terminalreporter.write_sep("-", "fault injection")
    terminalreporter.write_line(f"faults injected: {injected} (SIGKILLs that hit a running command: "
                                f"{sum(1 for r in rows if r.get('killed'))}), runs recovered: {recovered}, "
                                f"items lost: {lost}, items duplicated: {dup}")


@pytest.fixture(autouse=True, scope="session")
def shared_parse_cache(tmp_path_factory):
    """One parse cache for the whole run: each corpus PDF is parsed once, however many workspaces import it.

    Tests of the parser itself call parse_pdf directly and never read this cache.
    """
    path = tmp_path_factory.mktemp("parse-cache")
    old = os.environ.get("PAPERVAULT_PARSE_CACHE_DIR")
    os.environ["PAPERVAULT_PARSE_CACHE_DIR"] = str(path)
    yield path
    if old is None:
        os.environ.pop("PAPERVAULT_PARSE_CACHE_DIR", None)
    else:
        os.environ["PAPERVAULT_PARSE_CACHE_DIR"] = old


def parse_once(pdf: Path):
    """Parse a corpus PDF through the session's shared parse cache (support modules build vaults with it)."""
    from papervault.parse.batch import parse_cached

    cache = os.environ.get("PAPERVAULT_PARSE_CACHE_DIR")
    return parse_cached(Path(pdf), None, Path(cache) if cache else None)
