"""Shared fixtures: every test runs in its own workspace under tmp_path (PAPERVAULT_WORKSPACE), offline.

Fixtures built once per session, for every test module to reuse (the suite runs in minutes because of them):

The suite runs in parallel (pytest-xdist, `make test`): what is built once is built once for ALL workers, under
a file lock in the run's common temporary folder (`shared_tmp`), and then only read.

- `corpus_dir`, `model_dir`: the shared corpus PDFs and the local embedding model (skip when absent).
- `shared_parse_cache` (autouse): one parse cache for the run; CLI subprocesses inherit it through
  PAPERVAULT_PARSE_CACHE_DIR, so each corpus PDF is parsed once, whichever test asks first. `parse_once(pdf)`
  parses through it (the project's parser; an error fails the test).
- `shared_vector_cache` (autouse): one vector cache for the run (`[embed] vector_cache`), so a text is embedded
  once whichever workspace indexes it first; `shared_model_cache` (autouse): one `[embed] cache_dir`, kept
  between runs in .pytest_cache, so the int8 copy of the model is made once per checkout.
- Two tiers: tests are marked `slow` by the fixtures they take (SLOW_FIXTURES) and a short list (SLOW_TESTS);
  `make check` runs the others (`-m "not slow"`), with the multilingual space off unless a test asks in another
  language (`english_only`). `make test` runs them all.
- `corpus_added`: the 16 corpus papers (the scanned one included) added through the CLI, once; not indexed.
  `corpus_workspace`: a copy of it indexed over the papers the searches ask about (CORPUS_INDEXED), once
  (English vectors only). Both are read-only: their vaults must be unchanged at the end of the session. A test
  that writes (a survey, a site build) takes `corpus_added_copy` or `corpus_workspace_copy`, a private copy.
- `prefect_api`: one Prefect API server for the run, shared by the test processes (workers), started by the
  first test that needs it, on 127.0.0.1. It sets PREFECT_API_URL, so flows run
  in this process and in CLI subprocesses all use it instead of starting a temporary server each.
- `cli_run(args)`: the CLI in this process (click's CliRunner), for tests that check what a command prints
  rather than how its process behaves; it saves a Python start and a model load per call.
"""

from __future__ import annotations

import contextlib
import os
import re
import shutil
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
SHARED = Path(os.environ.get("PAPERVAULT_SHARED", ROOT.parent / "shared")).resolve()
CORPUS = SHARED / "corpus" / "pdfs"
MODEL_DIR = SHARED / "models" / "all-MiniLM-L6-v2-onnx"
SCANNED = CORPUS / "garbage_collection_the_lisp_ii_garbage_collector.pdf"


def pytest_configure(config):
    # The MCP SDK's stdio client binds its server's stderr (`errlog=sys.stderr`) when `mcp.client.stdio` is first
    # imported. Import it here, while sys.stderr is the test process's own: were the first import inside a
    # CliRunner invocation (`papervault mcp ...` imports the SDK), every later stdio client in that process would
    # hand the server a closed in-memory stream ("fileno").
    import mcp.client.stdio  # noqa: F401

    # Every test uses the small local model, never a hub download.
    if MODEL_DIR.is_dir():
        os.environ.setdefault("PAPERVAULT_EMBED_MODEL_PATH", str(MODEL_DIR))
        os.environ.setdefault("PAPERVAULT_EMBED_MODEL", "sentence-transformers/all-MiniLM-L6-v2")
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    # One ONNX Runtime thread per embedding process: the parallel run has more test processes than cores, and a
    # second thread per model mostly spins on a core another process needs (measured: 20-40% more CPU for
    # bit-identical vectors under that load), and so one text per model call (`[embed] batch_size` unset: about
    # 30% less CPU than batches of 16 on one thread). CLI subprocesses and Dask workers inherit it.
    os.environ.setdefault("PAPERVAULT_EMBED_THREADS", "1")
    # `papervault index` leaves the paragraphs to a background process by default ([index] background_fill), so a
    # test's searches would see a state that moves under them: the suite indexes in the foreground (the same
    # vectors, sooner), and tests/test_background_fill.py runs the background fill itself.
    os.environ.setdefault("PAPERVAULT_INDEX_BACKGROUND_FILL", "false")
    # Likewise `add` reads a large folder by its first pass and parses it fully in a detached worker ([parse]
    # first_pass = "auto"): the suite parses in one pass (the same vault, sooner), and tests/test_arrival.py turns
    # the first pass and its worker on itself.
    os.environ.setdefault("PAPERVAULT_PARSE_FIRST_PASS", "false")
    os.environ.setdefault("DO_NOT_TRACK", "1")
    # Prefect keeps its database in one home per test process (xdist worker), so tests never touch ~/.prefect
    # and parallel workers never share one SQLite file.
    worker = os.environ.get("PYTEST_XDIST_WORKER", "main")
    os.environ.setdefault("PREFECT_HOME", str(ROOT / ".pytest_cache" / f"prefect-home-{worker}"))
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


