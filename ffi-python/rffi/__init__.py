"""rffi: call functions of the rffi runtime (Rust, C, C++ and Python) by name from Python.

Pure Python over ``librffi.so`` through ctypes: no compiled extension, one library for every
CPython. The API follows Apache tvm-ffi's names::

    import rffi

    add_one = rffi.get_global_func("testing.add_one")
    assert add_one(41) == 42

    @rffi.register_global_func("demo.square")
    def square(x):
        return x * x

    rffi.get_global_func("testing.apply")(square, 7)  # 49: native code calls back into Python

``import rffi`` imports neither numpy nor torch; they are touched only when one of their values is
passed.
"""

from __future__ import annotations

import sys

from . import _alias, _core, _dtype, _lib, _object  # noqa: F401  (_core: the modules, in order)
from ._callback import convert_func
from ._container import Array, Map
from ._containers_mut import Dict, List
from ._convert import convert
from ._device import Device, device
from ._dtype import DataType, dtype
from ._error import Error, register_error
from ._function import Function
from ._function_registry import (
    get_global_func,
    init_ffi_api,
    list_global_func_names,
    register_global_func,
    remove_global_func,
)
from ._module import Module, load_module
from ._object import Object
from ._object_model import (  # noqa: F401  (tvm-ffi's type attribute functions)
    _lookup_type_attr,
    _register_type_attr,
    get_registered_type_keys,
    register_object,
    type_info,
)
from ._shape import Shape
from ._string import Bytes, String
from ._tensor import Tensor, from_dlpack
from .session import DFunction, DModule, DRef, ProcessSession, ThreadSession

# The value types' classes answer `__rffi_type_info__` as Object's subclasses do.
for _cls in (DataType, Device):
    _cls.__rffi_type_info__ = _cls.__tvm_ffi_type_info__ = _object.TypeInfoOf()
del _cls

__version__ = "0.1.0"

# Imported on first use: they pull in `typing` and `inspect`, which `import rffi` does not need.
_LAZY = {
    "access_path": ("rffi.access_path", None),
    "core": ("rffi.core", None),
    "dataclasses": ("rffi.dataclasses", None),
    "MISSING": ("rffi.dataclasses", "MISSING"),
    "serialization": ("rffi.serialization", None),
    "structural": ("rffi.structural", None),
    "deep_copy": ("rffi.structural", "deep_copy"),
    "get_first_structural_mismatch": ("rffi.structural", "get_first_structural_mismatch"),
    "repr_print": ("rffi.structural", "repr_print"),
    "structural_equal": ("rffi.structural", "structural_equal"),
    "structural_hash": ("rffi.structural", "structural_hash"),
    "structural_walk": ("rffi.structural", "structural_walk"),
    "structural_visit": ("rffi.structural", "structural_visit"),
    "structural_map": ("rffi.structural", "structural_map"),
    "structural_mutate": ("rffi.structural", "structural_mutate"),
    "StructuralKey": ("rffi.structural", "StructuralKey"),
    "StructuralVisitor": ("rffi.structural", "StructuralVisitor"),
    "StructuralMutator": ("rffi.structural", "StructuralMutator"),
    "VisitInterrupt": ("rffi.structural", "VisitInterrupt"),
    "WalkOrder": ("rffi.structural", "WalkOrder"),
    "WalkResult": ("rffi.structural", "WalkResult"),
    "InplaceMode": ("rffi.structural", "InplaceMode"),
    "DefRegionKind": ("rffi.structural", "DefRegionKind"),
    "shard": ("rffi.shard", None),
    # Imports ray (an optional extra): an ImportError naming the extra when it is missing.
    "RaySession": ("rffi._ray", "RaySession"),
    "TypeSchema": ("rffi._schema", "TypeSchema"),
    "get_global_func_metadata": ("rffi._schema", "get_global_func_metadata"),
    "method": ("rffi.dataclasses", "method"),
    "testing": ("rffi.testing", None),
    "DLDeviceType": ("rffi._enums", "DLDeviceType"),
    "DLDataTypeCode": ("rffi._enums", "DLDataTypeCode"),
    # tvm-ffi's module names, for code written against them.
    "registry": ("rffi._function_registry", None),
    "error": ("rffi._error", None),
}


def __getattr__(name):
    if name in _LAZY:
        import importlib

        module, attr = _LAZY[name]
        m = importlib.import_module(module)
        value = m if attr is None else getattr(m, attr)
        globals()[name] = value
        return value
    if name in _dtype.NAMED:
        value = globals()[name] = dtype(name)
        return value
    raise AttributeError(f"module 'rffi' has no attribute {name!r}")

# `sys.modules["other"] = rffi` makes `import other.sub` give `rffi.sub` itself.
_alias.install(sys.modules[__name__])

#: The path of the loaded ``librffi.so``.
LIB_PATH = _lib.LIB_PATH
#: The C ABI version implemented by the loaded library, as (major, minor, patch).
ABI_VERSION = _lib.VERSION

__all__ = [
    "ABI_VERSION",
    "Array",
    "Bytes",
    "DFunction",
    "DLDataTypeCode",
    "DLDeviceType",
    "DModule",
    "DRef",
    "DataType",
    "DefRegionKind",
    "Device",
    "Dict",
    "Error",
    "Function",
    "InplaceMode",
    "LIB_PATH",
    "List",
    "MISSING",
    "Map",
    "Module",
    "Object",
    "ProcessSession",
    "Shape",
    "String",
    "StructuralKey",
    "StructuralMutator",
    "StructuralVisitor",
    "Tensor",
    "ThreadSession",
    "TypeSchema",
    "VisitInterrupt",
    "WalkOrder",
    "WalkResult",
    "__version__",
    "access_path",
    "convert",
    "convert_func",
    "core",
    "dataclasses",
    "deep_copy",
    "device",
    "dtype",
    "from_dlpack",
    "get_first_structural_mismatch",
    "get_global_func",
    "get_global_func_metadata",
    "get_registered_type_keys",
    "init_ffi_api",
    "list_global_func_names",
    "load_module",
    "method",
    "register_error",
    "register_global_func",
    "register_object",
    "remove_global_func",
    "repr_print",
    "serialization",
    "shard",
    "structural",
    "structural_equal",
    "structural_hash",
    "structural_map",
    "structural_mutate",
    "structural_visit",
    "structural_walk",
    "testing",
    "type_info",
]
