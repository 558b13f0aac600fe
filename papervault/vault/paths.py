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
