"""Python classes over the runtime's object types.

``@rffi.register_object("my.Point")`` binds a Python class (a subclass of ``rffi.Object``) to a
registered type: objects of that type come back from calls as instances of the class, its fields
become properties (read from the object, written with the field's type check; frozen fields are
read-only), its methods become Python methods (static ones static), a static ``__ffi_init__``
becomes ``__init__``, and docstrings carry over. Every field and method is reached by name through
the runtime, so the same object is usable from Rust, C and plugins alike.
"""

from __future__ import annotations

from ._function_registry import get_global_func as _get_global_func
from ._object import CLASS_OF_INDEX, Object

FLAG_WRITABLE = 1 << 0
FLAG_HAS_DEFAULT = 1 << 1
FLAG_STATIC_METHOD = 1 << 2
FLAG_SEQ_HASH_IGNORE = 1 << 3
FLAG_SEQ_HASH_DEF = 1 << 4
FLAG_DEFAULT_FROM_FACTORY = 1 << 5
FLAG_REPR_OFF = 1 << 6
FLAG_COMPARE_OFF = 1 << 7
FLAG_HASH_OFF = 1 << 8
FLAG_INIT_OFF = 1 << 9
FLAG_KW_ONLY = 1 << 10
FLAG_SEQ_HASH_DEF_SIMPLE = 1 << 12
FLAG_SEQ_HASH_IDENTITY = 1 << 20

#: ``field(structural_eq=...)`` and the field flag each sets.
STRUCTURAL_FIELD_FLAGS = {
    None: 0,
    "ignore": FLAG_SEQ_HASH_IGNORE,
    "def": FLAG_SEQ_HASH_DEF,
    "def-pattern": FLAG_SEQ_HASH_DEF,
    "def-simple": FLAG_SEQ_HASH_DEF_SIMPLE,
    "identity": FLAG_SEQ_HASH_IDENTITY,
}
#: ``py_class(structural_eq=...)`` / ``c_class(structural_eq=...)`` and the type's kind.
STRUCTURAL_KINDS = {None: 0, "tree": 1, "var": 2, "dag": 3, "const-tree": 4, "singleton": 5}

_FUNCS: dict = {}


def _ffi(name: str):
    f = _FUNCS.get(name)
    if f is None:
        f = _FUNCS[name] = _get_global_func(name)
    return f


def type_info(key_or_index) -> dict:
    """The registered type's information: ``type_key``, ``type_index``, ``ancestors`` (keys, root
    first), ``doc``, own ``fields`` and ``methods`` (each with ``name``, ``doc``, ``flags`` and
    ``metadata``)."""
    import json  # on first use: `import rffi` does not need it

    return json.loads(_ffi("ffi.TypeInfoJSON")(key_or_index))


def get_registered_type_keys() -> list:
    """The keys of every object type registered at run time."""
    return list(_ffi("ffi.GetRegisteredTypeKeys")())


def _lookup_type_attr(type_index: int, attr_key: str, ancestor: bool = False):
    """The type attribute ``attr_key`` of the type ``type_index`` (a per-type value such as a
    hook, tvm-ffi's type attribute columns), or None; a type's own entry, unless ``ancestor`` asks
    for the nearest ancestor's too. C reads the same table with ``RFFIGetTypeAttrColumn``."""
    get = _ffi("ffi.TypeGetAttr")
    value = get(type_index, attr_key)
    if value is None and ancestor:
        for key in reversed(type_info(type_index)["ancestors"]):
            value = get(_ffi("ffi.TypeKeyToIndex")(key), attr_key)
            if value is not None:
                break
    return value


def _register_type_attr(type_index: int, attr_key: str, value) -> None:
    """Sets the type attribute ``attr_key`` of the type ``type_index`` (a later call replaces
    it); every language reads it (C: ``RFFIGetTypeAttrColumn``)."""
    _ffi("ffi.TypeRegisterAttr")(type_index, attr_key, value)


