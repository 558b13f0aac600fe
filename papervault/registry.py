"""The registries of what can be plugged in: model backends, site engines and sync sources, found one way.

Each kind is an entry-point group (`papervault.backends`, `papervault.site_engines`, `papervault.sync_sources`).
The built-ins are registered through the same entry points, in papervault's own `pyproject.toml`, and another
package adds one by declaring an entry point in its group:

    [project.entry-points."papervault.backends"]
    mybackend = "mypackage.backend:SPEC"

The object an entry point names is the kind's description of it (a `BackendSpec`, a `SiteEngine`, a sync source
class); it is imported only when that name is used, so listing the names (the command line's choices, its help,
the MCP tools' descriptions) imports nothing. `register` adds one in-process (tests, a notebook), and wins over
an entry point of the same name.

Entry points rather than a hook system: importlib.metadata is in the standard library and names each plugin
without importing it, which keeps `papervault --help` and the MCP server's start-up light; none of the three
kinds needs hooks that run in sequence or wrap each other, which is what pluggy adds (and pluggy is not a
dependency).
"""

from __future__ import annotations

import sys
import threading
from importlib.metadata import EntryPoint, entry_points
from typing import Any, Generic, TypeVar

T = TypeVar("T")

OWN_DISTRIBUTION = "papervault"

# The built-ins as pyproject.toml declares them (tests/test_registry.py checks the two agree). They are used only
# when papervault's own distribution declares none in a group: run from a source folder, or from an install made
# before the group existed (a `git pull` without `pip install -e .`), where the command line would otherwise offer
# no backend at all.
BUILTINS: dict[str, dict[str, str]] = {
    "papervault.backends": {"extractive": "papervault.agents:EXTRACTIVE", "claude": "papervault.agents:CLAUDE",
                            "openai": "papervault.agents:OPENAI"},
    "papervault.site_engines": {"mkdocs": "papervault.site.build:MKDOCS",
                                "zensical": "papervault.site.build:ZENSICAL"},
    "papervault.sync_sources": {"zotero": "papervault.app.syncsources:ZoteroSource",
                                "folder": "papervault.app.syncsources:FolderSource",
                                "arxiv": "papervault.app.syncsources:ArxivQuerySource",
                                "arxiv_versions": "papervault.app.syncsources:ArxivVersionsSource"},
}


class Registry(Generic[T]):
    """Named plugins of one kind: papervault's own entry points first, then other packages' (each by name; an
    installed package's entry points carry no order), then those registered in-process (in the order they came).
    A name is case-insensitive; the first of two entry points of the same name wins."""

    def __init__(self, kind: str, group: str):
        self.kind = kind
        self.group = group
        self._added: dict[str, T] = {}
        self._loaded: dict[str, tuple[EntryPoint, T]] = {}      # name -> (the entry point, what it named)
        self._lock = threading.Lock()
        self._seen: tuple[tuple[str, ...], dict[str, EntryPoint]] | None = None

    def _entry_points(self) -> dict[str, EntryPoint]:
        # Reading the installed distributions' metadata costs tens of milliseconds in a large environment, so it
        # is read once per `sys.path`: a path added later (a plugin's folder) is read again.
        path = tuple(sys.path)
        seen = self._seen
        if seen is not None and seen[0] == path:
            return seen[1]
        own: dict[str, EntryPoint] = {}
        others: dict[str, EntryPoint] = {}
        for ep in entry_points(group=self.group):
            dist = getattr(ep, "dist", None)
            mine = dist is not None and (dist.metadata["Name"] or "").lower() == OWN_DISTRIBUTION
            (own if mine else others).setdefault(ep.name.strip().lower(), ep)
        if not own:
            own = {name: EntryPoint(name, value, self.group) for name, value in BUILTINS[self.group].items()}
        found = {**{k: own[k] for k in sorted(own)}, **{k: others[k] for k in sorted(others) if k not in own}}
        self._seen = (path, found)
        return found

    def names(self) -> tuple[str, ...]:
        """Every registered name, without importing any plugin."""
        eps = self._entry_points()
        return tuple(eps) + tuple(n for n in self._added if n not in eps)

    def __contains__(self, name: object) -> bool:
        return isinstance(name, str) and name.strip().lower() in self.names()

    def register(self, name: str, obj: T) -> None:
        key = name.strip().lower()
        with self._lock:
            self._added[key] = obj
            self._loaded.pop(key, None)

    def unregister(self, name: str) -> None:
        """Forget a plugin `register` added (an entry point stays: it is installed)."""
        with self._lock:
            self._added.pop(name.strip().lower(), None)

    def get(self, name: str) -> T:
        """The plugin called `name` (its entry point loaded on first use); KeyError when there is none."""
        key = name.strip().lower()
        with self._lock:
            if key in self._added:
                return self._added[key]
        ep = self._entry_points().get(key)
        if ep is None:
            raise KeyError(key)
        with self._lock:
            seen = self._loaded.get(key)
            if seen is not None and seen[0] is ep:        # the same entry point as when it was loaded
                return seen[1]
        obj = ep.load()
        with self._lock:
            self._loaded[key] = (ep, obj)
        return obj

    def items(self) -> dict[str, T]:
        """Every plugin by name, loaded."""
        return {n: self.get(n) for n in self.names()}


BACKENDS: Registry[Any] = Registry("backend", "papervault.backends")
SITE_ENGINES: Registry[Any] = Registry("site engine", "papervault.site_engines")
SYNC_SOURCES: Registry[Any] = Registry("sync source", "papervault.sync_sources")