# The tests that ask in another language (or check the multilingual space itself): `make check` keeps that space
# on for them only (see english_only).
MULTILINGUAL_TESTS = {"test_crosslingual.py", "test_vector_cache.py::test_the_multilingual_space_uses_the_cache"}


@pytest.fixture(autouse=True)
def english_only(request, monkeypatch):
    """In `make check` (PAPERVAULT_TEST_TIER=check), the multilingual vector space is off unless the test is in
    MULTILINGUAL_TESTS: a test that asks nothing in another language embeds one space, not two. `make test`
    keeps the default (both spaces on) everywhere."""
    item = request.node
    test = f"{item.path.name}::{getattr(item, 'originalname', None) or item.name}"
    if os.environ.get("PAPERVAULT_TEST_TIER") == "check" and not {item.path.name, test} & MULTILINGUAL_TESTS:
        monkeypatch.setenv("PAPERVAULT_EMBED_MULTILINGUAL", "false")


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


# The test files that take longest (a minute or more on two cores), longest first. They are collected first so
# that the parallel run (`--dist loadfile`: a file stays on one process) starts them first, rather than finding
# one of them left at the end while the other processes have nothing more to do.
SLOW_FILES = ["test_e2e.py", "test_faults.py", "test_survey_select.py", "test_ingest_flow.py", "test_everyday.py",
              "test_survey_flow.py", "test_crosslingual.py", "test_deploy.py",
              "test_agents_corpus.py", "test_pdfstore.py", "test_index.py", "test_parse.py", "test_index_windows.py",
              "test_mcp.py",
              "test_site_hostile.py", "test_agents_claude.py"]


