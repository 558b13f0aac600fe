"""Code chunks of a repository: repository, file, function/class, module-level, test and configuration chunks.

Python is read with `ast`; C, C++, CUDA, JavaScript/TypeScript, Rust, Go, Java, shell, Makefiles and
Dockerfiles with the tree-sitter grammars from the package registries (each grammar package ships its compiled
parser, so nothing is fetched at run time). YAML/JSON/TOML files become configuration chunks of flattened
`key = value` lines, which is how hyperparameters are found. Everything here is plain data in, plain data out:
the caller reads the files and writes the index.

A chunk's `ref` (`path::symbol`) names it within its repository; calls are recorded as written and resolved to
refs by `link_calls`, which also fills `callers` and links tests to what they test. Bump CHUNKER_VERSION
whenever the output for the same input changes.
"""

from __future__ import annotations

import ast
import hashlib
import importlib
import json
import re
import tomllib
import warnings
from collections import Counter, defaultdict
from dataclasses import dataclass, field
from functools import lru_cache
from pathlib import PurePosixPath
from typing import Any, Iterable

import yaml

CHUNKER_VERSION = "code-1"

MAX_TEXT_CHARS = 6000      # a chunk's stored text; longer bodies are cut with a note of what was left out
EMBED_CHARS = 1200         # the head of a chunk that is embedded (MiniLM/BGE read ~256-512 tokens anyway)
CONFIG_LINES_PER_CHUNK = 80

KINDS = ("repository", "file", "function", "class", "module", "test", "config", "target", "stage")

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

BUILD_FILES = {"pyproject.toml", "setup.py", "setup.cfg", "requirements.txt", "environment.yml", "environment.yaml",
               "makefile", "gnumakefile", "cmakelists.txt", "cargo.toml", "go.mod", "package.json", "pom.xml",
               "build.gradle", "build.gradle.kts", "dockerfile", "containerfile", "meson.build", "configure.ac",
               "tox.ini", "noxfile.py", "justfile", "bazel", "build.bazel", "workspace", "docker-compose.yml",
               "docker-compose.yaml", "compose.yaml", "pixi.toml", "conda.yaml"}

_IDENT_SPLIT = re.compile(r"[A-Z]+(?=[A-Z][a-z])|[A-Z]?[a-z]+|[A-Z]+|\d+")


@dataclass
class CodeChunk:
    """One row of the `code` table before embedding."""

    repo: str
    path: str                  # relative, POSIX; "" for the repository chunk
    kind: str                  # one of KINDS
    symbol: str                # "train", "Trainer.step", "<module>", "__main__", "optimizer.lr", the file's module
    language: str
    start_line: int            # 1-based, inclusive
    end_line: int
    text: str
    signature: str = ""
    doc: str = ""
    calls: list[str] = field(default_factory=list)      # callee expressions as written ("self.step", "np.mean")
    imports: list[str] = field(default_factory=list)    # file chunks: what the file imports
    callees: list[str] = field(default_factory=list)    # resolved refs of what this chunk calls
    callers: list[str] = field(default_factory=list)    # resolved refs of what calls this chunk
    tests: list[str] = field(default_factory=list)      # test chunks: refs of what they test; others: tested by
    file_hash: str = ""

    @property
    def ref(self) -> str:
        return f"{self.path}::{self.symbol}"

    @property
    def id(self) -> str:
        return hashlib.sha256(f"{self.repo}\x1f{self.ref}\x1f{self.kind}\x1f{self.start_line}".encode()).hexdigest()[:24]

    @property
    def lines(self) -> str:
        return f"{self.start_line}-{self.end_line}"

    def embed_text(self) -> str:
        """What is embedded: the chunk's identity in words, then its signature, documentation and code head."""
        head = f"{self.kind} {self.symbol} ({' '.join(split_identifier(self.symbol))}) in {self.path or self.repo}"
        parts = [head]
        if self.signature:
            parts.append(self.signature)
        if self.doc:
            parts.append(self.doc)
        parts.append(self.text)
        return "\n".join(parts)[:EMBED_CHARS]

    def search_text(self) -> str:
        """What the full-text index sees: the text plus identifiers split into words (`parse_pdf` -> parse pdf)."""
        words = split_identifier(self.symbol) + split_identifier(self.path)
        return f"{self.symbol} {self.path} {' '.join(words)}\n{self.doc}\n{self.text}"


def split_identifier(name: str) -> list[str]:
    """`search_code`, `parseHTTPHeader`, `index/code.py` -> lower-case words, for full-text search."""
    return [w.lower() for w in _IDENT_SPLIT.findall(name)]


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


