"""`dataclasses`' module functions and copy rules for c_class / py_class types (tvm-ffi's
`rffi.dataclasses.is_dataclass`, `fields`, `asdict`, `astuple`, `replace`), frozen fields'
`object.__setattr__` escape hatch, and classes with their own `__init__`."""

import collections
import copy

import pytest

import rffi
import rffi.testing
from rffi import dataclasses as dc


@dc.py_class("test_dc_functions.Inner")
class Inner(rffi.Object):
    v: int


@dc.py_class("test_dc_functions.Outer", frozen=True)
class Outer(rffi.Object):
    inner: Inner
    items: rffi.Array
    note: str = dc.field(default="n", init=False)


def test_is_dataclass_and_fields():
    pair = rffi.testing.TestIntPair(1, 2)
    assert dc.is_dataclass(pair) and dc.is_dataclass(Outer) and dc.is_dataclass(Inner(v=1))
    assert not dc.is_dataclass(rffi.Object) and not dc.is_dataclass(3)
    assert [(f.name, f.type) for f in dc.fields(pair)] == [("a", int), ("b", int)]
    assert [f.name for f in dc.fields(Outer)] == ["inner", "items", "note"]
    assert dc.fields(Outer)[2].default == "n"
    with pytest.raises(TypeError, match="c_class or py_class"):
        dc.fields(42)


def test_asdict_and_astuple_recurse_into_objects_and_containers():
    o = Outer(Inner(v=1), rffi.Array([Inner(v=2), rffi.Map({"k": Inner(v=3)})]))
    assert dc.asdict(o) == {"inner": {"v": 1}, "items": [{"v": 2}, {"k": {"v": 3}}], "note": "n"}
    d = dc.asdict(o, dict_factory=collections.OrderedDict)
    assert isinstance(d, collections.OrderedDict)
    assert isinstance(d["inner"], collections.OrderedDict)
    assert type(d["items"]) is list
    assert dc.astuple(o) == ((1,), [(2,), {"k": (3,)}], "n")
    assert dc.astuple(o, tuple_factory=list) == [[1], [[2], {"k": [3]}], "n"]
    for fn in (dc.asdict, dc.astuple):
        with pytest.raises(TypeError, match="c_class / py_class instances"):
            fn(Outer)


def test_replace_makes_a_new_object_frozen_fields_included():
    pair = rffi.testing.TestIntPair(3, 4)
    p2 = dc.replace(pair, a=10)  # `a` is frozen in Rust; the new object is built with it
    assert (p2.a, p2.b, pair.a) == (10, 4, 3) and not p2.same_as(pair)
    o = Outer(Inner(v=1), rffi.Array([]))
    o2 = dc.replace(o, inner=Inner(v=5))
    assert (o2.inner.v, o.inner.v, o2.note) == (5, 1, "n")
    with pytest.raises(TypeError, match="unexpected keyword argument 'note'"):
        dc.replace(o, note="init=False fields are not replaced")
    with pytest.raises(TypeError, match=r"argument `inner`: expected"):
        dc.replace(o, inner=3)


def test_copy_copy_makes_a_new_object_sharing_the_field_values():
    o = Outer(Inner(v=1), rffi.Array([1]))
    c = copy.copy(o)
    assert not c.same_as(o) and c.inner.same_as(o.inner)  # shallow
    object.__setattr__(c, "inner", Inner(v=2))
    assert o.inner.v == 1 and c.inner.v == 2


def test_frozen_fields_refuse_assignment_but_not_object_setattr():
    o = Outer(Inner(v=1), rffi.Array([]))
    with pytest.raises(dc.FrozenInstanceError, match="'inner'"):
        o.inner = Inner(v=2)
    with pytest.raises(dc.FrozenInstanceError, match="'other'"):
        o.other = 1  # a frozen class takes no new attributes either
    with pytest.raises(dc.FrozenInstanceError, match="'inner'"):
        del o.inner
    object.__setattr__(o, "inner", Inner(v=9))  # the escape hatch of `dataclasses`
    assert o.inner.v == 9
    with pytest.raises(TypeError, match="expected"):
        object.__setattr__(o, "inner", "not an Inner")  # still type-checked
    # Other languages still see the field frozen.
    with pytest.raises(AttributeError, match="frozen"):
        rffi.get_global_func("ffi.ObjectSetField")(o, "inner", Inner(v=3))

    @dc.py_class("test_dc_functions.OneFrozen")
    class OneFrozen(rffi.Object):
        x: int = dc.field(frozen=True)
        y: int = 0

    f = OneFrozen(1)
    f.y = 2
    with pytest.raises(dc.FrozenInstanceError):
        f.x = 2


def test_a_class_with_its_own_init_sets_fields_on_a_fresh_object():
    @dc.py_class("test_dc_functions.Own", frozen=True, init=False)
    class Own(rffi.Object):
        x: int
        label: str = "l"

        def __init__(self, x):
            object.__setattr__(self, "x", x * 2)

    o = Own(4)
    # A field's default is there before __init__ runs (as a dataclass's class attribute would
    # give it), so the object never holds a None its `str` field refuses.
    assert o.x == 8 and o.label == "l"
    assert copy.copy(o).label == "l"
    assert rffi.get_global_func("ffi.ObjectGetField")(o, "x") == 8
    with pytest.raises(dc.FrozenInstanceError):
        o.x = 1


