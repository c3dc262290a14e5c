"""The methods ``c_class`` and ``py_class`` generate, as ``dataclasses`` does: ``__init__`` (one
runtime call that makes the object with every field's value, checked there), ``__repr__``,
``__eq__``, ``__hash__``, the ordering methods, ``__match_args__``, and setters that refuse
frozen fields. A class that defines the runtime's hooks (``__ffi_eq__``, ``__ffi_compare__``,
``__ffi_hash__``, ``__ffi_repr__``) is hashed and printed through them (``hash`` is
``RecursiveHash``, ``repr`` is ``ReprPrint``); with ``eq=True`` its ``==`` is ``RecursiveEq``."""

from __future__ import annotations

from ._object_model import _ffi


class FrozenInstanceError(AttributeError):
    """Assigning to a field of a frozen dataclass."""


class RuntimeDefault:
    """A default held by the runtime (computed there, a factory called per object); the runtime
    sets it itself when it makes an object."""

    __slots__ = ("index", "name")

    def __init__(self, index, name):
        self.index, self.name = index, name

    def __call__(self):
        return _ffi("ffi.TypeFieldDefault")(self.index, self.name)


def make_init(cls, all_fields: list, index: int):
    """``__init__`` of ``cls`` (runtime type ``index``) taking ``all_fields`` as dataclasses do."""
    create = _ffi("ffi.ObjectCreateInit")
    # As tvm-ffi orders them: the positional fields without a default first, then those with
    # one (each in field order), so a field without a default may follow one with a default (a
    # child's required field after its parent's defaulted ones).
    positional = [f for f in all_fields if f.init and not f.kw_only]
    positional = [f for f in positional if not f.has_default()] + [
        f for f in positional if f.has_default()
    ]
    keyword = [f for f in all_fields if f.init and f.kw_only]
    by_name = {f.name: f for f in positional + keyword}
    qual = cls.__qualname__
    caller = f"{qual}.__init__()"
    given_by_runtime = {f.name for f in all_fields if isinstance(f.default_factory, RuntimeDefault)}

    def __init__(self, *args, **kwargs):
        if len(args) > len(positional):
            raise TypeError(
                f"{qual}.__init__() takes {len(positional) + 1} positional arguments but "
                f"{len(args) + 1} were given"
            )
        # (field name, argument position or -1 for a keyword, value): the runtime checks each
        # value against its field and names the argument when one does not fit.
        triples = []
        given = set()
        for k, (f, a) in enumerate(zip(positional, args)):
            triples += (f.name, k, a)
            given.add(f.name)
        for name, v in kwargs.items():
            if name in given:
                raise TypeError(f"{qual}.__init__() got multiple values for argument {name!r}")
            if name not in by_name:
                raise TypeError(f"{qual}.__init__() got an unexpected keyword argument {name!r}")
            triples += (name, -1, v)
            given.add(name)
        for f in all_fields:
            if f.name in given or f.name in given_by_runtime:
                continue
            if f.has_default():
                triples += (f.name, -2, f.make_default())
            elif f.init:
                raise TypeError(f"{qual}.__init__() missing required argument: {f.name!r}")
        adopt(self, create(index, caller, *triples))
        post = getattr(self, "__post_init__", None)
        if post is not None:
            post()

    __init__.__qualname__ = f"{qual}.__init__"
    __init__.__signature__ = _init_signature(positional, keyword)
    return __init__


class _Factory:
    def __repr__(self) -> str:
        return "<factory>"


#: The default a signature shows for a field made by a factory (as ``dataclasses``).
_FACTORY = _Factory()


def _init_signature(positional, keyword):
    """What ``inspect.signature`` shows for a generated ``__init__``."""
    import inspect

    def param(f, kind):
        if not f.has_default():
            default = inspect.Parameter.empty
        elif callable(f.default_factory):
            default = _FACTORY
        else:
            default = f.default
        return inspect.Parameter(f.name, kind, default=default)

    return inspect.Signature(
        [inspect.Parameter("self", inspect.Parameter.POSITIONAL_OR_KEYWORD)]
        + [param(f, inspect.Parameter.POSITIONAL_OR_KEYWORD) for f in positional]
        + [param(f, inspect.Parameter.KEYWORD_ONLY) for f in keyword]
    )


