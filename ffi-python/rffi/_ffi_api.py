"""The runtime's ``ffi.*`` global functions as attributes of this module (``ReprPrint``,
``StructuralEqual``, ``RecursiveEq``, ``DeepCopy``, ...), where tvm-ffi code imports them from
(``from tvm_ffi._ffi_api import ReprPrint``)."""

from ._function_registry import init_ffi_api

init_ffi_api("ffi", __name__)
