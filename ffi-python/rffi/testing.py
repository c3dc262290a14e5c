"""The runtime's ``testing.*`` global functions as attributes (``rffi.testing.add_one(1)``,
``rffi.testing.echo(x)``), under tvm-ffi's module name ``testing``; the classes of the runtime's
testing object types (``TestIntPair``, ``TestObjectDerived``, the comparison hooks' ``TestCompare``,
``TestHash``, ``TestCustomHash``, ``TestCustomCompare``, ``TestEqWithoutHash``, and
``_TestCxxClassBase`` and its children, as tvm-ffi's tests name them), ``create_object`` to make
one by field names, and ``run_with_gpu_lock`` for tests that use a GPU."""

from __future__ import annotations

import os
import tempfile

from ._dataclass_dunders import adopt
from ._function_registry import get_global_func, init_ffi_api
from ._object import Object
from ._object_model import type_info
from .dataclasses import c_class

init_ffi_api("testing", __name__)


def run_with_gpu_lock(fn, *args, **kwargs):
    """Calls ``fn(*args, **kwargs)`` holding a lock file shared by every process of the machine
    (``$RFFI_GPU_LOCK``, default ``<tmp>/rffi-gpu.lock``), so tests run in parallel workers
    do not use a GPU at the same time; returns what ``fn`` returns."""
    import fcntl

    path = os.environ.get("RFFI_GPU_LOCK") or os.path.join(tempfile.gettempdir(), "rffi-gpu.lock")
    with open(path, "a") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        try:
            return fn(*args, **kwargs)
        finally:
            fcntl.flock(lock, fcntl.LOCK_UN)


def create_object(type_key: str, **fields):
    """Makes an object of the runtime type ``type_key`` through its ``__ffi_init__``, which takes
    every field in declaration order (the parents' first): the fields given by name, the others
    their defaults. An unknown field, or a field without a default not given, is a TypeError."""
    info = type_info(type_key)
    names: list = []
    for key in [*info["ancestors"], info["type_key"]]:
        for f in type_info(key)["fields"]:
            if f["name"] not in names:
                names.append(f["name"])
    unknown = sorted(set(fields) - set(names))
    if unknown:
        raise TypeError(f"create_object({type_key!r}): no field named {', '.join(unknown)}")
    default = get_global_func("ffi.TypeFieldDefault")
    args = []
    for name in names:
        if name in fields:
            args.append(fields[name])
            continue
        try:
            args.append(default(type_key, name))
        except KeyError:
            raise TypeError(
                f"create_object({type_key!r}): field `{name}` has no default and was not given"
            ) from None
    return get_global_func("ffi.TypeGetMethod")(type_key, "__ffi_init__")(*args)


# The classes of the runtime's testing object types (docs, fields and methods from the runtime);
# TestIntPair is a dataclass (fields(), replace(), __match_args__), as in tvm-ffi's testing module.
@c_class("testing.TestIntPair")
class TestIntPair(Object):
    __slots__ = ()


@c_class("testing.TestObjectBase")
class TestObjectBase(Object):
    __slots__ = ()


@c_class("testing.TestObjectDerived")
class TestObjectDerived(TestObjectBase):
    __slots__ = ()


# tvm-ffi's dataclass testing classes, over the runtime's types of the same keys
# (ffi-core/src/testing_dataclass_types.rs), with tvm-ffi's options.
@c_class("testing.TestCxxClassBase")
class _TestCxxClassBase(Object):
    """Its own ``__init__`` stores ``v_i64 + 1`` and ``v_i32 + 2`` (copies keep the values)."""

    __test__ = False
    not_field_1 = 1

    def __init__(self, v_i64: int, v_i32: int) -> None:
        caller = f"{type(self).__qualname__}.__init__()"
        made = get_global_func("ffi.ObjectCreateInit")(
            type(self).__rffi_type_index__, caller, "v_i64", 0, v_i64 + 1, "v_i32", 1, v_i32 + 2
        )
        adopt(self, made)


@c_class("testing.TestCxxClassDerived", eq=True, order=True, unsafe_hash=True)
class _TestCxxClassDerived(_TestCxxClassBase):
    __test__ = False


@c_class("testing.TestCxxClassDerivedDerived")
class _TestCxxClassDerivedDerived(_TestCxxClassDerived):
    __test__ = False


@c_class("testing.TestCxxInitSubset")
class _TestCxxInitSubset(Object):
    __test__ = False


@c_class("testing.TestCxxKwOnly")
class _TestCxxKwOnly(Object):
    __test__ = False


# A field of each kind of type (ffi-core/src/testing_schema_types.rs).
@c_class("testing.SchemaAllTypes")
class _SchemaAllTypes(Object):
    __test__ = False


# The types of the recursive comparisons' tests (ffi-core/src/testing_compare_types.rs), bound as
# tvm-ffi's tests expect them: `==` by identity.
def _bind_compare_types():
    g = globals()
    keys = ("TestCompare", "TestHash", "TestCustomHash", "TestCustomCompare", "TestEqWithoutHash")
    for key in keys:
        cls = type(key, (Object,), {"__slots__": (), "__module__": __name__, "__test__": False})
        g[key] = c_class(f"testing.{key}", eq=False)(cls)


_bind_compare_types()
