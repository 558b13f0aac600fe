"""C, C++, CUDA, JavaScript/TypeScript, Rust, Go, Java, shell, Makefiles and Dockerfiles, through the tree-sitter
grammars from the package registries (each grammar package ships its compiled parser, so nothing is fetched at
run time)."""

from __future__ import annotations

import dataclasses
import importlib
import importlib.resources
import re
import warnings
from dataclasses import dataclass
from functools import lru_cache

from tree_sitter import Language, Parser, Query, QueryCursor

from papervault.chunking.code.chunk import CodeChunk, cut_text, line_range
from papervault.chunking.code.languages import is_test_path


@dataclass(frozen=True)
class _Grammar:
    module: str
    func: str = "language"
    # Grammar packages whose `queries/tags.scm` name this language's definitions (functions, methods, classes,
    # interfaces, types). The tables below add only what those queries leave out, and, for a grammar that ships
    # no tags query (shell, Make, Dockerfile), name its definitions.
    tags: tuple[str, ...] = ()
    functions: frozenset = frozenset()     # definitions that become function chunks
    classes: frozenset = frozenset()       # definitions that become class chunks and qualify their members
    scopes: frozenset = frozenset()        # containers that only qualify (namespaces, impl blocks, modules)
    calls: frozenset = frozenset()         # call expressions (tags.scm names few: none in C and C++)
    imports: frozenset = frozenset()       # (tags.scm names none)
    comment: str = "comment"


_PREPROC = frozenset({"preproc_ifdef", "preproc_if", "preproc_else", "preproc_elif"})
_CPP_SCOPES = frozenset({"namespace_definition", "template_declaration", "linkage_specification"}) | _PREPROC
_C_CALLS = frozenset({"call_expression"})
_CPP_CLASSES = frozenset({"class_specifier", "struct_specifier", "union_specifier", "enum_specifier"})
_JS_CALLS = frozenset({"call_expression", "new_expression"})
GRAMMARS: dict[str, _Grammar] = {
    # C, C++ and CUDA keep their own tables: their grammars' tags.scm (CUDA's would be C++'s) name every member
    # typedef a type and miss template specialisations, operators, destructors and function-pointer typedefs
    # (on 356 sample files, 244 more and 61 fewer chunks); docs/code.md
    "c": _Grammar("tree_sitter_c", functions=frozenset({"function_definition"}),
                  classes=frozenset({"struct_specifier", "union_specifier", "enum_specifier", "type_definition"}),
                  scopes=_PREPROC, calls=_C_CALLS, imports=frozenset({"preproc_include"})),
    "cpp": _Grammar("tree_sitter_cpp", functions=frozenset({"function_definition"}), classes=_CPP_CLASSES,
                    scopes=_CPP_SCOPES, calls=_C_CALLS, imports=frozenset({"preproc_include", "using_declaration"})),
    "cuda": _Grammar("tree_sitter_cuda", functions=frozenset({"function_definition"}), classes=_CPP_CLASSES,
                     scopes=_CPP_SCOPES, calls=_C_CALLS, imports=frozenset({"preproc_include"})),
    # tags.scm leaves out constructors (`#not-eq? @name "constructor"`)
    "javascript": _Grammar("tree_sitter_javascript", tags=("tree_sitter_javascript",),
                           functions=frozenset({"method_definition"}), scopes=frozenset({"export_statement"}),
                           calls=_JS_CALLS, imports=frozenset({"import_statement"})),
    # TypeScript's tags.scm names only what TypeScript adds to JavaScript: both apply; neither names an enum
    "typescript": _Grammar("tree_sitter_typescript", "language_typescript",
                           tags=("tree_sitter_typescript", "tree_sitter_javascript"),
                           functions=frozenset({"method_definition"}), classes=frozenset({"enum_declaration"}),
                           scopes=frozenset({"export_statement", "internal_module", "module"}),
                           calls=_JS_CALLS, imports=frozenset({"import_statement"})),
    "rust": _Grammar("tree_sitter_rust", tags=("tree_sitter_rust",), scopes=frozenset({"impl_item", "mod_item"}),
                     calls=frozenset({"call_expression", "macro_invocation"}),
                     imports=frozenset({"use_declaration", "extern_crate_declaration"})),
    "go": _Grammar("tree_sitter_go", tags=("tree_sitter_go",), calls=frozenset({"call_expression"}),
                   imports=frozenset({"import_spec"})),
    # tags.scm names no constructor, enum or record
    "java": _Grammar("tree_sitter_java", tags=("tree_sitter_java",), functions=frozenset({"constructor_declaration"}),
                     classes=frozenset({"enum_declaration", "record_declaration"}),
                     calls=frozenset({"method_invocation", "object_creation_expression"}),
                     imports=frozenset({"import_declaration"})),
    "bash": _Grammar("tree_sitter_bash", functions=frozenset({"function_definition"}),
                     calls=frozenset({"command"})),
    "make": _Grammar("tree_sitter_make", functions=frozenset({"rule"}), imports=frozenset({"include_directive"})),
    "dockerfile": _Grammar("tree_sitter_dockerfile"),
}
GRAMMARS["tsx"] = dataclasses.replace(GRAMMARS["typescript"], func="language_tsx")

