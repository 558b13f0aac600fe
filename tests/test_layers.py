"""The architecture's "never" rules and its layers, checked by import-linter with the contracts in pyproject.toml:
the library never imports its front ends, parsing knows nothing of retrieval or the index, the model backends know
no survey and no index, lookups never start a flow, and the package, the index, the site and the survey are each
layered (every package and subpackage, exhaustively: a module no layer names is a failure), so no import
(function-local ones included) makes a cycle. A second run on a copy with one violation per contract shows that
each contract really catches what it forbids. And no import hides inside a function without a comment saying what
it defers and why."""

from __future__ import annotations

import ast
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
    assert "18 kept, 0 broken" in r.stdout


def test_each_contract_catches_a_violation(tmp_path):
    for name in PACKAGES:
        shutil.copytree(ROOT / name, tmp_path / name, ignore=shutil.ignore_patterns("__pycache__"))
    shutil.copy(ROOT / "pyproject.toml", tmp_path / "pyproject.toml")
    violations = {
        "papervault/doctor.py": "from papervault.commands import common",        # library -> command line
        "papervault/parse/text.py": "from papervault.sources import files",      # parsing -> retrieval
        "papervault/agents/base.py": "from papervault.survey import select",     # backend -> survey
        "papervault/index/search.py": "import prefect",                          # lookup -> flows
        # a function-local import that closes a cycle, one per layers contract
        "papervault/models.py": "from papervault import workspace",              # basics -> storage
        "papervault/index/tables.py": "from papervault.index import store",      # table plumbing -> paper index
        "papervault/site/sanitize.py": "from papervault.site import citations",  # escaping -> page parts
        "papervault/survey/papers.py": "from papervault.survey import select",   # data types -> a stage
        "papervault/survey/topic/table.py": "from papervault.survey.topic import scoring",  # table -> scores
        "papervault/app/ids.py": "from papervault.app import papers",           # a single lookup -> an operation
        "papervault/agents/paperdoc.py": "from papervault.agents import claude", # shared view -> a backend
        "papervault/chunking/paper.py": "from papervault.chunking import code",  # siblings
        "papervault/chunking/code/chunk.py": "from papervault.chunking.code import python",
        "papervault/parse/layout.py": "from papervault.parse import pdf",        # page layout -> the reader
        "papervault/sources/web.py": "from papervault.sources import resolve",   # the web -> resolving
        "papervault/vault/paths.py": "from papervault.vault import store",       # a format -> the store
        "papervault/pipeline/stage.py": "from papervault.pipeline import runner",  # the stage -> its runner
    }
    for rel, line in violations.items():
        path = tmp_path / rel
        path.write_text(path.read_text(encoding="utf-8") + f"\n\ndef _violation():\n    {line}\n", encoding="utf-8")
    # every contract is exhaustive: a new module that no layer names breaks its package's contract
    (tmp_path / "papervault/commands/unlisted.py").write_text('"""A command module nobody placed in a layer."""\n')
    violations["papervault/commands/unlisted.py"] = ""
    r = lint(tmp_path)
    assert r.returncode != 0
    assert "0 kept, 18 broken" in r.stdout, r.stdout[-4000:]
    for rel in violations:
        assert rel.removesuffix(".py").replace("/", ".") in r.stdout


def uncommented_local_imports(path: Path) -> list[str]:
    """`line: statement` for each import inside a function with no comment on its lines or a comment line just
    above it. A comment above the first of adjacent imports covers the group; `if TYPE_CHECKING:` blocks are
    not imports."""
    src = path.read_text(encoding="utf-8")
    lines = src.splitlines()
    if not any(line[:1].isspace() and line.lstrip().startswith(("import ", "from ")) for line in lines):
        return []       # no indented import at all

    def commented(node: ast.stmt) -> bool:
        # an import statement holds no string, so a `#` on its lines starts a comment
        own = any("#" in lines[n - 1] for n in range(node.lineno, node.end_lineno + 1))
        return own or (node.lineno > 1 and lines[node.lineno - 2].lstrip().startswith("#"))

    def type_checking(node: ast.AST) -> bool:
        test = getattr(node, "test", None)
        return isinstance(node, ast.If) and (getattr(test, "id", None) == "TYPE_CHECKING"
                                             or getattr(test, "attr", None) == "TYPE_CHECKING")

    found: list[str] = []

    def visit(node: ast.AST, in_function: bool) -> None:
        # only the lists of statements: an import statement never sits inside an expression
        for field in ("body", "orelse", "finalbody", "handlers", "cases"):
            covered = False        # the previous statement of this list is an import with its comment
            for child in getattr(node, field, None) or []:
                if not isinstance(child, ast.AST) or type_checking(child):
                    covered = False
                    continue
                if isinstance(child, (ast.Import, ast.ImportFrom)):
                    if in_function:
                        covered = covered or commented(child)
                        if not covered:
                            found.append(f"{child.lineno}: {ast.unparse(child)}")
                    continue
                covered = False
                visit(child, in_function or isinstance(child, (ast.FunctionDef, ast.AsyncFunctionDef)))

    visit(ast.parse(src), False)
    return found


def test_every_function_local_import_says_why_it_is_deferred():
    # An import inside a function is either a cycle in disguise (the contracts above forbid those) or deliberate:
    # a heavy or optional dependency (LanceDB, PyMuPDF, Prefect, fastembed, mkdocs, ...) kept out of a light path
    # such as `papervault --help`, the MCP server's start-up or `status`. The comment says which; anything cheap
    # goes to the top of its module.
    offenders = []
    for package in PACKAGES:
        for path in sorted((ROOT / package).rglob("*.py")):
            rel = path.relative_to(ROOT).as_posix()
            offenders += [f"{rel}:{line}" for line in uncommented_local_imports(path)]
    assert not offenders, ("function-local imports without a comment (move them to the top of the module, or say "
                           "what they defer and why):\n" + "\n".join(offenders))


def test_the_local_import_check_sees_an_uncommented_import(tmp_path):
    path = tmp_path / "m.py"
    path.write_text("import json\n\n\n"
                    "def f():\n"
                    "    # deferred: heavy\n"
                    "    import lancedb\n"
                    "    import pyarrow\n\n"
                    "    x = 1\n"
                    "    import numpy\n"
                    "    if x:\n"
                    "        from os import path  # deferred: the reason\n"
                    "        from re import sub\n"
                    "    def g():\n"
                    "        from a import (b,\n"
                    "                       c)  # deferred: the reason\n"
                    "        import d\n"
                    "    import e\n"
                    "    if TYPE_CHECKING:\n"
                    "        import f\n", encoding="utf-8")
    assert uncommented_local_imports(path) == ["10: import numpy", "18: import e"]
