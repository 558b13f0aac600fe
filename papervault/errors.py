"""Typed errors a user can hit; each carries a one-line message that says how to fix it."""

from __future__ import annotations


class PapervaultError(Exception):
    """Base class: the CLI prints `str(err)` without a traceback and exits with `exit_code`."""

    exit_code = 1

    def __init__(self, message: str, *, fix: str | None = None):
        self.message = message
        self.fix = fix
        super().__init__(f"{message}. {fix}" if fix else message)


class WorkspaceError(PapervaultError):
    """The workspace is missing or malformed."""


class ParseError(PapervaultError):
    """A source file could not be parsed (corrupt, encrypted, empty, not a PDF)."""

    def __init__(self, path, reason: str, *, fix: str | None = None):
        self.path = str(path)
        self.reason = reason
        super().__init__(f"{path}: {reason}", fix=fix)


class SourceError(PapervaultError):
    """A source (BibTeX file, Zotero database, URL, arXiv) could not be read."""


class IndexMismatchError(PapervaultError):
    """The index was built with another embedding model or chunker version."""


class BackendError(PapervaultError):
    """A model backend failed or answered with something unusable."""


class LockedError(PapervaultError):
    """Another papervault command holds the workspace write lock."""

    exit_code = 3


class NotFoundError(PapervaultError):
    """A paper, survey or file that was asked for does not exist."""


class SiteError(PapervaultError):
    """The static site could not be built or served."""


class UnsafePathError(NotFoundError):
    """A vault file is a symbolic link (or lies under one) that leads out of the vault; it is never read."""


class InputError(PapervaultError):
    """An argument a user or an agent passed is out of range or malformed."""
