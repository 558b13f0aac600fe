"""papervault: papers and their code, parsed once into a durable, searchable research vault."""

import sys as _sys
import importlib.util

__version__ = "0.1.0"


def _importing(package: str) -> bool:
    """Whether `import package` is running now (its module exists and is still being executed)."""
    return bool(getattr(getattr(_sys.modules.get(package), "__spec__", None), "_initializing", False))


class _LeanThirdPartyImports:
    """Two third-party imports made cheaper for parts papervault never uses, each only while that library
    imports itself; code that asks for the parts afterwards gets them whole.

    - PyMuPDF's extras are not found (PyMuPDF allows that): PyMuPDF 2 requires pymupdf-layout and pymupdf4llm
      and imports both from its own __init__ when present; pymupdf.layout then loads an ONNX layout model and
      pymupdf4llm ONNX Runtime, for page layout analysis papervault never asks for (measured: `import pymupdf`
      takes 0.45 s instead of 0.1 s, 0.5 s more CPU, in every process that parses). papervault declares neither.
    - LanceDB imports the models of its REST namespace client, a subpackage of `lance_namespace_urllib3_client`,
      whose __init__ also builds every REST API class (0.57 s of CPU a process, measured). That package is
      made with its real path and spec but without running its __init__ until something asks the package itself
      for a name; its submodules import as usual.
    """

    PYMUPDF_EXTRAS = ("pymupdf.layout", "pymupdf4llm")
    LANCE_CLIENT = "lance_namespace_urllib3_client"

    @classmethod
    def find_spec(cls, name, path=None, target=None):
        if name in cls.PYMUPDF_EXTRAS and _importing("pymupdf"):
            raise ModuleNotFoundError(f"No module named {name!r}", name=name)
        if name == cls.LANCE_CLIENT and _importing("lancedb"):
            return cls._deferred_package(name)
        return None

    @classmethod
    def _deferred_package(cls, name: str):
        _sys.meta_path.remove(cls)
        try:
            spec = importlib.util.find_spec(name)
        finally:
            _sys.meta_path.insert(0, cls)
        if spec is None or spec.loader is None or not spec.submodule_search_locations:
            return spec
        spec.loader = _DeferredInit(spec.loader)
        return spec


class _DeferredInit:
    """A package loader that runs the package's own __init__ at the first attribute asked of the package."""

    def __init__(self, loader):
        self.loader = loader

    def create_module(self, spec):
        return None

    def exec_module(self, module):
        loader = self.loader

        def __getattr__(attr: str):
            del module.__getattr__
            module.__spec__.loader = module.__loader__ = loader
            loader.exec_module(module)
            return getattr(module, attr)

        module.__getattr__ = __getattr__


_sys.meta_path.insert(0, _LeanThirdPartyImports)
