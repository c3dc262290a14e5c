"""The package's modules, imported in dependency order, and the state of the call path.

Where each concept lives:

* ``_lib``: the library and its C functions (ctypes); ``_layout``: the C layouts read in place;
* ``_object``: the ``Object`` wrapper (references, copies); ``_error``: errors both ways;
* ``_convert``: Python -> rffi, the one conversion table; ``_decode``: rffi -> Python;
* ``_frame``: call frames; ``_function``: ``Function`` and the ctypes call path;
  ``_native``: the native fast path's library; ``_callback``: Python callables as Functions;
* ``_container``: ``Array``, ``Map``; ``_shape``: ``Shape``; ``_opaque``: opaque Python objects;
* ``_function_registry``: global functions by name; ``_tensor``: ``Tensor`` and DLPack;
  ``_module``: plugins.
"""

from __future__ import annotations

from . import _convert  # noqa: F401  (imports the modules the setters use, in order)
from ._callback import CALLBACKS as _CALLBACKS  # noqa: F401
from ._container import Array, Map
from ._convert import convert
from ._function import FASTPATH, FASTPATH_REASON, Function, _CtypesFunction  # noqa: F401
from ._function_registry import (
    get_global_func,
    init_ffi_api,
    list_global_func_names,
    register_global_func,
    remove_global_func,
)
from ._lib import ObjectIncRef as _IncRef  # noqa: F401
from ._object import type_key
from ._opaque import make_opaque  # noqa: F401
from ._shape import Shape

# The names this module held before it was split by concept, for code that imports them here.
__all__ = [
    "FASTPATH",
    "FASTPATH_REASON",
    "Array",
    "Function",
    "Map",
    "Shape",
    "convert",
    "get_global_func",
    "init_ffi_api",
    "list_global_func_names",
    "register_global_func",
    "remove_global_func",
    "type_key",
]
