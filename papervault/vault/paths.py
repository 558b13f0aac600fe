"""The one check every reader of vault files goes through: a path that leads out of the vault is never read.

A vault is shared (git pull from a collaborator, a synced folder), so a file or folder in it may be a symbolic
link to `/etc/passwd` or to `~/.ssh`. MCP tools and resources, the index, the site and the survey read vault
files only through `safe_vault_path`, which resolves every link on the way and refuses a path that ends
outside the vault. A link that stays inside the vault is followed.
"""

from __future__ import annotations

import logging
import os
from pathlib import Path

from papervault.errors import UnsafePathError

log = logging.getLogger("papervault.vault")


def safe_vault_path(vault_root: Path | str, rel: Path | str) -> Path:
    """`vault_root / rel` resolved; UnsafePathError when it, or a folder on its way, is a link out of the vault
    (or `rel` climbs out with `..`). The file need not exist."""
    root = Path(os.path.realpath(vault_root))
    p = Path(rel)
    if p.is_absolute():
        try:
            p = p.relative_to(vault_root)
        except ValueError:
            try:
                p = p.relative_to(root)
            except ValueError:
                raise UnsafePathError(f"{rel} is outside the vault",
                                      fix="keep every file of the vault inside its folder") from None
    real = Path(os.path.realpath(root / p))
    if real != root and root not in real.parents:
        raise UnsafePathError(f"{p.as_posix()} leads out of the vault (to {real}); not read",
                              fix=f"replace the link with a copy of the file, or remove it: rm {root / p}")
    return real


def is_safe(vault_root: Path | str, rel: Path | str) -> bool:
    """True when `rel` stays inside the vault; a refused path is logged as one warning line."""
    try:
        safe_vault_path(vault_root, rel)
        return True
    except UnsafePathError as exc:
        log.warning("%s", exc)
        return False


# --- writes ------------------------------------------------------------------------------------------------
#
# The one guard every write, delete and rename the vault makes goes through (`Vault.write`, `Vault.remove`,
# `Vault.remove_tree`, `Vault.move`, rekey's rewrites, the add journal's rollback, the PDF store). A shared
# vault may carry `papers/x/figures -> ~/Pictures` or `papers/x/paper.md -> ~/.bashrc`; writing, deleting or
# renaming through such a link would change files outside the vault. The guard resolves every link on the way
# and refuses, with one line, a path whose real location leaves `within` (the vault root; `pdfs/` for the PDF
# store). Nothing is written, deleted or renamed then.

_DONE = {"write": "not written", "delete": "not deleted", "rename": "not renamed"}


def guard(root: Path | str, path: Path | str, action: str = "write", *, follow: bool = True,
          within: Path | str | None = None) -> Path:
    """`path` (absolute, or relative to `root`) as an absolute path, after checking that its real location
    stays inside `within` (default: `root`). UnsafePathError otherwise, naming the link and the fix.

    `follow=False` checks the folder that holds the entry but not the entry itself: removing a link (or
    replacing it by a new file) touches only the link, never what it points to. With `follow=True` (the
    default) a final link out is refused too, so `path.write_text` through a linked file never writes
    outside."""
    root = Path(root)
    real_root = Path(os.path.realpath(within if within is not None else root))
    p = Path(path)
    if not p.is_absolute():
        p = root / p
    p = Path(os.path.normpath(p))          # `a/../b` is checked where it lands, not where it seems to be
    checked = p if follow else p.parent
    real = Path(os.path.realpath(checked))
    if real != real_root and real_root not in real.parents:
        try:
            shown = p.relative_to(root).as_posix()
        except ValueError:
            shown = str(p)
        raise UnsafePathError(f"{shown} leads out of {_where(root, real_root, within)} (to {real}); "
                              f"{_DONE.get(action, 'not changed')}",
                              fix=f"replace the link with a real folder or file, or remove it: rm {_link_on(root, p)}")
    return p


def _where(root: Path, real_root: Path, within) -> str:
    return "the vault" if within is None else f"{real_root.name}/"


def _link_on(root: Path, p: Path) -> Path:
    """The first symbolic link below `root` on the way to `p` (what to remove), else `p`."""
    for q in [*reversed(p.parents), p]:
        if q != root and root in q.parents and q.is_symlink():
            return q
    return p
