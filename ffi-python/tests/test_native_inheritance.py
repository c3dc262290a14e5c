"""py_class types extending types declared in Rust (testing.TestPoint, testing.TestIntPair):
the native fields stay the Rust struct's (its getters, setters and methods), the Python fields
live in the same runtime object, and every language sees one object of both types. Type
attributes (`_register_type_attr` / `_lookup_type_attr`) are here too."""

import copy
import pickle

import pytest

import rffi
import rffi.testing
from rffi import dataclasses as dc

# Whatever class Python has for the Rust type (another test module may bind one).
Point = type(rffi.get_global_func("testing.make_point")(0, 0))


@dc.py_class("test_native_inheritance.Tagged")
class Tagged(Point):
    tag: str = "none"
    weight: float = 1.0


@dc.py_class("test_native_inheritance.Ranked", eq=True)
class Ranked(Tagged):
    rank: int = 0


def test_init_takes_the_native_fields_then_the_python_ones():
    t = Tagged(3, 4, "lbl", tag="t", weight=2)
    assert (t.x, t.y, t.label, t.tag, t.weight) == (3, 4, "lbl", "t", 2.0)
    assert isinstance(t.weight, float)  # converted by the field's schema
    # The native fields' defaults come from Rust (y=0, label="origin").
    d = Tagged(5)
    assert (d.x, d.y, d.label, d.tag) == (5, 0, "origin", "none")
    assert repr(d) == "Tagged(x=5, y=0, label='origin', tag='none', weight=1.0)"
    with pytest.raises(TypeError, match="missing required argument: 'x'"):
        Tagged()
    with pytest.raises(TypeError, match=r"argument #0 \(`x`\): expected int, got str"):
        Tagged("five")
    with pytest.raises(TypeError, match="keyword argument `tag`"):
        Tagged(1, tag=3)


def test_isinstance_holds_in_python_and_in_the_runtime():
    t = Tagged(1)
    assert isinstance(t, Tagged) and isinstance(t, Point) and isinstance(t, rffi.Object)
    index = rffi.type_info("testing.TestPoint")["type_index"]
    assert rffi.get_global_func("ffi.ObjectIsInstance")(t, index)
    assert rffi.get_global_func("ffi.ObjectIsInstance")(t, "test_native_inheritance.Tagged")
    info = rffi.type_info("test_native_inheritance.Ranked")
    assert info["ancestors"][-2:] == ["testing.TestPoint", "test_native_inheritance.Tagged"]


def test_rust_methods_and_field_rules_apply_to_the_native_part():
    t = Tagged(2, 3)
    assert t.sum() == 5  # a Rust method taking Obj<TestPoint>
    assert t.shift(10) == 13 and t.y == 13
    t.y = 1  # Mut<i64>: writable through its Rust setter
    assert t.sum() == 3
    with pytest.raises(AttributeError):
        t.x = 9  # frozen in Rust
    with pytest.raises(TypeError, match="expected float"):
        t.weight = "heavy"
    t.tag = "changed"
    assert t.tag == "changed"


def test_other_languages_read_both_parts_by_name():
    get = rffi.get_global_func("ffi.ObjectGetField")
    set_ = rffi.get_global_func("ffi.ObjectSetField")
    t = Tagged(7, tag="from python")
    assert get(t, "x") == 7 and get(t, "tag") == "from python"
    set_(t, "tag", "from the runtime")
    assert t.tag == "from the runtime"
    # Passed through Rust and back, it is still the same Python class.
    echo = rffi.get_global_func("testing.echo")
    back = echo(t)
    assert type(back) is Tagged and back.same_as(t)


def test_grandchildren_copies_and_equality():
    r = Ranked(1, 2, "l", tag="t", rank=3)
    assert (r.x, r.tag, r.rank) == (1, "t", 3)
    assert r.sum() == 3
    assert r == Ranked(1, 2, "l", tag="t", rank=3)
    assert r != Ranked(1, 2, "l", tag="t", rank=4)
    c = copy.deepcopy(r)
    assert c == r and not c.same_as(r)
    assert type(c) is Ranked
    c.y = 50  # the copy's native part is its own
    assert r.y == 2
    p = pickle.loads(pickle.dumps(r))
    assert p == r
    assert rffi.structural_equal(r, c) is False  # y differs now
    c.y = 2
    assert rffi.structural_equal(r, c)


IntPair = rffi.testing.TestIntPair


@dc.py_class("test_native_inheritance.Labelled", frozen=True, eq=True)
class Labelled(IntPair):
    label: str = ""


def test_a_type_with_a_native_constructor_and_frozen_python_fields():
    p = Labelled(1, 2, label="pair")
    assert (p.a, p.b, p.label) == (1, 2, "pair")
    with pytest.raises(AttributeError):
        p.label = "other"
    assert hash(p) == hash(Labelled(1, 2, label="pair"))


def test_type_attributes_are_per_type_and_optionally_inherited():
    point = rffi.type_info("testing.TestPoint")["type_index"]
    tagged = Tagged.__rffi_type_index__
    assert rffi._lookup_type_attr(point, "test_native_inheritance.__color__") is None
    rffi._register_type_attr(point, "test_native_inheritance.__color__", "red")
    assert rffi._lookup_type_attr(point, "test_native_inheritance.__color__") == "red"
    # A type's own entry only, unless the ancestors are asked too.
    assert rffi._lookup_type_attr(tagged, "test_native_inheritance.__color__") is None
    assert rffi._lookup_type_attr(tagged, "test_native_inheritance.__color__", True) == "red"
    rffi._register_type_attr(tagged, "test_native_inheritance.__color__", [1, 2])
    assert list(rffi._lookup_type_attr(tagged, "test_native_inheritance.__color__")) == [1, 2]
    with pytest.raises(KeyError, match="unknown type index"):
        rffi._register_type_attr(99999, "x", 1)
