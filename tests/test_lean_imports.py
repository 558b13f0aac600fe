"""The third-party parts papervault never uses stay out of its processes (papervault/__init__.py), and code that asks
for them afterwards still gets them whole. Each check runs in a new interpreter: what a process imports is the
point."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def _python(code: str) -> str:
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=ROOT, timeout=120)
    assert r.returncode == 0, r.stderr[-3000:]
    return r.stdout


def test_pymupdf_imports_without_its_extras_which_load_later_on_demand():
    # papervault declares neither extra: PyMuPDF 2 requires both itself and imports them when they are present.
    out = _python("import sys, papervault, pymupdf\n"
                  "print(sorted(m for m in ('pymupdf4llm', 'pymupdf.layout', 'onnxruntime') if m in sys.modules))\n"
                  "import pymupdf4llm\n"
                  "print(pymupdf4llm.to_markdown is not None, pymupdf.open().page_count)\n")
    assert out.splitlines() == ["[]", "True 0"], out


def test_lancedb_imports_without_its_rest_api_classes_which_load_on_first_use():
    out = _python("import sys, papervault, lancedb\n"
                  "client = 'lance_namespace_urllib3_client'\n"
                  "print(client + '.models' in sys.modules, client + '.api.table_api' in sys.modules)\n"
                  "from lance_namespace_urllib3_client import ApiClient, TableApi\n"
                  "print(ApiClient.__name__, TableApi.__name__, client + '.api.table_api' in sys.modules)\n")
    assert out.splitlines() == ["True False", "ApiClient TableApi True"], out


def test_an_index_opens_and_answers_with_the_lean_imports(tmp_path):
    out = _python("import papervault, lancedb, pyarrow as pa\n"
                  f"db = lancedb.connect({str(tmp_path / 'db')!r})\n"
                  "vectors = pa.array([[0.0, 1.0], [1.0, 0.0]], pa.list_(pa.float32(), 2))\n"
                  "t = db.create_table('t', pa.table({'id': ['a', 'b'], 'vector': vectors}))\n"
                  "print(t.count_rows(), t.search([1.0, 0.0]).limit(1).to_list()[0]['id'])\n")
    assert out.split() == ["2", "b"], out
