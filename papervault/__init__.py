"""papervault: papers and their code, parsed once into a durable, searchable research vault."""

import sys as _sys

__version__ = "0.1.0"

# PyMuPDF loads its optional ONNX layout model (pymupdf_layout) on import, which costs seconds per process and
# is never used by our parser; blocking the submodule makes `import pymupdf` skip it (PyMuPDF allows that).
_sys.modules.setdefault("pymupdf.layout", None)
