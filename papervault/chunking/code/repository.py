"""The repository as a whole: its README summary, tree, languages, entry points, build files, and its chunk."""

from __future__ import annotations

import json
import re
import tomllib
from collections import Counter
from dataclasses import dataclass, field
from pathlib import PurePosixPath

from papervault.chunking.code.chunk import CodeChunk, cut_text
from papervault.chunking.code.languages import detect_language

BUILD_FILES = {"pyproject.toml", "setup.py", "setup.cfg", "requirements.txt", "environment.yml", "environment.yaml",
               "makefile", "gnumakefile", "cmakelists.txt", "cargo.toml", "go.mod", "package.json", "pom.xml",
               "build.gradle", "build.gradle.kts", "dockerfile", "containerfile", "meson.build", "configure.ac",
               "tox.ini", "noxfile.py", "justfile", "bazel", "build.bazel", "workspace", "docker-compose.yml",
               "docker-compose.yaml", "compose.yaml", "pixi.toml", "conda.yaml"}


@dataclass
class RepoSummary:
    """What the code note and the repository chunk say about a repository."""

    name: str
    readme: str = ""
    tree: str = ""
    languages: dict[str, int] = field(default_factory=dict)    # language -> files
    entry_points: list[str] = field(default_factory=list)
    build_files: list[str] = field(default_factory=list)
    files: int = 0


def readme_summary(text: str, max_chars: int = 1200) -> str:
    """The first paragraphs of a README that say something (no badges, no HTML, no tables of contents)."""
    keep: list[str] = []
    text = re.sub(r"^(```|~~~).*?^\1[^\n]*$", "", text, flags=re.S | re.M)    # code blocks say how, not what
    for para in re.split(r"\n\s*\n", text):
        p = para.strip()
        if re.match(r"#+\s*(install|installation|setup|requirements|dependencies|license|citation|cite|"
                    r"contributing|acknowledg|table of contents|contents)\b", p, re.I):
            break
        p = "\n".join(line for line in p.splitlines() if not line.lstrip().startswith("#")).strip()
        if not p or p.startswith(("![", "[![", "<", "|", "```", "- [", "* [")) or re.fullmatch(r"[=\-#*\s]+", p):
            continue
        p = re.sub(r"!\[[^\]]*\]\([^)]*\)", "", p)
        p = re.sub(r"<[^>]+>", "", p).strip()
        if not p:
            continue
        keep.append(p)
        if sum(len(k) for k in keep) >= max_chars:
            break
    return cut_text("\n\n".join(keep), max_chars)


def file_tree(paths: list[str], *, max_entries: int = 80) -> str:
    """An indented tree of folders (with file counts) and top-level files, short enough for a note."""
    dirs: Counter = Counter()
    for p in paths:
        parts = PurePosixPath(p).parts
        for i in range(1, len(parts)):
            dirs["/".join(parts[:i])] += 1
    lines = []
    entries = sorted(set(dirs) | {p for p in paths if "/" not in p})
    for e in entries:
        depth = e.count("/")
        if depth > 2:
            continue
        name = PurePosixPath(e).name
        lines.append(f"{'  ' * depth}{name}/ ({dirs[e]} files)" if e in dirs else f"{'  ' * depth}{name}")
        if len(lines) >= max_entries:
            lines.append(f"… ({len(entries) - max_entries} more)")
            break
    return "\n".join(lines)


def summarize_repo(name: str, paths: list[str], chunks: list[CodeChunk], texts: dict[str, str]) -> RepoSummary:
    """The repository's README summary, tree, languages, entry points and build files.

    Args:
        paths: every file of the repository (chunked or not).
        chunks: the chunks of its code files.
        texts: the text of its README and build files, by path.
    """
    langs: Counter = Counter()
    for p in paths:
        lang = detect_language(p)
        if lang:
            langs[lang] += 1
    readme_path = next((p for p in sorted(paths, key=lambda x: (x.count("/"), x))
                        if PurePosixPath(p).name.lower().startswith("readme")), None)
    readme = readme_summary(texts.get(readme_path, "")) if readme_path else ""
    build = sorted(p for p in paths if PurePosixPath(p).name.lower() in BUILD_FILES
                   or PurePosixPath(p).name.lower().startswith(("requirements", "dockerfile")))
    entries: list[str] = []
    for c in chunks:
        if c.symbol == "__main__":
            entries.append(f"{c.path} (`if __name__ == \"__main__\"`, lines {c.lines})")
        elif c.kind == "function" and c.symbol == "main":
            entries.append(f"{c.path}: `main` (lines {c.lines})")
    for p in build:
        text = texts.get(p, "")
        low = PurePosixPath(p).name.lower()
        if low == "pyproject.toml":
            try:
                data = tomllib.loads(text)
            except tomllib.TOMLDecodeError:
                data = {}
            for script, target in (data.get("project", {}).get("scripts", {}) or {}).items():
                entries.append(f"`{script}` -> {target} ({p})")
        elif low == "package.json":
            try:
                data = json.loads(text)
            except ValueError:
                data = {}
            bins = data.get("bin") if isinstance(data, dict) else None
            if isinstance(bins, str):
                entries.append(f"`{data.get('name', '')}` -> {bins} ({p})")
            elif isinstance(bins, dict):
                entries += [f"`{k}` -> {v} ({p})" for k, v in bins.items()]
            if isinstance(data, dict) and isinstance(data.get("main"), str):
                entries.append(f"{data['main']} (package.json main)")
        elif low.startswith(("dockerfile", "containerfile")):
            for line in text.splitlines():
                if re.match(r"(?i)^\s*(ENTRYPOINT|CMD)\b", line):
                    entries.append(f"{p}: {line.strip()}")
    for c in chunks:
        if c.kind == "target" and c.path.count("/") == 0 and not c.symbol.startswith("."):
            entries.append(f"make {c.symbol} ({c.path}, line {c.start_line})")
            if sum(1 for e in entries if e.startswith("make ")) >= 8:
                break
    return RepoSummary(name=name, readme=readme, tree=file_tree(paths), languages=dict(langs.most_common()),
                       entry_points=list(dict.fromkeys(entries)), build_files=build, files=len(paths))


def repository_chunk(summary: RepoSummary, commit: str = "") -> CodeChunk:
    """The repository-level chunk: README summary, languages, entry points, build files and tree."""
    parts = [f"# repository {summary.name}" + (f" @ {commit[:12]}" if commit else "")]
    if summary.readme:
        parts.append(summary.readme)
    if summary.languages:
        parts.append("languages: " + ", ".join(f"{k} ({v} files)" for k, v in summary.languages.items()))
    if summary.entry_points:
        parts.append("entry points:\n" + "\n".join(f"- {e}" for e in summary.entry_points))
    if summary.build_files:
        parts.append("build files: " + ", ".join(summary.build_files))
    parts.append("tree:\n" + summary.tree)
    return CodeChunk(summary.name, "", "repository", summary.name, "", 0, 0, cut_text("\n\n".join(parts)),
                     doc=summary.readme.split("\n\n")[0][:300], file_hash=commit)
