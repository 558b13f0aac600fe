"""papervault: papers and their code, parsed once into a durable, searchable research vault."""

import sys as _sys

__version__ = "0.1.0"


class _WithoutPyMuPDFExtras:
    """While PyMuPDF imports itself, its optional extras are not found (PyMuPDF allows that): pymupdf.layout
    loads an ONNX layout model (seconds per process) and pymupdf4llm loads ONNX Runtime (half a second of CPU
    per process); papervault uses neither. Imported afterwards by other code, they load as usual."""

    EXTRAS = ("pymupdf.layout", "pymupdf4llm")

    @classmethod
    def find_spec(cls, name, path=None, target=None):
        if name in cls.EXTRAS:
            spec = getattr(_sys.modules.get("pymupdf"), "__spec__", None)
            if getattr(spec, "_initializing", False):      # inside `import pymupdf`
                raise ModuleNotFoundError(f"No module named {name!r}", name=name)
        return None


_sys.meta_path.insert(0, _WithoutPyMuPDFExtras)