# The two tiers (docs/architecture.md, "Two test tiers"): `make check` runs `pytest -m "not slow"` after every
# change, `make test` (CI) runs everything. A test is `slow` when it takes one of these fixtures, so that a new
# test on them is marked without anyone remembering to; the reason says what makes the fixture slow.
SLOW_FIXTURES = {
    "corpus_dir": "parses real corpus PDFs (seconds each) or builds a workspace from them",
    "corpus_added": "adds the whole corpus through the CLI, in a subprocess",
    "corpus_workspace": "indexes ten corpus papers",
    "corpus_added_copy": "copies the corpus workspace",
    "corpus_workspace_copy": "copies the indexed corpus workspace",
    "prefect_api": "starts a Prefect API server; the test runs flows",
    "worker": "starts a Prefect worker (tests/test_deploy.py)",
    "make_demo": "runs `make demo` in a fresh virtual environment",
    "http_server": "starts the MCP server over HTTP in a subprocess",
    "s3_endpoint": "starts an S3 server (moto) in a subprocess",
    "browser": "launches Chromium",
    "text_ws": "OCRs a scanned page (tests/test_text_layers.py)",
}
# Slow tests that take none of those fixtures, each for one of the same reasons: they start a `papervault` (or
# other) process, a server or Chromium themselves, OCR a page, or measure memory at scale. "file.py" marks a whole
# file, "file.py::test" one test (every parametrisation).
SLOW_TESTS = {
    # processes: papervault commands, servers, stand-in CLIs, a fresh shell, killed writers
    "test_agents_claude.py", "test_lean_imports.py", "test_parse_timeout.py", "test_recovery.py",
    "test_sync_recovery.py",
    "test_background_fill.py::test_index_is_searchable_at_once_and_the_fill_ends_with_the_foreground_index",
    "test_background_fill.py::test_a_killed_fill_leaves_the_rest_pending_and_index_finishes_it",
    "test_app.py::test_a_survey_runs_stage_by_stage_without_prefect",
    "test_arrival.py::test_add_first_pass_is_searchable_and_status_names_its_stage",
    "test_arrival.py::test_a_killed_full_parse_then_a_rerun_gives_the_one_pass_vault_and_index",
    "test_everyday.py::test_the_readme_everyday_commands_work_in_a_fresh_shell",
    "test_everyday.py::test_highlights_are_indexed_linked_shown_on_the_site_and_returned_by_mcp",
    "test_everyday.py::test_search_says_precisely_why_there_is_nothing",
    "test_everyday.py::test_searches_during_another_process_rebuild_see_the_previous_index",
    "test_faults.py::test_bulk_add_killed_between_its_commits_then_rerun_matches",
    "test_hostile.py::test_bibtex_brace_and_macro_bombs_are_one_line_problems",
    "test_hostile.py::test_csl_items_after_a_deep_one_are_not_lost_before_it",
    "test_hostile.py::test_deeply_nested_csl_and_better_bibtex_json_are_one_line_problems",
    "test_identity.py::test_old_ids_resolve_in_the_mcp_tools_after_rekey",
    "test_index_windows.py::test_the_allocator_arenas_are_bounded_unless_the_user_set_them",
    "test_site.py::test_serve_previews_and_rebuilds_when_the_vault_changes",
    "test_site_hostile.py::test_mcp_serves_hostile_text_as_text",
    "test_site_hostile.py::test_site_serve_sanitises_too",
    "test_vault_symlinks.py::test_mcp_refuses_linked_files_over_stdio",
    # Chromium
    "test_identity.py::test_rekey_leaves_redirects_for_old_site_urls",
    "test_site_hostile.py::test_every_page_in_chromium_runs_no_injected_script",
    # OCR, a second model precision, memory at scale
    "test_cache_keys.py::test_ocr_setting_is_part_of_the_parse_cache",
    "test_cache_keys.py::test_a_hit_is_served_and_a_changed_resolution_parses_again",
    "test_cache_keys.py::test_an_index_keeps_the_precision_it_was_built_with",
    "test_index_windows.py::test_sync_memory_stays_flat_as_the_vault_grows",
    "test_sources_ingest.py::test_bulk_add_memory_does_not_grow_with_the_library",
    # waits out connection retries to an S3 endpoint that does not answer
    "test_index_uri_secrets.py::test_status_and_doctor_never_print_the_uris_credentials",
}


def is_slow(item) -> bool:
    """Whether `item` belongs to `make test` only (SLOW_FIXTURES, SLOW_TESTS)."""
    test = f"{item.path.name}::{getattr(item, 'originalname', None) or item.name}"
    return bool(SLOW_FIXTURES.keys() & set(getattr(item, "fixturenames", ()))) or item.path.name in SLOW_TESTS \
        or test in SLOW_TESTS


def pytest_collection_modifyitems(session, config, items):
    for item in items:
        if is_slow(item):
            item.add_marker(pytest.mark.slow)
    rank = {name: i for i, name in enumerate(SLOW_FILES)}
    items.sort(key=lambda item: rank.get(item.path.name, len(SLOW_FILES)))   # stable: file order otherwise kept


def pytest_sessionstart(session):
    if hasattr(session.config, "workerinput"):   # an xdist worker: the controller cleared the tally already
        return
    tally = ROOT / "test-artifacts" / "fault-tally.json"
    if tally.exists():
        tally.unlink()


