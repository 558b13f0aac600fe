"""Calls, callers and tests across a repository: each chunk's calls, as written, resolved to refs."""

from __future__ import annotations

import re
from collections import defaultdict
from pathlib import PurePosixPath

from papervault.chunking.code.chunk import CodeChunk
from papervault.chunking.code.languages import module_name

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


# long: three passes (resolve calls, fill callers, link tests) over the same name tables built at its start
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
        mod = module_name(target.path)
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