def add_dataclass_methods(
    cls, all_fields, *, repr, eq, frozen, unsafe_hash, order=False, match_args=True
):
    """Puts the generated methods on ``cls`` (those it defines itself are kept)."""
    cls.__rffi_fields__ = tuple(all_fields)
    if "__ffi_repr__" in cls.__dict__ and "__repr__" not in cls.__dict__:
        repr_print = _ffi("ffi.ReprPrint")
        cls.__repr__ = lambda self: repr_print(self)  # the hook, through the runtime's printer
    elif repr and "__repr__" not in cls.__dict__:
        shown = [f.name for f in all_fields if f.repr]

        def __repr__(self):
            inner = ", ".join(f"{n}={getattr(self, n)!r}" for n in shown)
            return f"{type(self).__qualname__}({inner})"

        cls.__repr__ = __repr__
    compared = [f.name for f in all_fields if f.compare]
    if _add_hooked_eq_hash(cls, eq):
        pass
    elif eq and "__eq__" not in cls.__dict__:

        def __eq__(self, other):
            if other.__class__ is not self.__class__:
                return NotImplemented
            return all(getattr(self, n) == getattr(other, n) for n in compared)

        cls.__eq__ = __eq__
    if order:
        _add_order(cls, compared)
    if match_args and "__match_args__" not in cls.__dict__:
        cls.__match_args__ = tuple(f.name for f in all_fields if f.init and not f.kw_only)
    hashed = [f.name for f in all_fields if (f.compare if f.hash is None else f.hash)]
    if "__ffi_hash__" in cls.__dict__:
        pass  # hashed by the hook (set above)
    elif unsafe_hash or (eq and frozen):

        def __hash__(self):
            return hash(tuple(_hashable(getattr(self, n)) for n in hashed))

        cls.__hash__ = __hash__
    elif eq:
        cls.__hash__ = None
    _add_replace(cls, all_fields)
    _guard_frozen(cls, all_fields, frozen)


def _add_replace(cls, all_fields) -> None:
    """``__replace__(**changes)`` (``dataclasses.replace`` and ``copy.replace``): a new object
    made in one runtime call from every field's value, frozen ones included."""
    create = _ffi("ffi.ObjectCreateInit")
    names = [f.name for f in all_fields]
    settable = {f.name for f in all_fields if f.init}

    def __replace__(self, **changes):
        for name in changes:
            if name not in settable:
                raise TypeError(
                    f"{type(self).__qualname__}.__replace__() got an unexpected keyword "
                    f"argument {name!r}"
                )
        triples = []
        for n in names:
            triples += (n, -1, changes[n] if n in changes else getattr(self, n))
        cls = type(self)
        made = create(self._ti, f"{cls.__qualname__}.__replace__()", *triples)
        new = cls.__new__(cls)
        adopt(new, made)
        return new

    if "__replace__" not in cls.__dict__:
        cls.__replace__ = __replace__


def _guard_frozen(cls, all_fields, frozen: bool) -> None:
    """Frozen fields (all, with ``frozen=True``): assigning or deleting one is a
    FrozenInstanceError; on a frozen class any attribute is. ``object.__setattr__(obj, name,
    value)`` still writes a field (the runtime's frozen-or-not write), for ``__post_init__`` and
    ``__init__``s of the class's own, as with ``dataclasses``. Other languages see the runtime
    field frozen, and their writes fail."""
    frozen_names = {f.name for f in all_fields if frozen or f.frozen}
    if not frozen_names and not frozen:
        return
    init_field = _ffi("ffi.ObjectInitField")
    for name in frozen_names:
        prop = cls.__dict__.get(name)
        if isinstance(prop, property):
            fset = _bypass_setter(init_field, name)
            setattr(cls, name, property(prop.fget, fset, doc=prop.__doc__))
    if "__setattr__" in cls.__dict__:
        return

    def blocked(name) -> bool:
        return name not in _STORAGE and (frozen or name in frozen_names)

    def __setattr__(self, name, value):
        if blocked(name):
            raise FrozenInstanceError(f"cannot assign to field {name!r}")
        object.__setattr__(self, name, value)

    def __delattr__(self, name):
        if blocked(name):
            raise FrozenInstanceError(f"cannot delete field {name!r}")
        object.__delattr__(self, name)

    cls.__setattr__ = __setattr__
    cls.__delattr__ = __delattr__