def shared_tmp(tmp_path_factory) -> Path:
    """The run's temporary folder common to every xdist worker (the worker's own basetemp when not parallel):
    where what is built once for the whole run lives, each under a `locked` build."""
    base = tmp_path_factory.getbasetemp()
    return base.parent if os.environ.get("PYTEST_XDIST_WORKER") else base


def build_once(target: Path, build) -> Path:
    """Run `build(target)` once for the whole run, whichever worker asks first; the others wait for it and
    reuse the result. A build that raised is retried by the next caller (nothing is marked done)."""
    from filelock import FileLock

    done = target.with_name(target.name + ".done")
    with FileLock(str(target.with_name(target.name + ".lock"))):
        if not done.exists():
            if target.exists():
                shutil.rmtree(target)   # a half-built leftover of a failed attempt
            target.parent.mkdir(parents=True, exist_ok=True)
            build(target)
            done.write_text("ok")
    return target


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


@contextlib.contextmanager
def environ(name: str, value: str):
    """`os.environ[name] = value` for the block (this process and the subprocesses it starts), then as before."""
    old = os.environ.get(name)
    os.environ[name] = value
    try:
        yield
    finally:
        if old is None:
            os.environ.pop(name, None)
        else:
            os.environ[name] = old


@pytest.fixture(autouse=True, scope="session")
def shared_parse_cache(tmp_path_factory):
    """One parse cache for the whole run, shared by every worker: each corpus PDF is parsed about once, however
    many workspaces import it (entries are written atomically, so workers may fill it side by side).

    Tests of the parser itself call parse_pdf directly and never read this cache.
    """
    path = shared_tmp(tmp_path_factory) / "parse-cache"
    path.mkdir(parents=True, exist_ok=True)
    with environ("PAPERVAULT_PARSE_CACHE_DIR", str(path)):
        yield path


@pytest.fixture(autouse=True, scope="session")
def shared_vector_cache(tmp_path_factory):
    """One vector cache ([embed] vector_cache) for the whole run, shared by every worker and CLI subprocess: a
    corpus text is embedded about once, however many workspaces index it. Runs that are killed on purpose turn
    it off (support_faults.OWN_CACHE) so that their kill lands in real work; tests of the cache give their own."""
    path = shared_tmp(tmp_path_factory) / "vectors"
    with environ("PAPERVAULT_EMBED_VECTOR_CACHE", str(path)):
        yield path


@pytest.fixture(autouse=True, scope="session")
def shared_model_cache():
    """One model cache ([embed] cache_dir) kept between runs, in .pytest_cache: the int8 copy of the embedding
    model (`[embed] precision`, index/quantize.py) is made once per checkout, not in every run or test home. The
    copy's folder is named by the source model file and ONNX Runtime's version, so a new model makes a new copy;
    tests of the copy itself give their own cache."""
    path = ROOT / ".pytest_cache" / "papervault-models"
    with environ("PAPERVAULT_EMBED_CACHE_DIR", str(path)):
        yield path


# The run's own settings that change how fast a command works, never what it finds: one ONNX Runtime thread, the
# run's model cache (the int8 copy made once), its vector and parse caches. Subprocesses that stand for a fresh
# shell or a worker keep these and lose everything else (the model, the workspace), so that a test still shows
# what the command reads from papervault.toml, without paying for a model copy and a cold cache each time.
RUN_SPEED_VARS = ("PAPERVAULT_EMBED_THREADS", "PAPERVAULT_EMBED_CACHE_DIR", "PAPERVAULT_EMBED_VECTOR_CACHE",
                  "PAPERVAULT_PARSE_CACHE_DIR", "PAPERVAULT_INDEX_BACKGROUND_FILL", "PAPERVAULT_PARSE_FIRST_PASS")


def run_speed_env() -> dict[str, str]:
    """The RUN_SPEED_VARS this process has (see above)."""
    return {k: os.environ[k] for k in RUN_SPEED_VARS if k in os.environ}


