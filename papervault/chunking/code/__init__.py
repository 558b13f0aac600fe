"""Code chunks of a repository: repository, file, function/class, module-level, test and configuration chunks.

Python is read with `ast`; C, C++, CUDA, JavaScript/TypeScript, Rust, Go, Java, shell, Makefiles and
Dockerfiles with the tree-sitter grammars from the package registries (each grammar package ships its compiled
parser, so nothing is fetched at run time). YAML/JSON/TOML files become configuration chunks of flattened
`key = value` lines, which is how hyperparameters are found. Everything here is plain data in, plain data out:
the caller reads the files and writes the index.

A chunk's `ref` (`path::symbol`) names it within its repository; calls are recorded as written and resolved to
refs by `link_calls`, which also fills `callers` and links tests to what they test. Bump CHUNKER_VERSION
whenever the output for the same input changes.

One module per job: `chunk` (the chunk and its text helpers), `languages` (which files, which language, which are
tests), `python` (ast), `treesitter` (the other languages), `config` (YAML/JSON/TOML), `callgraph` (`link_calls`)
and `repository` (the repository's summary and chunk). `chunk_file` below picks the chunker of a file.
"""

from __future__ import annotations

from papervault.chunking.code.callgraph import link_calls
from papervault.chunking.code.chunk import CHUNKER_VERSION, EMBED_CHARS, KINDS, MAX_TEXT_CHARS, CodeChunk, split_identifier
from papervault.chunking.code.config import CONFIG_LINES_PER_CHUNK, config_chunks
from papervault.chunking.code.languages import (CONFIG_LANGUAGES, EXTENSIONS, FILENAMES, SKIP_FILES, detect_language,
                                                is_test_path)
from papervault.chunking.code.python import python_chunks
from papervault.chunking.code.repository import (BUILD_FILES, RepoSummary, file_tree, readme_summary,
                                                 repository_chunk, summarize_repo)
from papervault.chunking.code.treesitter import GRAMMARS, grammar_available, treesitter_chunks

__all__ = ["BUILD_FILES", "CHUNKER_VERSION", "CONFIG_LANGUAGES", "CONFIG_LINES_PER_CHUNK", "EMBED_CHARS", "EXTENSIONS",
           "FILENAMES", "GRAMMARS", "KINDS", "MAX_TEXT_CHARS", "SKIP_FILES", "CodeChunk", "RepoSummary", "chunk_file",
           "detect_language", "file_tree", "grammar_available", "is_test_path", "link_calls", "readme_summary",
           "repository_chunk", "split_identifier", "summarize_repo"]


def chunk_file(repo: str, path: str, text: str, *, language: str | None = None, file_hash: str = "") -> list[CodeChunk]:
    """All chunks of one file: a file chunk first, then its definitions, module-level code and tests.

    A file that does not parse still yields its file chunk (with the parse problem noted), never an exception:
    one bad file must not stop a repository.
    """
    language = language or detect_language(path)
    if language is None:
        return []
    if language == "python":
        chunks = python_chunks(repo, path, text)
    elif language in CONFIG_LANGUAGES:
        chunks = config_chunks(repo, path, text, language)
    else:
        chunks = treesitter_chunks(repo, path, text, language)
    for c in chunks:
        c.file_hash = file_hash
    return chunks