#: The wrapper's own attributes (the object's address and type index), never fields.
_STORAGE = frozenset(("_h", "_ti"))


def _bypass_setter(init_field, name):
    def fset(self, value):
        init_field(self, name, value)

    return fset


def adopt(self, made) -> None:
    """Makes ``self`` the wrapper of the new object ``made`` (taking its reference); a reference
    ``self`` held already is released."""
    old = getattr(self, "_h", 0)
    object.__setattr__(self, "_h", made._h)
    object.__setattr__(self, "_ti", made._ti)
    object.__setattr__(made, "_h", old)  # released with `made`


def with_allocation(user_init, all_fields: list):
    """A class's own ``__init__`` made to run on a new runtime object of the class's type (every
    field at its default, or None), so that it can set fields. The runtime gives the defaults it
    knows (a native type's); the class's own (``tag: str = "none"``, factories) are given here,
    so that no field with a default starts as a None its type refuses."""
    create = _ffi("ffi.ObjectCreate")
    init_field = _ffi("ffi.ObjectInitField")
    defaulted = [
        f
        for f in all_fields
        if f.has_default() and not isinstance(f.default_factory, RuntimeDefault)
    ]

    def __init__(self, *args, **kwargs):
        if not getattr(self, "_h", 0):
            obj = create(type(self).__rffi_type_index__)
            for f in defaulted:
                init_field(obj, f.name, f.make_default())
            adopt(self, obj)
        user_init(self, *args, **kwargs)

    __init__.__wrapped__ = user_init
    __init__.__doc__ = user_init.__doc__
    __init__.__qualname__ = getattr(user_init, "__qualname__", "__init__")
    return __init__


def _add_hooked_eq_hash(cls, eq: bool) -> bool:
    """``==`` and ``hash`` through the runtime for a class with comparison hooks; whether it has
    them."""
    ns = cls.__dict__
    if not any(h in ns for h in ("__ffi_eq__", "__ffi_compare__", "__ffi_hash__")):
        return False
    if eq and "__eq__" not in ns:
        recursive_eq = _ffi("ffi.RecursiveEq")

        def __eq__(self, other):
            if other.__class__ is not self.__class__:
                return NotImplemented
            return recursive_eq(self, other)

        cls.__eq__ = __eq__
    if "__ffi_hash__" in ns and "__hash__" not in ns:
        recursive_hash = _ffi("ffi.RecursiveHash")
        cls.__hash__ = lambda self: recursive_hash(self)
    return True


def _add_order(cls, compared: list) -> None:
    """``<``, ``<=``, ``>``, ``>=`` comparing the fields as tuples, as dataclasses' ``order``."""

    def key(obj):
        return tuple(getattr(obj, n) for n in compared)

    def make(name, op):
        def compare(self, other):
            if other.__class__ is not self.__class__:
                return NotImplemented
            return op(key(self), key(other))

        compare.__name__ = name
        return compare

    for name, op in (
        ("__lt__", lambda a, b: a < b),
        ("__le__", lambda a, b: a <= b),
        ("__gt__", lambda a, b: a > b),
        ("__ge__", lambda a, b: a >= b),
    ):
        if name in cls.__dict__:
            raise TypeError(
                f"cannot overwrite attribute {name} in class {cls.__name__}; consider using "
                "functools.total_ordering"
            )
        setattr(cls, name, make(name, op))


def _hashable(v):
    try:
        hash(v)
        return v
    except TypeError:
        return id(v)


def frozen_setter(name):
    """The setter of a frozen field's property: a FrozenInstanceError."""

    def fset(self, value):
        raise FrozenInstanceError(f"cannot assign to field {name!r}")

    return fset