def parse_once(pdf: Path):
    """Parse a corpus PDF through the session's shared parse cache (support modules build vaults with it)."""
    from papervault.parse.batch import parse_cached

    cache = os.environ.get("PAPERVAULT_PARSE_CACHE_DIR")
    return parse_cached(Path(pdf), None, Path(cache) if cache else None)


# --- the corpus workspace, built once -----------------------------------------------------------------

def pv_env(ws: Path, **extra: str) -> dict[str, str]:
    """The environment of a `papervault` subprocess on workspace `ws` (the session's parse cache included)."""
    # A generous per-PDF parse timeout: the tests check results, not speed (bench/ measures speed).
    return dict(os.environ, PAPERVAULT_WORKSPACE=str(ws), PAPERVAULT_PARSE_TIMEOUT="1200", **extra)


def pv(*args: str, ws: Path, timeout: float = 1800, check: bool = True) -> subprocess.CompletedProcess:
    """`python -m papervault ARGS` as a user runs it, in its own process."""
    proc = subprocess.run([sys.executable, "-m", "papervault", *args], capture_output=True, text=True,
                          env=pv_env(ws), timeout=timeout, cwd=ws.parent)
    if check and proc.returncode != 0:
        raise AssertionError(f"papervault {' '.join(args)} failed ({proc.returncode}):\n{proc.stdout}\n{proc.stderr}")
    return proc


def without_multilingual(ws: Path) -> None:
    """Turn the multilingual vector space off in a workspace's papervault.toml (it and its copies keep it off):
    for workspaces whose tests ask nothing in Chinese. tests/test_crosslingual.py builds the ones that do."""
    toml = ws / "papervault.toml"
    text = toml.read_text(encoding="utf-8")
    assert "\n[embed]\n" in text, text
    if re.search(r"(?m)^multilingual\s*=", text):   # recorded already (an `add` that indexed): set it, once
        text = re.sub(r"(?m)^multilingual\s*=.*$", "multilingual = false", text)
    else:
        text = text.replace("\n[embed]\n", "\n[embed]\nmultilingual = false\n", 1)
    toml.write_text(text, encoding="utf-8")


def _vault_head(ws: Path) -> tuple[str, str]:
    import git

    repo = git.Repo(ws / "vault")
    return repo.head.commit.hexsha, repo.git.status("--porcelain")


# The corpus papers the searches on `corpus_workspace` ask about (tests/test_e2e.py), by the id `add` gives them:
# only these are indexed, as embedding all 16 would cost the run minutes of CPU that no check needs. The other
# six (the scanned LISP II paper among them) are added, and `corpus_added` keeps them.
CORPUS_INDEXED = ["baker2011megastore", "cervone2014pointwise", "foxharvest", "kingsbury2021elle", "ritchie1974unix",
                  "rondon2008liquid", "rong2017asap", "szekeressok", "tao2017significantly", "vanrenesse2011paxos"]


def _read_only(ws: Path):
    """Yield `ws`; then fail the session if its vault changed meanwhile."""
    before = _vault_head(ws)
    yield ws
    assert _vault_head(ws) == before, f"a test changed the read-only workspace {ws}: use its _copy fixture"


@pytest.fixture(scope="session")
def corpus_added(tmp_path_factory, corpus_dir) -> Path:
    """The 16 shared papers added through the CLI (`papervault add DIR`, in its own process), once per run
    (all workers share it); not indexed (`--no-index`). Read-only: tests that write use `corpus_added_copy`."""
    import json

    def build(ws: Path) -> None:
        pv("init", str(ws), ws=ws)
        without_multilingual(ws)
        out = json.loads(pv("add", str(corpus_dir), "--json", "--no-index", ws=ws).stdout)
        assert len(out["added"]) == 16 and out["problems"] == [], out

    yield from _read_only(build_once(shared_tmp(tmp_path_factory) / "corpus-added" / "ws", build))