def test_eq_defaults_to_identity_as_in_tvm_ffi():
    a, b = Inner(v=1), Inner(v=1)
    assert a != b and a == a and len({a, b}) == 2

    @dc.py_class("test_dc_functions.ByValue", eq=True)
    class ByValue(rffi.Object):
        v: int

    assert ByValue(v=1) == ByValue(v=1)


def test_init_takes_required_fields_first_and_shows_its_signature():
    import inspect

    @dc.py_class("test_dc_functions.Base")
    class Base(rffi.Object):
        x: int = 0
        items: list = dc.field(default_factory=list)

    @dc.py_class("test_dc_functions.Child")
    class Child(Base):
        y: int  # required after the parent's defaults: taken first, as tvm-ffi does
        _: dc.KW_ONLY
        z: int = 3

    assert str(inspect.signature(Child.__init__)) == "(self, y, x=0, items=<factory>, *, z=3)"
    c = Child(5)
    assert (c.x, c.y, list(c.items), c.z) == (0, 5, [], 3)
    assert Child.__match_args__ == ("x", "items", "y")  # field order
    with pytest.raises(TypeError, match="missing required argument: 'y'"):
        Child()


def test_tvm_ffi_testing_classes_over_rust_types():
    import inspect

    t = rffi.testing
    base = t._TestCxxClassBase(v_i64=10, v_i32=20)
    assert (base.v_i64, base.v_i32) == (11, 22)  # its own __init__
    assert copy.copy(base).v_i64 == 11  # copies keep the values
    dd = t._TestCxxClassDerivedDerived(1, 2, 3, True)
    assert (dd.v_f64, dd.v_f32, dd.v_str, dd.v_bool) == (3.0, 8.0, "default", True)
    sig = "(self, v_i64, v_i32, v_f64, v_bool, v_f32=8.0, v_str='default')"
    assert str(inspect.signature(t._TestCxxClassDerivedDerived.__init__)) == sig
    by_name = {f.name: f for f in dc.fields(t._TestCxxClassDerived)}
    assert by_name["v_f32"].default == 8.0 and by_name["v_f32"].default_factory is dc.MISSING
    assert by_name["v_f64"].default is dc.MISSING
    assert t._TestCxxClassDerived.__match_args__ == ("v_i64", "v_i32", "v_f64", "v_f32")
    sub = t._TestCxxInitSubset(7)
    assert (sub.required_field, sub.optional_field, sub.note) == (7, -1, "default")
    with pytest.raises(TypeError, match="unexpected keyword argument 'optional_field'"):
        sub.__replace__(optional_field=1)
    with pytest.raises(TypeError, match="positional"):
        t._TestCxxKwOnly(1, 2, 3)
    assert t._TestCxxKwOnly(x=1, y=2, z=3).w == 100


def test_an_own_init_starts_from_the_fields_defaults():
    # A class's own __init__ runs on a fresh object whose fields with a default hold it: a `str`
    # field with a default held None (which its type refuses, so copies and pickles failed).
    @dc.py_class("test_dataclass_functions.OwnInit")
    class OwnInit:
        n: int
        tag: str = "none"
        names: list[str] = dc.field(default_factory=lambda: ["a"])

        def __init__(self, n):
            self.n = n

    o = OwnInit(3)
    assert (o.n, o.tag, list(o.names)) == (3, "none", ["a"])
    for c in (copy.copy(o), copy.deepcopy(o)):
        assert (c.n, c.tag, list(c.names)) == (3, "none", ["a"])

    # Over a type declared in Rust: its fields' defaults are the runtime's, the class's own
    # are given as above.
    @dc.py_class("test_dataclass_functions.OwnInitNative")
    class OwnInitNative(rffi.testing.TestObjectBase):
        tag: str = "none"

        def __init__(self, v):
            self.v_i64 = v

    n = OwnInitNative(5)
    assert (n.v_i64, n.v_str, n.tag) == (5, "hello", "none")
    assert copy.deepcopy(n).tag == "none"


def test_an_own_init_that_raises_or_copies_its_object_half_made():
    # The object exists before a class's own __init__ runs: one that raises leaves it usable
    # (fields at their defaults), and copies made inside __init__ copy what is there so far.
    seen = []

    @dc.py_class("test_dataclass_functions.Fragile")
    class Fragile:
        n: int = 0
        tag: str = "t"

        def __init__(self, mode):
            seen.append(self)
            if mode == "copy":
                seen.append((copy.copy(self), copy.deepcopy(self)))
            if mode == "raise":
                raise ValueError("init failed")
            self.n = 1

    with pytest.raises(ValueError, match="^init failed$"):
        Fragile("raise")
    half = seen[0]
    assert (half.n, half.tag, copy.deepcopy(half).tag) == (0, "t", "t")
    f = Fragile("copy")
    c, d = seen[-1]
    assert (f.n, c.n, d.n, c.tag, d.tag) == (1, 0, 0, "t", "t")