def _cut(text: str, limit: int = MAX_TEXT_CHARS) -> str:
    if len(text) <= limit:
        return text
    head = text[:limit]
    head = head[: head.rfind("\n")] if "\n" in head else head
    return f"{head}\n… ({text[len(head):].count(chr(10)) + 1} more lines)"


def _lines(source: str, start: int, end: int) -> str:
    return "\n".join(source.splitlines()[start - 1:end])


# --- entry point ------------------------------------------------------------------------------------------


def chunk_file(repo: str, path: str, text: str, *, language: str | None = None, file_hash: str = "") -> list[CodeChunk]:
    """All chunks of one file: a file chunk first, then its definitions, module-level code and tests.

    A file that does not parse still yields its file chunk (with the parse problem noted), never an exception:
    one bad file must not stop a repository.
    """
    language = language or detect_language(path)
    if language is None:
        return []
    if language == "python":
        chunks = _python_chunks(repo, path, text)
    elif language in CONFIG_LANGUAGES:
        chunks = _config_chunks(repo, path, text, language)
    else:
        chunks = _ts_chunks(repo, path, text, language)
    for c in chunks:
        c.file_hash = file_hash
    return chunks


# --- Python (ast) -----------------------------------------------------------------------------------------


def _module_name(path: str) -> str:
    p = PurePosixPath(path)
    parts = list(p.with_suffix("").parts)
    if parts and parts[0] in ("src", "lib") and len(parts) > 1:
        parts = parts[1:]
    if parts and parts[-1] == "__init__":
        parts = parts[:-1] or [p.parent.name or "__init__"]
    return ".".join(parts)


def _call_name(node: ast.AST) -> str | None:
    """`foo`, `self.step`, `np.linalg.norm` for a call's function; None for calls on computed values."""
    parts = []
    while isinstance(node, ast.Attribute):
        parts.append(node.attr)
        node = node.value
    if isinstance(node, ast.Name):
        parts.append(node.id)
    elif isinstance(node, ast.Call):            # builder().method(): keep the method
        parts.append("()")
    elif parts:
        parts.append("?")
    else:
        return None
    return ".".join(reversed(parts))


def _calls_in(nodes: Iterable[ast.AST]) -> list[str]:
    seen: dict[str, None] = {}
    for top in nodes:
        for node in ast.walk(top):
            if isinstance(node, ast.Call):
                name = _call_name(node.func)
                if name:
                    seen.setdefault(name, None)
    return list(seen)


def _py_signature(node: ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef) -> str:
    if isinstance(node, ast.ClassDef):
        bases = ", ".join(ast.unparse(b) for b in node.bases + node.keywords)  # type: ignore[operator]
        return f"class {node.name}({bases})" if bases else f"class {node.name}"
    prefix = "async def" if isinstance(node, ast.AsyncFunctionDef) else "def"
    ret = f" -> {ast.unparse(node.returns)}" if node.returns else ""
    return f"{prefix} {node.name}({ast.unparse(node.args)}){ret}"


def _py_start(node: ast.AST) -> int:
    decos = getattr(node, "decorator_list", None) or []
    return min([node.lineno] + [d.lineno for d in decos])  # type: ignore[attr-defined]


