"""The dataclass options of c_class and py_class beyond init/repr/eq: order, kw_only, match_args,
slots, and c_class classes that annotate the runtime type's fields (as tvm-ffi's c_class does)."""

import json

import pytest

import rffi
from rffi import dataclasses as dc

_REG = rffi.get_global_func("ffi.TypeRegisterValueType")


def _native_type(key, fields):
    """A type whose fields the runtime lays out (as a C type with a field table would be)."""
    spec = [
        {"name": n, "type_schema": json.dumps({"type": t}), "doc": f"The {n}."} for n, t in fields
    ]
    return _REG(key, None, json.dumps(spec))


_native_type("test_options.Pair", [("a", "int"), ("b", "float")])
_native_type("test_options.Triple", [("x", "int"), ("y", "int"), ("z", "ffi.String")])


@dc.c_class("test_options.Pair", order=True, eq=True)
class Pair:
    """Fields annotated in another order than the runtime's, with a Python default."""

    b: float
    a: int = 5


def test_c_class_takes_the_annotated_fields_order_and_defaults():
    p = Pair(1.5)
    assert (p.a, p.b) == (5, 1.5) and repr(p) == "Pair(b=1.5, a=5)"
    assert Pair(2.0, a=1).a == 1 and Pair.__match_args__ == ("b", "a")
    assert Pair.b.__doc__ == "The b."  # still the runtime field's property
    with pytest.raises(TypeError, match=r"Pair.__init__\(\) argument #0 \(`b`\): expected float"):
        Pair("x")
    # Read from the runtime by name: the Python default was stored in the object.
    assert rffi.get_global_func("ffi.ObjectGetField")(p, "a") == 5


def test_c_class_annotations_must_match_the_runtime_type():
    with pytest.raises(ValueError, match=r"Extraneous field `.*Extra.c`.*`test_options.Pair`"):

        @dc.c_class("test_options.Pair")
        class Extra:
            a: int
            b: float
            c: int

    with pytest.raises(ValueError, match=r"Missing fields in `.*Short`: `b`"):

        @dc.c_class("test_options.Pair")
        class Short:
            a: int


def test_c_class_field_options_kw_only_sentinel_and_factories():
    @dc.c_class("test_options.Triple")
    class Triple:
        x: int
        _: dc.KW_ONLY
        y: int = dc.field(default_factory=lambda: 7, repr=False)
        z: str = "zed"

    t = Triple(1)
    assert (t.x, t.y, t.z) == (1, 7, "zed") and repr(t).endswith("Triple(x=1, z='zed')")
    with pytest.raises(TypeError, match="takes 2 positional arguments but 3 were given"):
        Triple(1, 2)
    assert Triple(1, y=2).y == 2 and Triple.__match_args__ == ("x",)


def test_order_compares_fields_as_tuples():
    assert Pair(1.0, 2) < Pair(1.0, 3) < Pair(2.0, 0)
    assert Pair(1.0) <= Pair(1.0) and Pair(3.0) > Pair(2.0) >= Pair(2.0)
    assert sorted([Pair(3.0), Pair(1.0), Pair(2.0)]) == [Pair(1.0), Pair(2.0), Pair(3.0)]
    with pytest.raises(TypeError):
        Pair(1.0) < 1  # noqa: B015

    # Without eq (the default, as tvm-ffi's): ordered by fields, equal by identity.
    @dc.py_class("test_options.NoEq", order=True)
    class NoEq:
        a: int

    one = NoEq(1)
    assert NoEq(1) < NoEq(2) and NoEq(1) <= NoEq(1)
    assert one == one and NoEq(1) != NoEq(1) and len({one, one, NoEq(1)}) == 2


def test_kw_only_class_and_match_args_and_slots():
    @dc.py_class("test_options.Point", kw_only=True, order=True, slots=True)
    class Point:
        x: int
        y: int = 0

    p = Point(x=1)
    assert (p.x, p.y) == (1, 0) and Point.__match_args__ == ()
    with pytest.raises(TypeError, match="takes 1 positional arguments but 2 were given"):
        Point(1)
    with pytest.raises(AttributeError):
        p.other = 1  # slots: no instance dict
    assert Point(x=1) < Point(x=1, y=1)

    @dc.py_class("test_options.Located", match_args=False)
    class Located:
        where: str

    assert "__match_args__" not in Located.__dict__ and Located("here").where == "here"


def test_c_class_kw_only_without_annotations():
    @dc.c_class("test_options.Pair", kw_only=True)
    class KwPair:
        pass

    assert (KwPair(a=1, b=2.0).a, KwPair(b=0.5, a=2).b) == (1, 0.5)
    with pytest.raises(TypeError, match="takes 1 positional arguments but 3 were given"):
        KwPair(1, 2.0)
