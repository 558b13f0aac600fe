#!/usr/bin/env bash
# Build papervault's wheel, install it into a fresh virtualenv and run `papervault demo` from it in an empty
# temporary folder: proves the distribution carries everything it needs (templates as package data, the site's
# pages and assets) and uses no file of the source tree. Used by .ci/run before `make test`; it builds what is
# committed (HEAD), as CI's clean clone has it.
set -euo pipefail
cd "$(dirname "$0")/.."
src="$(pwd)"
python="${PYTHON:-python3}"
work="$(mktemp -d "${TMPDIR:-/tmp}/papervault-wheel.XXXXXX")"
trap 'rm -rf "$work"' EXIT
: "${PAPERVAULT_EMBED_MODEL_PATH:?set PAPERVAULT_EMBED_MODEL_PATH to a local model folder (../shared/models/...)}"

echo "wheel: building from the committed tree (HEAD)"
# a copy: setuptools' build/ folder in the checkout could carry stale files into the wheel
mkdir "$work/src"
git -C "$src" archive HEAD | tar -x -C "$work/src"
"$python" -m pip wheel -q --no-deps -w "$work/dist" "$work/src"
wheel="$(ls "$work"/dist/papervault-*.whl)"
# the templates are inside the wheel, under papervault/templates/
"$python" - "$wheel" <<'PY'
import sys, zipfile
names = set(zipfile.ZipFile(sys.argv[1]).namelist())
for need in ("papervault/templates/note.md.j2", "papervault/templates/note.schema.json",
             "papervault/templates/survey/survey.md.j2", "papervault/templates/site/pages/home.md.j2",
             "papervault/templates/site/assets/papervault.css", "papervault/app/survey.py", "flows/survey.py"):
    assert need in names, f"{need} is not in the wheel"
PY

echo "wheel: installing $(basename "$wheel") into a fresh virtualenv"
"$python" -m venv "$work/venv"
"$work/venv/bin/python" -m pip install -q "$wheel"

mkdir "$work/run"
cd "$work/run"
export PREFECT_HOME="$work/prefect-home" PREFECT_SERVER_ANALYTICS_ENABLED=false
export PREFECT_SERVER_EPHEMERAL_STARTUP_TIMEOUT_SECONDS=180
unset PYTHONPATH PAPERVAULT_WORKSPACE
site_packages="$("$work/venv/bin/python" -c 'import sysconfig; print(sysconfig.get_paths()["purelib"])')"
# papervault and its templates come from the installed wheel, never from the source tree
"$work/venv/bin/python" - "$site_packages" "$src" <<'PY'
import sys
from pathlib import Path

import papervault
from papervault.templating import builtin_dir

site, src = Path(sys.argv[1]).resolve(), Path(sys.argv[2]).resolve()
for what, path in (("papervault", Path(papervault.__file__)), ("templates", builtin_dir())):
    path = path.resolve()
    assert site in path.parents, f"{what} loads from {path}, not from the installed wheel in {site}"
    assert src not in path.parents, f"{what} loads from the source tree: {path}"
print(f"wheel: papervault and its templates load from {builtin_dir()}")
PY

echo "wheel: papervault demo"
"$work/venv/bin/papervault" demo -w "$work/run/ws"
test -s "$work/run/ws/site/index.html"
test -s "$work/run/ws/site/assets/papervault/papervault.css"
ls "$work"/run/ws/vault/surveys/*/survey.md >/dev/null
echo "wheel: the demo ran from the installed wheel"