def _python_chunks(repo: str, path: str, source: str) -> list[CodeChunk]:
    module = _module_name(path)
    nlines = source.count("\n") + 1
    test_file = is_test_path(path)
    try:
        tree = ast.parse(source)
    except (SyntaxError, ValueError) as exc:
        return [CodeChunk(repo, path, "file", module, "python", 1, nlines,
                          _cut(f"# {path} (does not parse: {exc.__class__.__name__}: {exc})\n{source}", 2000))]

    imports: list[str] = []
    outline: list[str] = []
    chunks: list[CodeChunk] = []
    module_stmts: list[ast.stmt] = []
    main_block: ast.If | None = None

    def add_def(node, prefix: str = "", in_test_class: bool = False) -> None:
        qual = f"{prefix}{node.name}"
        start, end = _py_start(node), node.end_lineno or node.lineno
        doc = ast.get_docstring(node) or ""
        sig = _py_signature(node)
        if isinstance(node, ast.ClassDef):
            methods = [n for n in node.body if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef))]
            fields = [n for n in node.body if isinstance(n, (ast.Assign, ast.AnnAssign))]
            summary = [sig + ":"]
            if doc:
                summary.append(f'    """{doc}"""')
            summary += ["    " + ast.unparse(f).splitlines()[0] for f in fields[:30]]
            summary += [f"    {_py_signature(m)}" for m in methods]
            chunks.append(CodeChunk(repo, path, "class", qual, "python", start, end, _cut("\n".join(summary)),
                                    signature=sig, doc=doc, calls=_calls_in(node.bases + node.decorator_list)))
            outline.append(f"{'    ' * prefix.count('.')}{sig}")
            test_class = node.name.startswith("Test") and test_file
            for child in node.body:
                if isinstance(child, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
                    add_def(child, f"{qual}.", test_class)
            return
        is_test = node.name.startswith("test") and (test_file or in_test_class)
        kind = "test" if is_test else "function"
        outline.append(f"{'    ' * prefix.count('.')}{sig}")
        chunks.append(CodeChunk(repo, path, kind, qual, "python", start, end, _cut(_lines(source, start, end)),
                                signature=sig, doc=doc, calls=_calls_in(node.decorator_list + node.body)))

    for node in tree.body:
        if isinstance(node, (ast.Import, ast.ImportFrom)):
            if isinstance(node, ast.Import):
                imports += [a.name for a in node.names]
            else:
                base = "." * node.level + (node.module or "")
                imports += [f"{base}.{a.name}" if base and not base.endswith(".") else f"{base}{a.name}"
                            for a in node.names]
        elif isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            add_def(node)
        elif (isinstance(node, ast.If) and isinstance(node.test, ast.Compare)
              and "__name__" in ast.unparse(node.test) and "__main__" in ast.unparse(node.test)):
            main_block = node
        elif isinstance(node, ast.Expr) and isinstance(node.value, ast.Constant) and node is tree.body[0]:
            continue                               # the module docstring
        else:
            module_stmts.append(node)

    if module_stmts:
        start, end = module_stmts[0].lineno, module_stmts[-1].end_lineno or module_stmts[-1].lineno
        body = "\n".join(_lines(source, s.lineno, s.end_lineno or s.lineno) for s in module_stmts)
        chunks.append(CodeChunk(repo, path, "module", "<module>", "python", start, end, _cut(body),
                                doc="module-level code: constants, registrations, configuration",
                                calls=_calls_in(module_stmts)))
    if main_block is not None:
        start, end = main_block.lineno, main_block.end_lineno or main_block.lineno
        chunks.append(CodeChunk(repo, path, "module", "__main__", "python", start, end,
                                _cut(_lines(source, start, end)), doc="entry point: runs when executed as a script",
                                calls=_calls_in(main_block.body)))

    mdoc = ast.get_docstring(tree) or ""
    head = [f"# {path} (module {module})"]
    if mdoc:
        head.append(mdoc)
    if imports:
        head.append("imports: " + ", ".join(imports))
    head += outline
    file_chunk = CodeChunk(repo, path, "file", module, "python", 1, nlines, _cut("\n".join(head)),
                           doc=mdoc.split("\n\n")[0], imports=imports)
    return [file_chunk] + chunks


# --- tree-sitter languages --------------------------------------------------------------------------------


@dataclass(frozen=True)
class _Grammar:
    module: str
    func: str = "language"
    functions: frozenset = frozenset()     # definitions that become function chunks
    classes: frozenset = frozenset()       # definitions that become class chunks and qualify their members
    scopes: frozenset = frozenset()        # containers that only qualify (namespaces, impl blocks, modules)
    calls: frozenset = frozenset()         # call expressions
    imports: frozenset = frozenset()
    comment: str = "comment"


_C_CALLS = frozenset({"call_expression"})
GRAMMARS: dict[str, _Grammar] = {
    "c": _Grammar("tree_sitter_c", functions=frozenset({"function_definition"}),
                  classes=frozenset({"struct_specifier", "union_specifier", "enum_specifier", "type_definition"}),
                  scopes=frozenset({"preproc_ifdef", "preproc_if", "preproc_else", "preproc_elif"}),
                  calls=_C_CALLS, imports=frozenset({"preproc_include"})),
    "cpp": _Grammar("tree_sitter_cpp", functions=frozenset({"function_definition"}),
                    classes=frozenset({"class_specifier", "struct_specifier", "union_specifier", "enum_specifier"}),
                    scopes=frozenset({"namespace_definition", "template_declaration", "linkage_specification",
                                      "preproc_ifdef", "preproc_if", "preproc_else", "preproc_elif"}),
                    calls=_C_CALLS, imports=frozenset({"preproc_include", "using_declaration"})),
    "cuda": _Grammar("tree_sitter_cuda", functions=frozenset({"function_definition"}),
                     classes=frozenset({"class_specifier", "struct_specifier", "union_specifier", "enum_specifier"}),
                     scopes=frozenset({"namespace_definition", "template_declaration", "linkage_specification",
                                      "preproc_ifdef", "preproc_if", "preproc_else", "preproc_elif"}),
                     calls=frozenset({"call_expression"}), imports=frozenset({"preproc_include"})),
    "javascript": _Grammar("tree_sitter_javascript",
                           functions=frozenset({"function_declaration", "generator_function_declaration",
                                                "method_definition"}),
                           classes=frozenset({"class_declaration"}), scopes=frozenset({"export_statement"}),
                           calls=frozenset({"call_expression", "new_expression"}),
                           imports=frozenset({"import_statement"})),
    "typescript": _Grammar("tree_sitter_typescript", "language_typescript",
                           functions=frozenset({"function_declaration", "generator_function_declaration",
                                                "method_definition", "function_signature"}),
                           classes=frozenset({"class_declaration", "abstract_class_declaration",
                                              "interface_declaration", "enum_declaration"}),
                           scopes=frozenset({"export_statement", "internal_module", "module"}),
                           calls=frozenset({"call_expression", "new_expression"}),
                           imports=frozenset({"import_statement"})),
    "rust": _Grammar("tree_sitter_rust", functions=frozenset({"function_item"}),
                     classes=frozenset({"struct_item", "enum_item", "trait_item", "union_item"}),
                     scopes=frozenset({"impl_item", "mod_item"}),
                     calls=frozenset({"call_expression", "macro_invocation"}),
                     imports=frozenset({"use_declaration", "extern_crate_declaration"})),
    "go": _Grammar("tree_sitter_go", functions=frozenset({"function_declaration", "method_declaration"}),
                   classes=frozenset({"type_declaration"}), calls=frozenset({"call_expression"}),
                   imports=frozenset({"import_spec"})),
    "java": _Grammar("tree_sitter_java", functions=frozenset({"method_declaration", "constructor_declaration"}),
                     classes=frozenset({"class_declaration", "interface_declaration", "enum_declaration",
                                        "record_declaration"}),
                     calls=frozenset({"method_invocation", "object_creation_expression"}),
                     imports=frozenset({"import_declaration"})),
    "bash": _Grammar("tree_sitter_bash", functions=frozenset({"function_definition"}),
                     calls=frozenset({"command"})),
    "make": _Grammar("tree_sitter_make", functions=frozenset({"rule"}), imports=frozenset({"include_directive"})),
    "dockerfile": _Grammar("tree_sitter_dockerfile"),
}
GRAMMARS["tsx"] = _Grammar("tree_sitter_typescript", "language_tsx", functions=GRAMMARS["typescript"].functions,
                           classes=GRAMMARS["typescript"].classes, scopes=GRAMMARS["typescript"].scopes,
                           calls=GRAMMARS["typescript"].calls, imports=GRAMMARS["typescript"].imports)

_NAME_TYPES = {"identifier", "field_identifier", "qualified_identifier", "destructor_name", "operator_name",
               "type_identifier", "property_identifier", "scoped_identifier", "word", "private_property_identifier"}
_JS_FUNC_VALUES = {"arrow_function", "function_expression", "function", "generator_function"}
_JS_TEST_CALLS = {"describe", "it", "test", "suite"}
# Containers visited through their own children (no body field), and those whose declarations stay module-level.
_IN_PLACE = {"export_statement", "template_declaration", "preproc_ifdef", "preproc_if", "preproc_else",
             "preproc_elif"}
_KEEP_TOP = {"export_statement", "namespace_definition", "linkage_specification", "preproc_ifdef", "preproc_if",
             "preproc_else", "preproc_elif"}
_NOT_MODULE = {"comment", "line_comment", "block_comment", "package_clause", "package_declaration",
               "attribute_item", "inner_attribute_item", "identifier", "preproc_arg", "template_parameter_list",
               "string_literal", "string", "namespace_identifier"}


@lru_cache(maxsize=None)
def _parser(language: str):
    """A tree-sitter parser for `language`, or None when its grammar package is not installed."""
    from tree_sitter import Language, Parser

    g = GRAMMARS[language]
    try:
        mod = importlib.import_module(g.module)
    except ImportError:
        return None
    with warnings.catch_warnings():
        # tree-sitter-dockerfile still hands over an int pointer, which tree-sitter 0.25+ deprecates but accepts.
        warnings.simplefilter("ignore", DeprecationWarning)
        return Parser(Language(getattr(mod, g.func)()))


def grammar_available(language: str) -> bool:
    return language in GRAMMARS and _parser(language) is not None


def _text(node) -> str:
    return node.text.decode("utf-8", errors="replace") if node is not None else ""


def _declarator_name(node) -> str:
    """The name inside a C/C++ declarator chain: `int *(*foo)(int)` -> foo, `Foo::bar` -> Foo::bar."""
    seen = 0
    while node is not None and seen < 12:
        if node.type in _NAME_TYPES:
            return _text(node)
        nxt = node.child_by_field_name("declarator") or node.child_by_field_name("name")
        if nxt is None:
            nxt = next((c for c in node.named_children if c.type in _NAME_TYPES or "declarator" in c.type), None)
        node, seen = nxt, seen + 1
    return ""


def _ts_name(node, language: str) -> str:
    t = node.type
    if language == "make" and t == "rule":
        targets = next((c for c in node.named_children if c.type == "targets"), None)
        return _text(targets).strip()
    if t == "type_declaration":           # Go: type Server struct {...}
        spec = next((c for c in node.named_children if c.type in ("type_spec", "type_alias")), None)
        return _text(spec.child_by_field_name("name")) if spec is not None else ""
    if t == "type_definition":            # C: typedef struct {...} name;
        return _declarator_name(node.child_by_field_name("declarator"))
    if t == "impl_item":                  # Rust: impl Trait for Type -> Type
        return _text(node.child_by_field_name("type"))
    if t == "method_declaration" and language == "go":
        recv = node.child_by_field_name("receiver")
        rtype = ""
        if recv is not None:
            ids = [n for n in _walk(recv) if n.type == "type_identifier"]
            rtype = _text(ids[0]) if ids else ""
        name = _text(node.child_by_field_name("name"))
        return f"{rtype}.{name}" if rtype else name
    name = node.child_by_field_name("name")
    if name is not None:
        return _text(name)
    decl = node.child_by_field_name("declarator")
    if decl is not None:
        return _declarator_name(decl)
    return ""


def _walk(node):
    stack = [node]
    while stack:
        n = stack.pop()
        yield n
        stack.extend(reversed(n.children))


def _ts_call(node, language: str) -> str:
    t = node.type
    if t == "method_invocation":          # Java: obj.name(...)
        obj = node.child_by_field_name("object")
        name = _text(node.child_by_field_name("name"))
        return f"{_text(obj)}.{name}" if obj is not None else name
    if t == "object_creation_expression":
        return _text(node.child_by_field_name("type"))
    if t == "new_expression":
        return _text(node.child_by_field_name("constructor"))
    if t == "command":                    # shell: the command name
        return _text(node.child_by_field_name("name"))
    if t == "macro_invocation":
        return _text(node.child_by_field_name("macro")) + "!"
    fn = node.child_by_field_name("function")
    return _text(fn)


def _clean_call(name: str) -> str:
    name = re.sub(r"\s+", "", name)
    name = re.sub(r"<[^<>]*>", "", name)        # template / generic arguments
    return name[:80]


def _end_line(node) -> int:
    """The 1-based last line of a node; a node that swallowed its trailing newline ends on the line before."""
    row, col = node.end_point
    return row if col == 0 and row > node.start_point[0] else row + 1


def _leading_comments(node, language: str) -> tuple[int, str]:
    """Comments directly above a definition (its documentation): (first line, comment text)."""
    start = node.start_point[0]
    texts = []
    prev = node.prev_sibling
    while prev is not None and prev.type in ("comment", "line_comment", "block_comment") \
            and prev.end_point[0] >= start - 1:
        texts.append(_text(prev))
        start = prev.start_point[0]
        prev = prev.prev_sibling
    doc = "\n".join(reversed(texts))
    doc = re.sub(r"\s*\*+/\s*$", "", doc, flags=re.M)
    doc = re.sub(r"^\s*(/\*+!?|\*|//+[/!]?|#+)\s?", "", doc, flags=re.M).strip()
    return start + 1, doc


def _has_test_marker(node, language: str) -> bool:
    """Rust `#[test]` attributes and Java `@Test` annotations mark tests whatever their name."""
    if language == "rust":
        prev = node.prev_named_sibling
        while prev is not None and prev.type == "attribute_item":
            if re.search(r"\btest\b", _text(prev)):
                return True
            prev = prev.prev_named_sibling
    if language == "java":
        mods = next((c for c in node.named_children if c.type == "modifiers"), None)
        return mods is not None and "@Test" in _text(mods)
    return False


def _ts_chunks(repo: str, path: str, source: str, language: str) -> list[CodeChunk]:
    nlines = source.count("\n") + 1
    parser = _parser(language) if language in GRAMMARS else None
    if parser is None:
        return [CodeChunk(repo, path, "file", path, language, 1, nlines,
                          _cut(f"# {path} (no {language} grammar installed)\n{source}", 2000))]
    g = GRAMMARS[language]
    src = source.encode("utf-8")
    tree = parser.parse(src)
    root = tree.root_node
    test_file = is_test_path(path)
    lines = source.splitlines() + [""]
    chunks: list[CodeChunk] = []
    imports: list[str] = []
    outline: list[str] = []
    module_nodes: list = []

    def calls_of(node) -> list[str]:
        seen: dict[str, None] = {}
        for n in _walk(node):
            if n.type in g.calls:
                name = _clean_call(_ts_call(n, language))
                if name:
                    seen.setdefault(name, None)
            elif n.type == "token_tree":
                # Rust macro arguments are unparsed tokens: `assert_eq!(count(x), 1)` still calls `count`
                kids = n.children
                for a, b in zip(kids, kids[1:]):
                    if a.type == "identifier" and b.type == "token_tree" and _text(b).startswith("("):
                        seen.setdefault(_text(a), None)
        return list(seen)

    def signature(node) -> str:
        body = node.child_by_field_name("body")
        end = body.start_byte if body is not None else node.end_byte
        sig = src[node.start_byte:end].decode("utf-8", errors="replace")
        return re.sub(r"\s+", " ", sig).strip().rstrip("{").strip()[:300]

    def emit_function(node, prefix: str, in_test_scope: bool, outer=None) -> None:
        outer = outer or node
        if outer.parent is not None and outer.parent.type in ("export_statement", "template_declaration"):
            outer = outer.parent              # `export function f` / `template <T> T f`: docs sit above the wrapper
        name = _ts_name(node, language)
        if not name:
            return
        qual = prefix + name.replace("::", ".")
        start, doc = _leading_comments(outer, language)
        end = _end_line(outer)
        while end > start and not lines[end - 1].strip():     # a Make rule swallows the blank line after it
            end -= 1
        if language == "make":
            if name.startswith("."):          # .PHONY, .SUFFIXES: special targets, not entry points
                return
            prereq = next((c for c in node.named_children if c.type == "prerequisites"), None)
            calls = _text(prereq).split() if prereq is not None else []
            kind, sig = "target", _text(node).splitlines()[0]
        else:
            calls = calls_of(node)
            low = name.rsplit(".", 1)[-1].rsplit("::", 1)[-1]
            is_test = _has_test_marker(outer, language) or (
                (test_file or in_test_scope) and re.match(r"(?i)test", low) is not None)
            kind, sig = ("test" if is_test else "function"), signature(node)
        outline.append(f"{'  ' * prefix.count('.')}{sig}")
        chunks.append(CodeChunk(repo, path, kind, qual, language, start, end,
                                _cut(_lines(source, start, end)), signature=sig, doc=doc, calls=calls))

    def visit(node, prefix: str, in_test_scope: bool, top: bool) -> None:
        for child in node.named_children:
            t = child.type
            if t in g.imports:
                imp = _text(child.child_by_field_name("path")) or _text(child.child_by_field_name("source")) \
                    or _text(child.child_by_field_name("argument"))
                if not imp:
                    imp = re.sub(r"^(import|use|#include|using|include|-include)\s+|;$", "", _text(child).strip())
                imports.append(imp.strip().strip("\"'<>"))
                continue
            if t == "import_declaration" and language == "go":
                imports.extend(_text(n.child_by_field_name("path")).strip('"`')
                               for n in _walk(child) if n.type == "import_spec")
                continue
            if t in g.functions:
                emit_function(child, prefix, in_test_scope)
                continue
            if t in ("lexical_declaration", "variable_declaration") and language in ("javascript", "typescript", "tsx"):
                decl = next((c for c in child.named_children if c.type == "variable_declarator"), None)
                value = decl.child_by_field_name("value") if decl is not None else None
                if value is not None and value.type in _JS_FUNC_VALUES:
                    emit_function(decl, prefix, in_test_scope, outer=child)
                    continue
            if t in g.classes:
                name = _ts_name(child, language)
                if name:
                    wrapper = child.parent if child.parent is not None and child.parent.type in (
                        "export_statement", "template_declaration") else child
                    start, doc = _leading_comments(wrapper, language)
                    end = _end_line(wrapper)
                    body = child.child_by_field_name("body")
                    sig = signature(child)
                    before = len(chunks)
                    visit(body if body is not None else child, f"{prefix}{name}.", in_test_scope, False)
                    members = [c.signature for c in chunks[before:]]
                    text = "\n".join([sig] + ([doc] if doc else []) + [f"  {m}" for m in members]) \
                        if members else _lines(source, start, end)
                    chunks.insert(before, CodeChunk(repo, path, "class", f"{prefix}{name}", language, start, end,
                                                    _cut(text), signature=sig, doc=doc, calls=calls_of(child)
                                                    if not members else []))
                    outline.insert(len(outline) - len(members), f"{'  ' * prefix.count('.')}{sig}")
                    continue
            if t in g.scopes:
                name = _ts_name(child, language) if t in ("namespace_definition", "impl_item", "mod_item",
                                                          "internal_module", "module") else ""
                test_scope = in_test_scope or (t == "mod_item" and name == "tests")
                body = child.child_by_field_name("body") or child
                if t in _IN_PLACE:
                    body = child
                visit(body, f"{prefix}{name}." if name else prefix, test_scope, top and t in _KEEP_TOP)
                continue
            if top and t not in _NOT_MODULE:
                module_nodes.append(child)

    visit(root, "", False, True)

    if language in ("javascript", "typescript", "tsx"):
        # describe("...", () => ...) / it("...") at the top of a test file: each is a test chunk.
        rest = []
        for node in module_nodes:
            call = node.named_children[0] if node.type == "expression_statement" and node.named_children else None
            fn = call.child_by_field_name("function") if call is not None and call.type == "call_expression" else None
            if fn is not None and _text(fn) in _JS_TEST_CALLS:
                args = call.child_by_field_name("arguments")
                title = _text(args.named_children[0]).strip("\"'`") if args is not None and args.named_children else ""
                s, e = node.start_point[0] + 1, _end_line(node)
                chunks.append(CodeChunk(repo, path, "test", f"{_text(fn)}:{title}"[:120], language, s, e,
                                        _cut(_lines(source, s, e)), calls=calls_of(node)))
            else:
                rest.append(node)
        module_nodes = rest

    if language == "dockerfile":
        chunks.extend(_docker_stages(repo, path, source, root))
        module_nodes = []

    if module_nodes:
        start, end = module_nodes[0].start_point[0] + 1, _end_line(module_nodes[-1])
        body = "\n".join(_lines(source, n.start_point[0] + 1, _end_line(n)) for n in module_nodes)
        calls = []
        for n in module_nodes:
            calls += [c for c in calls_of(n) if c not in calls]
        chunks.append(CodeChunk(repo, path, "module", "<module>", language, start, end, _cut(body),
                                doc="module-level code: constants, globals, top-level commands", calls=calls))

    head = [f"# {path} ({language})"]
    if imports:
        head.append("imports: " + ", ".join(imports))
    head += outline
    file_chunk = CodeChunk(repo, path, "file", path, language, 1, nlines, _cut("\n".join(head)), imports=imports)
    if root.has_error:
        file_chunk.doc = "parsed with errors: some definitions may be missing"
    return [file_chunk] + chunks


def _docker_stages(repo: str, path: str, source: str, root) -> list[CodeChunk]:
    """One chunk per build stage (FROM ... up to the next FROM); calls are the stages and images it uses."""
    out: list[CodeChunk] = []
    stages: list[list] = []
    for child in root.named_children:
        if child.type == "from_instruction":
            stages.append([child])
        elif stages and child.type != "comment":
            stages[-1].append(child)
    for i, nodes in enumerate(stages):
        frm = nodes[0]
        alias = next((c for c in frm.named_children if c.type == "image_alias"), None)
        image = next((c for c in frm.named_children if c.type == "image_spec"), None)
        name = _text(alias) or f"stage{i}"
        s, e = frm.start_point[0] + 1, _end_line(nodes[-1])
        out.append(CodeChunk(repo, path, "stage", name, "dockerfile", s, e, _cut(_lines(source, s, e)),
                             signature=_text(frm), calls=[_text(image)] if image is not None else []))
    return out


# --- configuration files ----------------------------------------------------------------------------------


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


def _config_chunks(repo: str, path: str, source: str, language: str) -> list[CodeChunk]:
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
                          _cut(f"# {path} (not valid {language}: {str(exc).splitlines()[0][:200]})\n{source}", 2000))]
    flat = _flatten(data)
    text = "\n".join(f"{k} = {v}" for k, v in flat)
    header = f"# {path} ({language} configuration, {len(flat)} settings)"
    file_chunk = CodeChunk(repo, path, "file", path, language, 1, nlines,
                           _cut(f"{header}\n" + ("top-level keys: " + ", ".join(map(str, data))
                                                if isinstance(data, dict) else ""), 2000))
    if len(flat) <= CONFIG_LINES_PER_CHUNK or not isinstance(data, dict):
        return [file_chunk, CodeChunk(repo, path, "config", stem, language, 1, nlines, _cut(f"{header}\n{text}"),
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
                             _cut(f"# {path} [{key}]\n" + "\n".join(f"{k} = {v}" for k, v in part)),
                             doc=_settings_words(part)))
    return out


