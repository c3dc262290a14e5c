"""Submodules under another name for the package.

Code written against another package name can run on rffi by putting the package in
``sys.modules`` under that name (``sys.modules["tvm_ffi"] = rffi``). Python would then import
``tvm_ffi.serialization`` as a second copy of ``rffi/serialization.py`` whose relative imports
load second copies of the core modules, with their own classes: an ``Array`` made by one copy
is not an ``Array`` to the other. This finder answers ``<alias>.<sub>`` with the one
``rffi.<sub>`` module instead, so every name reaches the same classes.

Only ``importlib`` and ``importlib.machinery`` are used: ``importlib.abc`` and
``importlib.util`` would import ``typing``, which ``import rffi`` avoids.
"""

from __future__ import annotations

import importlib
import importlib.machinery
import sys


class _SameModule:
    """Loads ``<alias>.<sub>`` as the already imported ``rffi.<sub>``."""

    def __init__(self, module) -> None:
        self._module = module
        self._spec = module.__spec__

    def create_module(self, spec):
        return self._module

    def exec_module(self, module) -> None:
        # The import system set the alias's spec on the module; give it back its own.
        module.__spec__ = self._spec


class _AliasFinder:
    """A ``sys.meta_path`` finder for ``<alias>.<sub>`` where ``sys.modules[alias]`` is rffi."""

    def __init__(self, package) -> None:
        self._package = package

    def find_spec(self, fullname, path=None, target=None):
        parent, dot, rest = fullname.partition(".")
        pkg = self._package
        if not dot or parent == pkg.__name__ or sys.modules.get(parent) is not pkg:
            return None
        real_name = f"{pkg.__name__}.{rest}"
        try:
            module = importlib.import_module(real_name)
        except ModuleNotFoundError as e:
            if e.name == real_name:  # no such submodule: Python says so under the alias
                return None
            raise
        return importlib.machinery.ModuleSpec(fullname, _SameModule(module))

    def invalidate_caches(self) -> None:
        pass


def install(package) -> None:
    """Adds the finder for ``package`` (once) ahead of Python's own."""
    if not any(isinstance(f, _AliasFinder) for f in sys.meta_path):
        sys.meta_path.insert(0, _AliasFinder(package))