# What a tags query's `@definition.<kind>` becomes: a function chunk or a class chunk (modules, macros and
# constants are not chunks of their own).
_TAG_KINDS = {"function": "function", "method": "function", "class": "class", "interface": "class",
              "type": "class"}
# A definition that tags.scm names by a part of it: Go's type by its spec.
_SPEC_OWNERS = {"type_spec": "type_declaration"}

_NAME_TYPES = {"identifier", "field_identifier", "qualified_identifier", "destructor_name", "operator_name",
               "type_identifier", "property_identifier", "scoped_identifier", "word", "private_property_identifier"}
_JS_TEST_CALLS = {"describe", "it", "test", "suite"}
# Containers visited through their own children (no body field), and those whose declarations stay module-level.
_IN_PLACE = {"export_statement", "template_declaration", "preproc_ifdef", "preproc_if", "preproc_else",
             "preproc_elif"}
_KEEP_TOP = {"export_statement", "namespace_definition", "linkage_specification", "preproc_ifdef", "preproc_if",
             "preproc_else", "preproc_elif"}
_NOT_MODULE = {"comment", "line_comment", "block_comment", "package_clause", "package_declaration",
               "attribute_item", "inner_attribute_item", "identifier", "preproc_arg", "template_parameter_list",
               "string_literal", "string", "namespace_identifier"}


@dataclass(frozen=True)
class _Language:
    parser: Parser
    tags: tuple[Query, ...]          # the grammar packages' tags queries, compiled for this language


@lru_cache(maxsize=None)
def _language(language: str) -> _Language | None:
    """A tree-sitter parser and the tags queries for `language`, or None when its grammar is not installed."""
    g = GRAMMARS[language]
    try:
        mod = importlib.import_module(g.module)
    except ImportError:
        return None
    with warnings.catch_warnings():
        # tree-sitter-dockerfile still hands over an int pointer, which tree-sitter 0.25+ deprecates but accepts.
        warnings.simplefilter("ignore", DeprecationWarning)
        lang = Language(getattr(mod, g.func)())
    queries = []
    for package in g.tags:
        try:
            scm = importlib.resources.files(package).joinpath("queries", "tags.scm").read_text(encoding="utf-8")
        except (ImportError, OSError):
            continue            # a grammar release without its tags query: the tables alone name definitions
        queries.append(Query(lang, scm))
    return _Language(Parser(lang), tuple(queries))


def grammar_available(language: str) -> bool:
    return language in GRAMMARS and _language(language) is not None


def _key(node) -> tuple[int, int, str]:
    return node.start_byte, node.end_byte, node.type