def _settings_words(flat: list[tuple[str, str]], limit: int = 60) -> str:
    """Setting names in words (`optimizer.warmup_steps` -> optimizer warmup steps): what a question says."""
    names = dict.fromkeys(" ".join(split_identifier(re.sub(r"\[\d+\]", "", k))) for k, _ in flat)
    return "configuration settings (hyperparameters): " + ", ".join(list(names)[:limit])


# --- calls, callers and tests across a repository ---------------------------------------------------------

_CALLABLE = {"function", "test", "class", "target", "stage"}


# Method names that builtin and library types share with almost any class: never resolved by name alone.
_COMMON_METHODS = set("""
add append apply clear close copy count decode delete discard encode end exists extend find format get index init
insert items join keys load lower open pop push read readline remove replace reset resolve run save send set
sort split start stop strip update upper values write begin size len length next call to close flush wait
""".split())
_FOREIGN_RECEIVERS = {"np", "numpy", "torch", "tf", "os", "sys", "re", "json", "math", "std", "fmt", "console",
                      "Math", "JSON", "Object", "Array", "path", "Path", "pd", "plt", "logging", "logger", "log"}


def _last(name: str) -> str:
    return re.split(r"\.|::|->", name.rstrip("!"))[-1]


def link_calls(chunks: list[CodeChunk]) -> list[CodeChunk]:
    """Resolve every chunk's calls to refs within the repository, then fill callers and test links.

    A call resolves by its last name (`self.step` -> `step`): to a definition in the same file first, then in a
    file the caller imports, then to the one definition of that name in the repository. An ambiguous name
    resolves to nothing rather than to a guess. Tests also link to the definition their name names
    (`test_parse_pdf` -> `parse_pdf`).
    """
    by_name: dict[str, list[CodeChunk]] = defaultdict(list)
    imports: dict[str, list[str]] = {}
    for c in chunks:
        if c.kind in _CALLABLE:
            by_name[_last(c.symbol)].append(c)
        if c.kind == "file":
            imports[c.path] = c.imports
    for c in chunks:
        c.callees, c.callers = [], []
        if c.kind == "test":
            c.tests = []
        elif c.kind != "repository":
            c.tests = []
    by_ref = {c.ref: c for c in chunks}

    def imported(caller: CodeChunk, target: CodeChunk) -> bool:
        mod = _module_name(target.path)
        stem = PurePosixPath(target.path).stem
        for imp in imports.get(caller.path, []):
            tail = imp.lstrip(".")
            if tail and (tail == mod or mod.endswith(tail) or tail.startswith(mod + ".")
                         or tail.endswith("." + stem) or tail.split(".")[0] == stem or stem in tail.split("/")):
                return True
        return False

    def resolve(caller: CodeChunk, call: str) -> CodeChunk | None:
        name = _last(call)
        cands = [t for t in by_name.get(name, []) if t.ref != caller.ref]
        if not cands:
            return None
        recv = call[: len(call.rstrip("!")) - len(name)].rstrip(".:->")
        if not recv:
            # a bare name: a function or class of this file, of an imported file, or the only one anywhere
            plain = [t for t in cands if "." not in t.symbol or t.kind in ("target", "stage")]
            for pool in ([t for t in plain if t.path == caller.path], [t for t in plain if imported(caller, t)], plain):
                if len(pool) == 1:
                    return pool[0]
                if pool:
                    return None
            return None
        if recv in ("self", "cls", "this", "Self", "super()"):
            owner = caller.symbol.rsplit(".", 1)[0] if "." in caller.symbol else ""
            same = [t for t in cands if t.path == caller.path and t.symbol == f"{owner}.{name}"]
            return same[0] if same else None
        head = re.split(r"\.|::|->", recv)[-1]
        # Class.method or module.function: the receiver names a class or a module of this repository
        named = [t for t in cands if t.symbol.endswith(f"{head}.{name}")
                 or (("." not in t.symbol) and PurePosixPath(t.path).stem == head)]
        if len(named) == 1:
            return named[0]
        if named:
            return None
        # obj.method on a value of unknown type: only a method name that is unique and not a commonplace one
        methods = [t for t in cands if "." in t.symbol]
        if len(methods) == 1 and name.lower() not in _COMMON_METHODS and head not in _FOREIGN_RECEIVERS:
            return methods[0]
        return None

    for c in chunks:
        if c.kind in ("repository", "file", "config"):
            continue
        for call in c.calls:
            target = resolve(c, call)
            if target is not None and target.ref not in c.callees:
                c.callees.append(target.ref)
                if c.ref not in target.callers:
                    target.callers.append(c.ref)
    for c in chunks:
        if c.kind != "test":
            continue
        tested = [r for r in c.callees if by_ref[r].kind != "test"]
        m = re.match(r"(?i)^test_?(.+)$", _last(c.symbol.split(":")[-1]))
        if m:
            for t in by_name.get(m.group(1), []) + by_name.get(m.group(1)[:1].lower() + m.group(1)[1:], []):
                if t.kind != "test" and t.ref not in tested:
                    tested.append(t.ref)
        c.tests = tested
        for r in tested:
            if c.ref not in by_ref[r].tests:
                by_ref[r].tests.append(c.ref)
    return chunks


# --- the repository as a whole ----------------------------------------------------------------------------


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
    return _cut("\n\n".join(keep), max_chars)


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
    return CodeChunk(summary.name, "", "repository", summary.name, "", 0, 0, _cut("\n\n".join(parts)),
                     doc=summary.readme.split("\n\n")[0][:300], file_hash=commit)
