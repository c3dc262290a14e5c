"""Submodules under another name for the package.

Code written against another package name can run on rffi by putting the package in
``sys.modules`` under that name (``sys.modules["tvm_ffi"] = rffi``). Python would then import
``tvm_ffi.serialization`` as a second copy of ``rffi/serialization.py`` whose relative imports
load second copies of the core modules, with their own classes: an ``Array`` made by one copy
is not an ``Array`` to the other. This finder answers ``<alias>.<sub>`` with the one
``rffi.<sub>`` module instead, so every name reaches the same classes.
"""

from __future__ import annotations

import importlib
import importlib.abc
import importlib.util
import sys


class _SameModule(importlib.abc.Loader):
    """Loads ``<alias>.<sub>`` as the already imported ``rffi.<sub>``."""

    def __init__(self, real_name: str) -> None:
        self._real_name = real_name
        self._real_spec = None

    def create_module(self, spec):
        module = importlib.import_module(self._real_name)
        self._real_spec = module.__spec__
        return module

    def exec_module(self, module) -> None:
        # The import system set the alias's spec on the module; give it back its own.
        module.__spec__ = self._real_spec


class _AliasFinder(importlib.abc.MetaPathFinder):
    def __init__(self, package) -> None:
        self._package = package

    def find_spec(self, fullname, path=None, target=None):
        parent, dot, rest = fullname.partition(".")
        pkg = self._package
        if not dot or parent == pkg.__name__ or sys.modules.get(parent) is not pkg:
            return None
        real_name = f"{pkg.__name__}.{rest}"
        if importlib.util.find_spec(real_name) is None:
            return None
        return importlib.util.spec_from_loader(fullname, _SameModule(real_name))


def install(package) -> None:
    """Adds the finder for ``package`` (once) ahead of Python's own."""
    if not any(isinstance(f, _AliasFinder) for f in sys.meta_path):
        sys.meta_path.insert(0, _AliasFinder(package))
