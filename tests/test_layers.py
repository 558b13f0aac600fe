"""The architecture's "never" rules and its layers, checked by import-linter with the contracts in pyproject.toml:
the library never imports its front ends, parsing knows nothing of retrieval or the index, the model backends know
no survey and no index, lookups never start a flow, and the package, the index, the site and the survey are each
layered (every package and subpackage, exhaustively: a module no layer names is a failure), so no import
(function-local ones included) makes a cycle. A second run on a copy with one violation per contract shows that
each contract really catches what it forbids."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
LINT = Path(sys.executable).with_name("lint-imports")
PACKAGES = ("papervault", "flows", "mcp_server")


def lint(root: Path) -> subprocess.CompletedProcess:
    if not LINT.exists():
        pytest.fail(f"lint-imports is not installed beside {sys.executable}: pip install -e '.[test]'")
    env = dict(os.environ, PYTHONPATH=str(root))
    return subprocess.run([str(LINT), "--config", str(root / "pyproject.toml"), "--no-cache"], cwd=root, env=env,
                          capture_output=True, text=True, timeout=300)


def test_the_import_contracts_hold():
    r = lint(ROOT)
    assert r.returncode == 0, r.stdout[-4000:] + r.stderr[-2000:]
    assert "16 kept, 0 broken" in r.stdout


def test_each_contract_catches_a_violation(tmp_path):
    for name in PACKAGES:
        shutil.copytree(ROOT / name, tmp_path / name, ignore=shutil.ignore_patterns("__pycache__"))
    shutil.copy(ROOT / "pyproject.toml", tmp_path / "pyproject.toml")
    violations = {
        "papervault/doctor.py": "from papervault.commands import common",        # library -> command line
        "papervault/parse/text.py": "from papervault.sources import files",      # parsing -> retrieval
        "papervault/agents/base.py": "from papervault.survey import analyse",    # backend -> survey
        "papervault/index/search.py": "import prefect",                          # lookup -> flows
        # a function-local import that closes a cycle, one per layers contract
        "papervault/models.py": "from papervault import workspace",              # basics -> storage
        "papervault/index/tables.py": "from papervault.index import store",      # table plumbing -> paper index
        "papervault/site/sanitize.py": "from papervault.site import citations",  # escaping -> page parts
        "papervault/survey/papers.py": "from papervault.survey import select",   # data types -> a stage
        "papervault/app/ids.py": "from papervault.app import papers",           # a single lookup -> an operation
        "papervault/agents/paperdoc.py": "from papervault.agents import claude", # shared view -> a backend
        "papervault/chunking/paper.py": "from papervault.chunking import code",  # siblings
        "papervault/chunking/code/chunk.py": "from papervault.chunking.code import python",
        "papervault/parse/layout.py": "from papervault.parse import pdf",        # page layout -> the reader
        "papervault/sources/web.py": "from papervault.sources import resolve",   # the web -> resolving
        "papervault/vault/paths.py": "from papervault.vault import store",       # a format -> the store
    }
    for rel, line in violations.items():
        path = tmp_path / rel
        path.write_text(path.read_text(encoding="utf-8") + f"\n\ndef _violation():\n    {line}\n", encoding="utf-8")
    # every contract is exhaustive: a new module that no layer names breaks its package's contract
    (tmp_path / "papervault/commands/unlisted.py").write_text('"""A command module nobody placed in a layer."""\n')
    violations["papervault/commands/unlisted.py"] = ""
    r = lint(tmp_path)
    assert r.returncode != 0
    assert "0 kept, 16 broken" in r.stdout, r.stdout[-4000:]
    for rel in violations:
        assert rel.removesuffix(".py").replace("/", ".") in r.stdout
