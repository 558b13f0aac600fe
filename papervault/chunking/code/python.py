"""Python files, read with `ast`: a file chunk, then classes, functions, tests and module-level code."""

from __future__ import annotations

import ast
from typing import Iterable

from papervault.chunking.code.chunk import CodeChunk, cut_text, line_range
from papervault.chunking.code.languages import is_test_path, module_name

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


# long: one walk of the module's syntax tree emitting module, class and function chunks in source order, with
# the line bookkeeping they share
def python_chunks(repo: str, path: str, source: str) -> list[CodeChunk]:
    module = module_name(path)
    nlines = source.count("\n") + 1
    test_file = is_test_path(path)
    try:
        tree = ast.parse(source)
    except (SyntaxError, ValueError) as exc:
        return [CodeChunk(repo, path, "file", module, "python", 1, nlines,
                          cut_text(f"# {path} (does not parse: {exc.__class__.__name__}: {exc})\n{source}", 2000))]

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
            chunks.append(CodeChunk(repo, path, "class", qual, "python", start, end, cut_text("\n".join(summary)),
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
        chunks.append(CodeChunk(repo, path, kind, qual, "python", start, end, cut_text(line_range(source, start, end)),
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
        body = "\n".join(line_range(source, s.lineno, s.end_lineno or s.lineno) for s in module_stmts)
        chunks.append(CodeChunk(repo, path, "module", "<module>", "python", start, end, cut_text(body),
                                doc="module-level code: constants, registrations, configuration",
                                calls=_calls_in(module_stmts)))
    if main_block is not None:
        start, end = main_block.lineno, main_block.end_lineno or main_block.lineno
        chunks.append(CodeChunk(repo, path, "module", "__main__", "python", start, end,
                                cut_text(line_range(source, start, end)), doc="entry point: runs when executed as a script",
                                calls=_calls_in(main_block.body)))

    mdoc = ast.get_docstring(tree) or ""
    head = [f"# {path} (module {module})"]
    if mdoc:
        head.append(mdoc)
    if imports:
        head.append("imports: " + ", ".join(imports))
    head += outline
    file_chunk = CodeChunk(repo, path, "file", module, "python", 1, nlines, cut_text("\n".join(head)),
                           doc=mdoc.split("\n\n")[0], imports=imports)
    return [file_chunk] + chunks
