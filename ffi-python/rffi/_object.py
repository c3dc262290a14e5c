"""``Object``: the Python wrapper of a reference-counted runtime object.

A wrapper owns one strong reference to its object and releases it when the wrapper dies (or when
``__del__()`` is called, early). The object's address is in the field ``_h`` and its type index
(what a call writes next to the address when the object is passed as an argument) in ``_ti``;
users read them as ``_handle`` and ``_tidx``, which are read-only: a wrapper whose address was
replaced would release or pass memory it does not own.

Where the two fields live is the *storage* base class: on the native fast path, the native
library's ``rffi.ObjectStorage`` (machine words in the instance, released by a native finalizer,
read and written by the native call path without Python calls); otherwise ``_SlotStorage`` below
(two slots, released by ``__del__`` through a ctypes call). Everything else is ``Object``'s, the
same on both paths.

Copies (one rule for every wrapper, defined here):

* ``copy.copy(obj)`` of an Array, List, Map, Dict or an object of a registered type is a new one
  holding the same members (``ffi.ShallowCopy``; a type the runtime cannot create is a
  TypeError "does not support copy"); of anything else (strings, shapes, tensors, functions,
  modules, errors: immutable values or handles) a new wrapper of the same object.
* ``copy.deepcopy(obj)`` and ``pickle`` copy by value, through ``_value_form()``: a type with a
  value form (containers of values, errors, CPU tensors) returns ``(rebuild, args)``; the others
  (functions, modules, opaque objects, device memory) raise a TypeError naming the type. The
  memo is keyed by the object, not the wrapper; a List or Dict is in it before its items are
  copied, so cycles through them are kept.
* Objects of registered types (with fields) are copied by the runtime: ``copy.deepcopy`` makes a
  new graph with the same sharing and cycles (``ffi.DeepCopy``), ``pickle`` writes their JSON
  graph. Their default ``repr`` is the runtime's field-wise text (``ffi.ReprPrint``).
"""

from __future__ import annotations

import copy as _copy
import ctypes

from . import _layout as L
from . import _lib, _native

_DecRef = _lib.ObjectDecRef
_IncRef = _lib.ObjectIncRef

#: Type indices from here on are registered object types (with fields).
_FIRST_REGISTERED = 128
#: Containers, which ``copy.copy`` copies (List, Dict: kRFFIList, kRFFIDict).
_CONTAINERS = (_lib.kArray, _lib.kMap, 75, 76)
#: The line width the default ``repr`` of a registered object breaks at.
REPR_WIDTH = 88


def _global(name: str):
    from ._object_model import _ffi  # on first use: this module is imported before it

    return _ffi(name)
_read_u64 = ctypes.c_uint64.from_address
_read_i32 = ctypes.c_int32.from_address

# Python class of each type index that has one (filled by the modules defining them).
CLASS_OF_INDEX: dict = {}


def type_key(type_index: int) -> str:
    """The runtime's name of a type index (``"ffi.Array"``), or ``"<type N>"``."""
    if _lib.TypeIndexToKey is not None:
        ba = _lib.ByteArray()
        if _lib.TypeIndexToKey(type_index, ctypes.byref(ba)) == 0 and ba.data:
            return ctypes.string_at(ba.data, ba.size).decode("utf-8", "replace")
        _lib.ErrorMoveFromRaised(None)  # not an error worth reporting: fall through
    return f"<type {type_index}>"


class _SlotStorage:
    """The fields of a wrapper where the native library is not used: two slots, released by
    ``__del__`` through a ctypes call."""

    __slots__ = ("_h", "_ti")

    def __del__(self):
        h = getattr(self, "_h", 0)
        if h:
            self._h = 0
            try:
                _DecRef(h)
            except Exception:  # interpreter shutdown: the library may be gone already
                pass

    @property
    def _handle(self) -> int:
        """The object's address (read-only)."""
        return self._h

    @property
    def _tidx(self) -> int:
        """The object's type index (read-only)."""
        return self._ti


def _storage():
    if _native.ENABLED:
        try:
            return _native.object_storage()
        except Exception:  # pragma: no cover - the fast path then turns itself off
            pass
    return _SlotStorage


#: The storage base of every wrapper (see the module's docstring).
STORAGE = _storage()