@pytest.fixture(scope="session")
def corpus_workspace(tmp_path_factory, corpus_added, model_dir) -> Path:
    """A copy of `corpus_added` without the papers no search asks about (`papervault delete`), indexed
    (`papervault index`), once per run: the CORPUS_INDEXED papers. Both commands run in this process (the
    add is the one tested as a process). Read-only: tests that write use `corpus_workspace_copy`."""
    import json

    def build(ws: Path) -> None:
        shutil.copytree(corpus_added, ws, symlinks=True)
        ids = sorted(p.name for p in (ws / "vault" / "papers").iterdir() if p.is_dir())
        assert set(CORPUS_INDEXED) < set(ids), ids
        invoke(["delete", *sorted(set(ids) - set(CORPUS_INDEXED)), "--workspace", ws])
        out = json.loads(invoke(["index", "--json", "--workspace", ws]).stdout)
        assert sorted(out["added"]) == CORPUS_INDEXED and not out["errors"], out

    yield from _read_only(build_once(shared_tmp(tmp_path_factory) / "corpus-indexed" / "ws", build))


@pytest.fixture
def corpus_added_copy(corpus_added, tmp_path) -> Path:
    """A private copy of `corpus_added` (vault, kept PDFs, state) that the test may change."""
    dst = tmp_path / "corpus-added" / "ws"
    shutil.copytree(corpus_added, dst, symlinks=True)
    return dst


@pytest.fixture
def corpus_workspace_copy(corpus_workspace, tmp_path) -> Path:
    """A private copy of the corpus workspace (vault, index, state) that the test may change."""
    dst = tmp_path / "corpus" / "ws"
    shutil.copytree(corpus_workspace, dst, symlinks=True)
    return dst


def invoke(args: list, check: bool = True):
    """The CLI in this process (click's CliRunner) -> click Result (exit_code, stdout, stderr; output mixes
    both). A non-zero exit fails the caller unless check=False."""
    from click.testing import CliRunner

    from papervault.cli import cli

    result = CliRunner().invoke(cli, [str(a) for a in args], catch_exceptions=False)
    if check:
        assert result.exit_code == 0, result.output
    return result


@pytest.fixture
def cli_run():
    """Run the CLI in this process: cli_run(["search", "q", "--json", "--workspace", ws]) -> click Result
    (`invoke`); a non-zero exit fails the test unless check=False."""
    return invoke


# --- one Prefect server --------------------------------------------------------------------------------

def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


# The server's services that no test needs: loops that wake every few seconds while the server idles for the
# whole run (schedules, late and paused runs, cancellations, worker health, concurrency leases, vacuum and
# cleanup), and the consumers that handle every event a run emits a second and third time for the UI's event
# feed and for automations (event persister, event logger, triggers). Task and flow runs, their states, logs
# and artifacts are stored without them (the task run recorder stays on).
_QUIET_SERVICES = ("SCHEDULER", "LATE_RUNS", "PAUSE_EXPIRATIONS", "CANCELLATION_CLEANUP", "FOREMAN", "REPOSSESSOR",
                   "DB_VACUUM", "CLEANUP_RECONCILER", "EVENT_PERSISTER", "EVENT_LOGGER", "TRIGGERS")