def _tagged_definitions(root, queries: tuple[Query, ...]) -> dict[tuple[int, int, str], str]:
    """The definitions the tags queries name in a tree: node -> "function" or "class".

    A definition named by a part of it is moved to its owner: a Go type spec to its declaration.
    """
    found: dict[tuple[int, int, str], str] = {}
    for query in queries:
        for _pattern, captures in QueryCursor(query).matches(root):
            for cap, nodes in captures.items():
                kind = _TAG_KINDS.get(cap.removeprefix("definition.")) if cap.startswith("definition.") else None
                if kind is None:
                    continue
                for node in nodes:
                    if node.type in _SPEC_OWNERS and node.parent is not None \
                            and node.parent.type == _SPEC_OWNERS[node.type]:
                        node = node.parent
                    found.setdefault(_key(node), kind)
    return found


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


def treesitter_chunks(repo: str, path: str, source: str, language: str) -> list[CodeChunk]:
    """The chunks of a file in a tree-sitter language: a file chunk first, then definitions, tests and the
    module-level code; a file whose grammar is not installed is one file chunk of its text."""
    nlines = source.count("\n") + 1
    lang = _language(language) if language in GRAMMARS else None
    if lang is None:
        return [CodeChunk(repo, path, "file", path, language, 1, nlines,
                          cut_text(f"# {path} (no {language} grammar installed)\n{source}", 2000))]
    walk = _FileWalk(repo, path, source, language, lang)
    walk.visit(walk.root, "", False, True)
    if language in ("javascript", "typescript", "tsx"):
        walk.js_test_blocks()
    if language == "dockerfile":
        walk.chunks.extend(_docker_stages(repo, path, source, walk.root))
        walk.module_nodes = []
    walk.module_chunk()
    return [walk.file_chunk()] + walk.chunks


