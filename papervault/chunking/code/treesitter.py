"""C, C++, CUDA, JavaScript/TypeScript, Rust, Go, Java, shell, Makefiles and Dockerfiles, through the tree-sitter
grammars from the package registries (each grammar package ships its compiled parser, so nothing is fetched at
run time)."""

from __future__ import annotations

import importlib
import re
import warnings
from dataclasses import dataclass
from functools import lru_cache

from papervault.chunking.code.chunk import CodeChunk, cut_text, line_range
from papervault.chunking.code.languages import is_test_path

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


def treesitter_chunks(repo: str, path: str, source: str, language: str) -> list[CodeChunk]:
    nlines = source.count("\n") + 1
    parser = _parser(language) if language in GRAMMARS else None
    if parser is None:
        return [CodeChunk(repo, path, "file", path, language, 1, nlines,
                          cut_text(f"# {path} (no {language} grammar installed)\n{source}", 2000))]
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
                                cut_text(line_range(source, start, end)), signature=sig, doc=doc, calls=calls))

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
                        if members else line_range(source, start, end)
                    chunks.insert(before, CodeChunk(repo, path, "class", f"{prefix}{name}", language, start, end,
                                                    cut_text(text), signature=sig, doc=doc, calls=calls_of(child)
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
                                        cut_text(line_range(source, s, e)), calls=calls_of(node)))
            else:
                rest.append(node)
        module_nodes = rest

    if language == "dockerfile":
        chunks.extend(_docker_stages(repo, path, source, root))
        module_nodes = []

    if module_nodes:
        start, end = module_nodes[0].start_point[0] + 1, _end_line(module_nodes[-1])
        body = "\n".join(line_range(source, n.start_point[0] + 1, _end_line(n)) for n in module_nodes)
        calls = []
        for n in module_nodes:
            calls += [c for c in calls_of(n) if c not in calls]
        chunks.append(CodeChunk(repo, path, "module", "<module>", language, start, end, cut_text(body),
                                doc="module-level code: constants, globals, top-level commands", calls=calls))

    head = [f"# {path} ({language})"]
    if imports:
        head.append("imports: " + ", ".join(imports))
    head += outline
    file_chunk = CodeChunk(repo, path, "file", path, language, 1, nlines, cut_text("\n".join(head)), imports=imports)
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
        out.append(CodeChunk(repo, path, "stage", name, "dockerfile", s, e, cut_text(line_range(source, s, e)),
                             signature=_text(frm), calls=[_text(image)] if image is not None else []))
    return out