class Object(STORAGE):
    """A runtime object held from Python. Instances are made by the runtime's conversions; two
    wrappers of the same object compare equal."""

    __slots__ = ("__weakref__",)

    @property
    def type_index(self) -> int:
        return self._ti

    @property
    def type_key(self) -> str:
        return type_key(self._ti)

    def __chandle__(self) -> int:
        """The object's address (its ``RFFIObject*``), for C code and identity checks; tvm-ffi's
        name. The wrapper keeps the object alive, not the address."""
        return self._h

    def __ctypes_handle__(self) -> ctypes.c_void_p:
        """The object's address as a ``ctypes.c_void_p`` (its value None once the wrapper is
        released or its object moved out), for ctypes calls; tvm-ffi's name."""
        return ctypes.c_void_p(self._h or None)

    def same_as(self, other) -> bool:
        """Whether both wrap the same runtime object."""
        return isinstance(other, Object) and other._h == self._h

    @property
    def id_(self) -> int:
        """The object's address, as ``__chandle__()``: its identity."""
        return self._h

    def is_(self, other) -> bool:
        """Whether ``other`` wraps the same runtime object (``same_as``)."""
        return self.same_as(other)

    def __eq__(self, other):
        if isinstance(other, Object):
            return other._h == self._h
        return NotImplemented

    def __hash__(self):
        return hash(self._h)

    def _use_count(self) -> int:
        """The object's strong reference count (this wrapper's included)."""
        self._check_live("read")
        return _read_u64(self._h).value & 0xFFFFFFFF

    def __repr__(self) -> str:
        if self._h and self._ti >= _FIRST_REGISTERED:
            return _global("ffi.ReprPrint")(self, REPR_WIDTH)
        return f"<rffi.Object {self.type_key} at {self._h:#x}>"

    def _move(self) -> ObjectRValueRef:
        """This wrapper's reference, to hand over to the function it is passed to (tvm-ffi's
        rvalue reference): a callee that takes it (``structural_map`` does) leaves this wrapper
        empty, and may change the object in place when nothing else holds it."""
        self._check_live("move")
        return ObjectRValueRef(self)

    # ---- Copies ----

    def __copy__(self):
        """A new container or object with the same members (containers and objects of
        registered types), else a new wrapper of the same object."""
        if self._ti >= _FIRST_REGISTERED or self._ti in _CONTAINERS:
            self._check_live("copy")
            return _global("ffi.ShallowCopy")(self)
        cls = type(self)
        new = cls.__new__(cls)
        h = self._h
        if h:
            _IncRef(h)
        new._h = h
        new._ti = self._ti
        self._init_copy(new)
        return new

    def _init_copy(self, new) -> None:
        """Fills the fields a subclass adds in a shallow copy ``new`` (none here)."""

    def _value_form(self, what: str):
        """``(rebuild, args)`` such that ``rebuild(*args)`` makes an equal, independent object;
        a TypeError (saying it cannot ``what``) where the type has no value form."""
        raise TypeError(
            f"cannot {what} {_describe(self)}: it has no value form (copy.copy shares it instead)"
        )

    def __deepcopy__(self, memo):
        self._check_live("deepcopy")
        if self._ti >= _FIRST_REGISTERED:
            # Keyed by the object, so two wrappers of one object give one copy.
            key = ("rffi.Object", self._h)
            if key not in memo:
                memo[key] = _global("ffi.DeepCopy")(self)
            return memo[key]
        # Keyed by the object too: an Array reached twice (through two wrappers) is copied once,
        # and the copies share it as the original does.
        key = ("rffi.Object", self._h)
        if key in memo:
            return memo[key]
        shell = self._copy_shell()
        if shell is not None:
            # A mutable container is in the memo before its items are copied, so a cycle back
            # to it (a List holding a Map that holds the List) reaches the copy, as for `list`.
            dup, items, fill = shell
            memo[key] = dup
            fill(dup, _copy.deepcopy(items, memo))
            return dup
        rebuild, args = self._value_form("deepcopy")
        dup = rebuild(*_copy.deepcopy(args, memo))
        # A cycle through a mutable item may have copied this object already (as for `tuple`):
        # that copy is the one the cycle holds.
        return memo.setdefault(key, dup)

    def _copy_shell(self):
        """``(empty copy, items, fill)`` for a mutable container, whose deep copy is made empty
        first and filled by ``fill(copy, copied items)``; None for the others."""
        return None

    def __reduce__(self):
        self._check_live("pickle")
        if self._ti >= _FIRST_REGISTERED:
            from .serialization import from_json_graph_str, to_json_graph_str

            return from_json_graph_str, (to_json_graph_str(self),)
        return self._value_form("pickle")

    def _check_live(self, what: str) -> None:
        if not self._h:
            raise ValueError(f"cannot {what} {_describe(self)}: it has been released")


class TypeInfoOf:
    """``cls.__rffi_type_info__`` (and tvm-ffi's ``__tvm_ffi_type_info__``): the ``TypeInfo``
    (``rffi.core``) of the type the class is bound to, made on first read."""

    def __get__(self, obj, cls):
        from .core import _type_cls_to_type_info  # on first use: `import rffi` does not need it

        info = _type_cls_to_type_info(cls)
        if info is None:
            raise AttributeError(f"{cls.__qualname__} is bound to no runtime type")
        return info


Object.__rffi_type_info__ = Object.__tvm_ffi_type_info__ = TypeInfoOf()


class ObjectRValueRef:
    """``obj._move()``: passed as an argument, the callee may take ``obj``'s reference (an
    ``RFFIAny`` of type ``kRFFIObjectRValueRef`` pointing at a slot holding the handle); after the
    call, ``obj`` is empty if it did."""

    __slots__ = ("obj", "slot")

    def __init__(self, obj: Object) -> None:
        self.obj = obj
        self.slot = None

    def _rffi_after_call(self) -> None:
        if self.slot is not None:
            # Back to the wrapper, or 0 where the callee took the reference.
            self.obj._h = self.slot.value or 0
        self.slot = None


def _describe(obj) -> str:
    cls = type(obj)
    name = f"rffi.{cls.__name__}" if cls.__module__.startswith("rffi") else cls.__qualname__
    return f"{name} ({type_key(obj._ti)})" if obj._h else name


def wrap_new(cls, handle: int, tidx: int):
    """A wrapper of class ``cls`` that takes over one owned reference to ``handle``."""
    obj = cls.__new__(cls)
    obj._h = handle
    obj._ti = tidx
    return obj


def header_type_index(handle: int) -> int:
    """The type index stored in an object's header."""
    return _read_i32(handle + L.OBJ_TYPE_INDEX).value