class _FileWalk:
    """One file's syntax tree walked top-down: definitions become chunks, the rest is module-level code."""

    def __init__(self, repo: str, path: str, source: str, language: str, lang: _Language) -> None:
        self.repo, self.path, self.source, self.language = repo, path, source, language
        self.g = GRAMMARS[language]
        self.src = source.encode("utf-8")
        self.root = lang.parser.parse(self.src).root_node
        self.tagged = _tagged_definitions(self.root, lang.tags)
        self.test_file = is_test_path(path)
        self.lines = source.splitlines() + [""]
        self.chunks: list[CodeChunk] = []
        self.imports: list[str] = []
        self.outline: list[str] = []
        self.module_nodes: list = []

    # --- what a node is -----------------------------------------------------------------------------------

    def kind_of(self, node) -> str | None:
        """"function" or "class" for a definition (named by the tags queries, else by the tables), else None."""
        kind = self.tagged.get(_key(node))
        if kind is None:
            kind = "function" if node.type in self.g.functions else "class" if node.type in self.g.classes else None
        return kind

    def calls_of(self, node) -> list[str]:
        """The calls inside a node, as written (`self.step`, `np.mean`, `Foo::new`), each once."""
        seen: dict[str, None] = {}
        for n in _walk(node):
            if n.type in self.g.calls:
                name = _clean_call(_ts_call(n, self.language))
                if name:
                    seen.setdefault(name, None)
            elif n.type == "token_tree":
                # Rust macro arguments are unparsed tokens: `assert_eq!(count(x), 1)` still calls `count`
                kids = n.children
                for a, b in zip(kids, kids[1:]):
                    if a.type == "identifier" and b.type == "token_tree" and _text(b).startswith("("):
                        seen.setdefault(_text(a), None)
        return list(seen)

    def signature(self, node) -> str:
        """A definition's head: its text up to the body, on one line."""
        body = node.child_by_field_name("body")
        end = body.start_byte if body is not None else node.end_byte
        sig = self.src[node.start_byte:end].decode("utf-8", errors="replace")
        return re.sub(r"\s+", " ", sig).strip().rstrip("{").strip()[:300]

    # --- the walk -----------------------------------------------------------------------------------------

    def visit(self, node, prefix: str, in_test_scope: bool, top: bool) -> None:
        """Each named child of `node`: an import, a definition, a scope to walk into, or module-level code."""
        for child in node.named_children:
            t = child.type
            if t in self.g.imports:
                self.add_import(child)
            elif t == "import_declaration" and self.language == "go":
                self.imports.extend(_text(n.child_by_field_name("path")).strip('"`')
                                    for n in _walk(child) if n.type == "import_spec")
            elif self.kind_of(child) == "function":
                self.emit_function(child, prefix, in_test_scope)
            elif t in ("lexical_declaration", "variable_declaration") and self.js_function(child) is not None:
                self.emit_function(self.js_function(child), prefix, in_test_scope, outer=child)
            elif self.kind_of(child) == "class" and _ts_name(child, self.language):
                self.emit_class(child, prefix, in_test_scope)
            elif t in self.g.scopes:
                self.visit_scope(child, prefix, in_test_scope, top)
            elif top and t not in _NOT_MODULE:
                self.module_nodes.append(child)

    def add_import(self, node) -> None:
        imp = _text(node.child_by_field_name("path")) or _text(node.child_by_field_name("source")) \
            or _text(node.child_by_field_name("argument"))
        if not imp:
            imp = re.sub(r"^(import|use|#include|using|include|-include)\s+|;$", "", _text(node).strip())
        self.imports.append(imp.strip().strip("\"'<>"))

    def js_function(self, node):
        """`const f = () => ...`: the declarator the tags queries name a function, else None."""
        decl = next((c for c in node.named_children if c.type == "variable_declarator"), None)
        return decl if decl is not None and self.tagged.get(_key(decl)) == "function" else None

    def visit_scope(self, node, prefix: str, in_test_scope: bool, top: bool) -> None:
        """A namespace, impl block, module, export or preprocessor block: its members, qualified by its name."""
        t = node.type
        name = _ts_name(node, self.language) if t in ("namespace_definition", "impl_item", "mod_item",
                                                      "internal_module", "module") else ""
        test_scope = in_test_scope or (t == "mod_item" and name == "tests")
        body = node if t in _IN_PLACE else (node.child_by_field_name("body") or node)
        self.visit(body, f"{prefix}{name}." if name else prefix, test_scope, top and t in _KEEP_TOP)

    def emit_function(self, node, prefix: str, in_test_scope: bool, outer=None) -> None:
        """A function, method or Make target chunk (a test when marked or named so in a test file or scope)."""
        outer = outer or node
        if outer.parent is not None and outer.parent.type in ("export_statement", "template_declaration"):
            outer = outer.parent              # `export function f` / `template <T> T f`: docs sit above the wrapper
        name = _ts_name(node, self.language)
        if not name:
            return
        qual = prefix + name.replace("::", ".")
        start, doc = _leading_comments(outer, self.language)
        end = _end_line(outer)
        while end > start and not self.lines[end - 1].strip():     # a Make rule swallows the blank line after it
            end -= 1
        if self.language == "make":
            if name.startswith("."):          # .PHONY, .SUFFIXES: special targets, not entry points
                return
            prereq = next((c for c in node.named_children if c.type == "prerequisites"), None)
            calls = _text(prereq).split() if prereq is not None else []
            kind, sig = "target", _text(node).splitlines()[0]
        else:
            calls = self.calls_of(node)
            low = name.rsplit(".", 1)[-1].rsplit("::", 1)[-1]
            is_test = _has_test_marker(outer, self.language) or (
                (self.test_file or in_test_scope) and re.match(r"(?i)test", low) is not None)
            kind, sig = ("test" if is_test else "function"), self.signature(node)
        self.outline.append(f"{'  ' * prefix.count('.')}{sig}")
        self.chunks.append(CodeChunk(self.repo, self.path, kind, qual, self.language, start, end,
                                     cut_text(line_range(self.source, start, end)), signature=sig, doc=doc,
                                     calls=calls))

    def emit_class(self, node, prefix: str, in_test_scope: bool) -> None:
        """A class, struct, interface or type chunk, after its members (which it lists, qualified by its name)."""
        name = _ts_name(node, self.language)
        wrapper = node.parent if node.parent is not None and node.parent.type in (
            "export_statement", "template_declaration") else node
        start, doc = _leading_comments(wrapper, self.language)
        end = _end_line(wrapper)
        body = node.child_by_field_name("body")
        sig = self.signature(node)
        before = len(self.chunks)
        self.visit(body if body is not None else node, f"{prefix}{name}.", in_test_scope, False)
        members = [c.signature for c in self.chunks[before:]]
        text = "\n".join([sig] + ([doc] if doc else []) + [f"  {m}" for m in members]) \
            if members else line_range(self.source, start, end)
        self.chunks.insert(before, CodeChunk(self.repo, self.path, "class", f"{prefix}{name}", self.language, start,
                                             end, cut_text(text), signature=sig, doc=doc,
                                             calls=self.calls_of(node) if not members else []))
        self.outline.insert(len(self.outline) - len(members), f"{'  ' * prefix.count('.')}{sig}")

    # --- after the walk -----------------------------------------------------------------------------------

    def js_test_blocks(self) -> None:
        """`describe("...", () => ...)` / `it("...")` at the top of a JS/TS file: each is a test chunk."""
        rest = []
        for node in self.module_nodes:
            call = node.named_children[0] if node.type == "expression_statement" and node.named_children else None
            fn = call.child_by_field_name("function") if call is not None and call.type == "call_expression" else None
            if fn is not None and _text(fn) in _JS_TEST_CALLS:
                args = call.child_by_field_name("arguments")
                title = _text(args.named_children[0]).strip("\"'`") if args is not None and args.named_children else ""
                s, e = node.start_point[0] + 1, _end_line(node)
                self.chunks.append(CodeChunk(self.repo, self.path, "test", f"{_text(fn)}:{title}"[:120], self.language,
                                             s, e, cut_text(line_range(self.source, s, e)), calls=self.calls_of(node)))
            else:
                rest.append(node)
        self.module_nodes = rest

    def module_chunk(self) -> None:
        """The code outside every definition (constants, globals, top-level commands), as one chunk."""
        nodes = self.module_nodes
        if not nodes:
            return
        start, end = nodes[0].start_point[0] + 1, _end_line(nodes[-1])
        body = "\n".join(line_range(self.source, n.start_point[0] + 1, _end_line(n)) for n in nodes)
        calls: list[str] = []
        for n in nodes:
            calls += [c for c in self.calls_of(n) if c not in calls]
        self.chunks.append(CodeChunk(self.repo, self.path, "module", "<module>", self.language, start, end,
                                     cut_text(body), doc="module-level code: constants, globals, top-level commands",
                                     calls=calls))

    def file_chunk(self) -> CodeChunk:
        """The file chunk: the path and language, what the file imports and the outline of its definitions."""
        head = [f"# {self.path} ({self.language})"]
        if self.imports:
            head.append("imports: " + ", ".join(self.imports))
        head += self.outline
        nlines = self.source.count("\n") + 1
        chunk = CodeChunk(self.repo, self.path, "file", self.path, self.language, 1, nlines,
                          cut_text("\n".join(head)), imports=self.imports)
        if self.root.has_error:
            chunk.doc = "parsed with errors: some definitions may be missing"
        return chunk


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
        out.append(CodeChunk(repo, path, "stage", name, "dockerfile", s, e, cut_text(line_range(source, s, e)),
                             signature=_text(frm), calls=[_text(image)] if image is not None else []))
    return out
