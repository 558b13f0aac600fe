"""YAML, JSON and TOML files: configuration chunks of flattened `key = value` lines (how hyperparameters are
found), one per top-level key in a large file."""

from __future__ import annotations

import json
import re
import tomllib
from pathlib import PurePosixPath
from typing import Any

import yaml

from papervault.chunking.code.chunk import CodeChunk, cut_text, split_identifier

CONFIG_LINES_PER_CHUNK = 80


def _flatten(value: Any, prefix: str = "", out: list[tuple[str, str]] | None = None) -> list[tuple[str, str]]:
    out = [] if out is None else out
    if isinstance(value, dict):
        if not value and prefix:
            out.append((prefix, "{}"))
        for k, v in value.items():
            _flatten(v, f"{prefix}.{k}" if prefix else str(k), out)
    elif isinstance(value, list) and any(isinstance(v, (dict, list)) for v in value):
        for i, v in enumerate(value):
            _flatten(v, f"{prefix}[{i}]", out)
    else:
        out.append((prefix, json.dumps(value, default=str, ensure_ascii=False)))
    return out


def _key_line(lines: list[str], key: str, language: str) -> int | None:
    k = re.escape(key)
    pats = {"yaml": rf"^{k}\s*:", "toml": rf"^\s*(\[\[?\s*{k}(\.|\s*\]))|^{k}\s*=", "json": rf'^\s*"{k}"\s*:'}
    rx = re.compile(pats[language])
    for i, line in enumerate(lines):
        if rx.search(line):
            return i + 1
    return None


def config_chunks(repo: str, path: str, source: str, language: str) -> list[CodeChunk]:
    nlines = source.count("\n") + 1
    stem = PurePosixPath(path).name
    try:
        if language == "json":
            data = json.loads(source)
        elif language == "toml":
            data = tomllib.loads(source)
        else:
            docs = [d for d in yaml.safe_load_all(source) if d is not None]
            data = docs[0] if len(docs) == 1 else {f"doc{i}": d for i, d in enumerate(docs)}
    except Exception as exc:  # noqa: BLE001 - any parser failure: keep the file as text
        return [CodeChunk(repo, path, "file", path, language, 1, nlines,
                          cut_text(f"# {path} (not valid {language}: {str(exc).splitlines()[0][:200]})\n{source}", 2000))]
    flat = _flatten(data)
    text = "\n".join(f"{k} = {v}" for k, v in flat)
    header = f"# {path} ({language} configuration, {len(flat)} settings)"
    file_chunk = CodeChunk(repo, path, "file", path, language, 1, nlines,
                           cut_text(f"{header}\n" + ("top-level keys: " + ", ".join(map(str, data))
                                                if isinstance(data, dict) else ""), 2000))
    if len(flat) <= CONFIG_LINES_PER_CHUNK or not isinstance(data, dict):
        return [file_chunk, CodeChunk(repo, path, "config", stem, language, 1, nlines, cut_text(f"{header}\n{text}"),
                                      doc=_settings_words(flat))]
    # A large file: one chunk per top-level key, so a hyperparameter is found with its neighbours.
    src_lines = source.splitlines()
    keys = list(data)
    starts = [_key_line(src_lines, str(k), language) for k in keys]
    out = [file_chunk]
    for i, key in enumerate(keys):
        part = [(k, v) for k, v in flat if k == str(key) or k.startswith(f"{key}.") or k.startswith(f"{key}[")]
        if not part:
            continue
        s = starts[i] or 1
        later = [x for x in starts[i + 1:] if x]
        e = (later[0] - 1) if (starts[i] and later) else (nlines if starts[i] else nlines)
        out.append(CodeChunk(repo, path, "config", str(key), language, s, max(s, e),
                             cut_text(f"# {path} [{key}]\n" + "\n".join(f"{k} = {v}" for k, v in part)),
                             doc=_settings_words(part)))
    return out


def _settings_words(flat: list[tuple[str, str]], limit: int = 60) -> str:
    """Setting names in words (`optimizer.warmup_steps` -> optimizer warmup steps): what a question says."""
    names = dict.fromkeys(" ".join(split_identifier(re.sub(r"\[\d+\]", "", k))) for k, _ in flat)
    return "configuration settings (hyperparameters): " + ", ".join(list(names)[:limit])