def _start_prefect_server(home: Path) -> tuple[subprocess.Popen, str]:
    """`prefect server start` on a free port of 127.0.0.1, once healthy: (process, API URL)."""
    import httpx

    prefect = Path(sys.executable).with_name("prefect")
    if not prefect.exists():
        pytest.skip("the prefect CLI is not installed beside this Python")
    home.mkdir(parents=True, exist_ok=True)
    port = _free_port()
    url = f"http://127.0.0.1:{port}/api"
    env = {k: v for k, v in os.environ.items() if k != "PREFECT_API_URL"}
    env.update(PREFECT_HOME=str(home), PREFECT_SERVER_ANALYTICS_ENABLED="false", PREFECT_UI_ENABLED="false",
               **{f"PREFECT_SERVER_SERVICES_{name}_ENABLED": "false" for name in _QUIET_SERVICES})
    log = home / "server.log"
    server = subprocess.Popen([str(prefect), "server", "start", "--host", "127.0.0.1", "--port", str(port)],
                              env=env, cwd=home, stdout=open(log, "wb"), stderr=subprocess.STDOUT,
                              start_new_session=True)
    deadline = time.monotonic() + 240
    while True:
        try:
            if httpx.get(f"{url}/health", timeout=5).status_code == 200:
                return server, url
        except httpx.HTTPError:
            pass
        if server.poll() is not None:
            raise AssertionError(log.read_text(errors="replace")[-3000:])
        if time.monotonic() > deadline:
            stop_process(server)
            raise AssertionError("the Prefect server did not become healthy within 240 s")
        time.sleep(0.5)


def _running(pid: int) -> bool:
    """Whether process `pid` runs (a zombie does not)."""
    try:
        return Path(f"/proc/{pid}/stat").read_text().split(")")[-1].split()[0] != "Z"
    except (OSError, IndexError):
        return False


def _stop_group(pid: int) -> None:
    """SIGTERM a server's process group (it leads one), SIGKILL it after 20 s."""
    for sig, wait in ((signal.SIGTERM, 20), (signal.SIGKILL, 5)):
        try:
            os.killpg(pid, sig)
        except ProcessLookupError:
            return
        deadline = time.monotonic() + wait
        while time.monotonic() < deadline and _running(pid):
            time.sleep(0.2)
        if not _running(pid):
            return


@pytest.fixture(scope="session")
def prefect_api(tmp_path_factory):
    """One Prefect API server (`prefect server start`) on 127.0.0.1 for the whole run; yields its URL.

    In a parallel run the test processes share it: the first that needs it starts it, each one using it is
    counted in a state file under a file lock, and the last to finish stops it (one that starts later, after it
    stopped, starts another). PREFECT_API_URL is set in this process's environment (CLI subprocesses and Dask
    workers inherit it) and in Prefect's settings context (flows run in this process), so no flow starts a
    temporary server of its own.
    """
    import json

    from filelock import FileLock
    from prefect.settings import PREFECT_API_URL, temporary_settings

    base = shared_tmp(tmp_path_factory)
    state_path = base / "prefect-server.json"
    lock = FileLock(str(base / "prefect-server.lock"))
    mine: subprocess.Popen | None = None
    with lock:
        state = json.loads(state_path.read_text()) if state_path.exists() else None
        if state and _running(state["pid"]):
            state["users"] += 1
        else:
            mine, url = _start_prefect_server(base / f"prefect-server-home-{os.getpid()}")
            state = {"pid": mine.pid, "url": url, "users": 1}
        state_path.write_text(json.dumps(state))
    url = state["url"]
    try:
        with environ("PREFECT_API_URL", url), temporary_settings({PREFECT_API_URL: url}):
            yield url
    finally:
        with lock:
            state = json.loads(state_path.read_text())
            state["users"] -= 1
            if state["users"] <= 0:
                _stop_group(state["pid"])
                state_path.unlink()
            else:
                state_path.write_text(json.dumps(state))
        if mine is not None:
            mine.poll()    # reap it if it has stopped; a server others still use runs on without this process


def start_process(cmd: list, env: dict, log: Path, cwd: Path) -> subprocess.Popen:
    """A long-running helper (a server, a worker) in its own process group, its output in `log`."""
    return subprocess.Popen(cmd, env=env, cwd=cwd, stdout=open(log, "wb"), stderr=subprocess.STDOUT,
                            start_new_session=True)


def stop_process(proc: subprocess.Popen) -> None:
    """SIGTERM the helper's process group, SIGKILL it after 20 s."""
    if proc.poll() is None:
        os.killpg(proc.pid, signal.SIGTERM)
        try:
            proc.wait(timeout=20)
        except subprocess.TimeoutExpired:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait(timeout=20)