def _field_property(name: str, doc: str, writable: bool):
    get = _ffi("ffi.ObjectGetField")
    put = _ffi("ffi.ObjectSetField")

    def fget(self):
        return get(self, name)

    def fset(self, value):
        put(self, name, value)

    return property(fget, fset if writable else None, doc=doc or None)


def _instance_method(fn, name: str, doc: str):
    def method(self, *args):
        return fn(self, *args)

    method.__name__ = name
    method.__doc__ = doc or None
    return method


def _init_from(fn):
    def __init__(self, *args):
        made = fn(*args)
        if not isinstance(made, Object):
            raise TypeError(f"__ffi_init__ returned {type(made).__name__}, not an object")
        # Adopt the new object's reference.
        self._h, self._ti = made._h, made._ti
        made._h = 0

    return __init__


def register_object(type_key: str | None = None):
    """Class decorator binding a Python class to the runtime type ``type_key`` (default: the
    class's ``__rffi_type_key__`` or name). The class must derive from ``rffi.Object``."""

    def bind(cls):
        key = type_key or getattr(cls, "__rffi_type_key__", None) or cls.__name__
        if not (isinstance(cls, type) and issubclass(cls, Object)):
            raise TypeError(f"register_object({key!r}): {cls!r} must be a subclass of rffi.Object")
        info = type_info(key)
        install_members(cls, info)
        return cls

    if isinstance(type_key, type):  # used bare: @register_object
        cls, type_key = type_key, None
        return bind(cls)
    return bind


def install_members(cls, info: dict, *, fields: bool = True, ffi_init: bool = True) -> None:
    """Puts the type's fields, methods and docs on ``cls`` and maps its index to ``cls``; the
    type's ``__ffi_init__`` becomes ``__init__`` unless ``ffi_init`` is False (the caller makes
    one)."""
    index = info["type_index"]
    cls.__rffi_type_key__ = info["type_key"]
    cls.__rffi_type_index__ = index
    if fields:
        for f in info["fields"]:
            if f["name"] not in cls.__dict__:
                writable = bool(f["flags"] & FLAG_WRITABLE)
                setattr(cls, f["name"], _field_property(f["name"], f["doc"], writable))
    get_method = _ffi("ffi.TypeGetMethod")
    for m in info["methods"]:
        name = m["name"]
        fn = get_method(index, name)
        if name == "__ffi_init__":
            if ffi_init and "__init__" not in cls.__dict__:
                cls.__init__ = _init_from(fn)
            continue
        if name in cls.__dict__:
            continue
        if m["flags"] & FLAG_STATIC_METHOD:
            setattr(cls, name, staticmethod(fn))
        else:
            setattr(cls, name, _instance_method(fn, name, m["doc"]))
    if not cls.__doc__ and info["doc"]:
        cls.__doc__ = info["doc"]
    CLASS_OF_INDEX[index] = cls


def isinstance_of(obj, key_or_index) -> bool:
    """Whether ``obj``'s runtime type is ``key_or_index`` or derives from it (one lookup)."""
    return isinstance(obj, Object) and bool(_ffi("ffi.ObjectIsInstance")(obj, key_or_index))


def fallback_class(index: int):
    """A class for a registered type that has none in Python (built once from its type info,
    deriving from its parent's class): objects of any type show their fields and methods."""
    cls = CLASS_OF_INDEX.get(index)
    if cls is not None:
        return cls
    info = type_info(index)
    parent = Object
    if len(info["ancestors"]) > 1:
        parent_index = _ffi("ffi.TypeKeyToIndex")(info["ancestors"][-1])
        if parent_index >= 128:
            parent = fallback_class(parent_index)
    key = info["type_key"]
    module, _, name = key.rpartition(".")
    doc = f"Auto-generated fallback class for the runtime type `{key}` (no class registered)."
    if info["doc"]:
        doc += "\n\n" + info["doc"]
    # Named as the key says: module `testing`, qualified name `testing.Name`.
    cls = type(name, (parent,), {"__module__": module or "rffi.fallback", "__doc__": doc})
    cls.__qualname__ = key
    install_members(cls, info)
    return cls
