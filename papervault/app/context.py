"""What every stage of one run is given: `RunContext`, the typed settings object that travels with a run.

It holds the workspace with the settings the command read once (never read again from a root string by a
stage), and the run's own backend objects, one per name, built when first asked (in the writer's process once
per run, so its stages and threads share a backend's breaker and run log; a copy of the context that travelled
to a worker builds its own there: a backend never travels). To a worker
(a process, a Dask worker) it travels as the workspace's root and its settings, or only the sections the
operation's parts read (`sections`: an `add` ships the parser's, the embedder's and the analyser's, never the
index's storage credentials).
"""

from __future__ import annotations

import tempfile
import threading
from pathlib import Path
from typing import Any

from papervault.agents import Backend, get_backend
from papervault.config import Settings
from papervault.workspace import Workspace


class RunContext:
    def __init__(self, ws: Workspace, *, sections: tuple[str, ...] | None = None, **values: Any):
        self.ws = ws
        self.sections = sections
        self.values = values
        self._backends: dict[str, Backend] = {}
        self._lock = threading.Lock()

    def __getattr__(self, name: str) -> Any:
        values = self.__dict__.get("values") or {}
        if name in values:
            return values[name]
        raise AttributeError(name)

    @property
    def settings(self) -> Settings:
        return self.ws.settings

    def backend_for(self, name: str) -> Backend:
        """This run's backend of that name, built once per process (with a state folder of its own where the
        workspace's cannot be seen, on another machine)."""
        with self._lock:
            if name not in self._backends:
                state = self.ws.state_dir if self.ws.state_dir.is_dir() else \
                    Path(tempfile.mkdtemp(prefix="papervault-worker-"))
                self._backends[name] = get_backend(name, self.ws.settings, state_dir=state)
            return self._backends[name]

    def __getstate__(self) -> dict[str, Any]:
        settings = self.ws.settings
        if self.sections is not None:
            settings = Settings({n: getattr(settings, n).model_dump() for n in self.sections})
        return {"root": str(self.ws.root), "settings": settings, "sections": self.sections, "values": self.values}

    def __setstate__(self, state: dict[str, Any]) -> None:
        ws = Workspace(state["root"])
        ws.__dict__["settings"] = state["settings"]     # the settings the run started with, not read again
        RunContext.__init__(self, ws, sections=state["sections"], **state["values"])
