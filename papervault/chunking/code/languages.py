"""Which files are chunked, in which language, and which of them are tests."""

from __future__ import annotations

import re
from pathlib import PurePosixPath

EXTENSIONS = {
    ".py": "python", ".pyi": "python",
    ".c": "c", ".h": "c",
    ".cc": "cpp", ".cpp": "cpp", ".cxx": "cpp", ".hpp": "cpp", ".hh": "cpp", ".hxx": "cpp", ".ipp": "cpp",
    ".cu": "cuda", ".cuh": "cuda",
    ".js": "javascript", ".jsx": "javascript", ".mjs": "javascript", ".cjs": "javascript",
    ".ts": "typescript", ".mts": "typescript", ".cts": "typescript", ".tsx": "tsx",
    ".rs": "rust", ".go": "go", ".java": "java",
    ".sh": "bash", ".bash": "bash", ".zsh": "bash",
    ".mk": "make",
    ".yaml": "yaml", ".yml": "yaml", ".json": "json", ".toml": "toml",
}
FILENAMES = {"makefile": "make", "gnumakefile": "make", "dockerfile": "dockerfile", "containerfile": "dockerfile"}
CONFIG_LANGUAGES = ("yaml", "json", "toml")
# Generated or vendored files that would only add noise to the index.
SKIP_FILES = {"package-lock.json", "yarn.lock", "pnpm-lock.yaml", "cargo.lock", "poetry.lock", "uv.lock",
              "pipfile.lock", "composer.lock", "go.sum"}


def detect_language(path: str) -> str | None:
    """The language of a file from its name, or None when it is not chunked."""
    p = PurePosixPath(path)
    name = p.name.lower()
    if name in SKIP_FILES or name.endswith((".min.js", ".min.css", ".map")):
        return None
    if name in FILENAMES:
        return FILENAMES[name]
    if name.startswith("dockerfile") or name.endswith(".dockerfile"):
        return "dockerfile"
    if name.startswith("makefile"):
        return "make"
    return EXTENSIONS.get(p.suffix.lower())


def is_test_path(path: str) -> bool:
    p = PurePosixPath(path)
    name = p.name.lower()
    parts = {x.lower() for x in p.parts[:-1]}
    return (bool(parts & {"test", "tests", "testing", "__tests__", "spec"})
            or name.startswith("test_") or name.startswith("test.")
            or re.search(r"(_test|_tests|\.test|\.spec|test)\.[a-z]+$", name) is not None
            or name == "conftest.py")


def module_name(path: str) -> str:
    p = PurePosixPath(path)
    parts = list(p.with_suffix("").parts)
    if parts and parts[0] in ("src", "lib") and len(parts) > 1:
        parts = parts[1:]
    if parts and parts[-1] == "__init__":
        parts = parts[:-1] or [p.parent.name or "__init__"]
    return ".".join(parts)
