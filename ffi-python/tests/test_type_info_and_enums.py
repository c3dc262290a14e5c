"""rffi.core's TypeInfo (type information as objects, on every bound class), class-style enums
(rffi.dataclasses.Enum / IntEnum / StrEnum with auto() and entry()), and the object helpers
tvm-ffi's users expect (id_, is_, fallback classes)."""

from __future__ import annotations

import copy

import pytest

import rffi
import rffi.testing
from rffi import dataclasses as dc
from rffi.core import TypeField, TypeInfo, TypeMethod


def test_type_info_of_builtin_and_registered_classes():
    info = rffi.Array.__rffi_type_info__
    assert isinstance(info, TypeInfo)
    assert (info.type_key, info.type_index) == ("ffi.Array", 71)
    assert info.type_cls is rffi.Array
    assert info.parent_type_info.type_cls is rffi.Object
    assert rffi.Object.__rffi_type_info__.parent_type_info is None
    assert rffi.DataType.__tvm_ffi_type_info__.type_key == "DataType"
    assert rffi.core._type_cls_to_type_info(rffi.Device).parent_type_info is None
    assert rffi.core._type_cls_to_type_info(int) is None

    derived = rffi.testing.TestObjectDerived.__rffi_type_info__
    assert derived.parent_type_info.type_cls is rffi.testing.TestObjectBase
    assert derived.type_ancestors[-1] == rffi.testing.TestObjectBase.__rffi_type_index__
    assert [f.name for f in derived.fields] == ["v_map", "v_array"]  # its own fields
    assert all(isinstance(f, TypeField) and not f.frozen for f in derived.fields)
    assert derived.fields[0].ty.origin == "ffi.Map" and derived.fields[0].doc == "map field"

    base = rffi.testing.TestObjectBase.__rffi_type_info__
    add = next(m for m in base.methods if m.name == "add_i64")
    assert isinstance(add, TypeMethod) and not add.is_static
    obj = rffi.testing.TestObjectBase()
    assert add.func(obj, 5) == 15
    assert add.as_callable(type(obj))(obj, 1) == 11


def test_generated_init_takes_keywords_and_defaults():
    base = rffi.testing.TestObjectBase()
    assert (base.v_i64, base.v_f64, base.v_str) == (10, 10.0, "hello")
    derived = rffi.testing.TestObjectDerived(v_map={"a": 1}, v_array=[1], v_i64=3)
    assert derived.v_i64 == 3 and list(derived.v_array) == [1]
    assert isinstance(derived, rffi.testing.TestObjectBase)
    assert not isinstance(base, rffi.testing.TestObjectDerived)


def test_id_is_and_fallback_classes():
    x, y = rffi.testing.TestIntPair(1, 2), rffi.testing.TestIntPair(1, 2)
    assert x.id_ == x.__chandle__() != y.id_
    assert x.is_(x) and not x.is_(y) and not x.is_(None)

    obj = rffi.testing.make_unregistered_object()
    cls = type(obj)
    assert (cls.__name__, cls.__module__, cls.__qualname__) == (
        "TestUnregisteredObject",
        "testing",
        "testing.TestUnregisteredObject",
    )
    assert "fallback class" in cls.__doc__
    assert (obj.v1, obj.v2, obj.get_v1_plus_one(), obj.get_v2_plus_two()) == (41, 42, 42, 44)
    assert cls.__rffi_type_info__.parent_type_info.type_key == "testing.TestUnregisteredBaseObject"


def test_schema_all_types():
    s = rffi.testing._SchemaAllTypes.make_with(3, 1.5, "text")
    assert (s.v_int, s.v_float, s.v_string, s.v_opt_int) == (3, 1.5, "text", None)
    assert s.add_int(4) == 7
    assert list(s.append_int([1], 2)) == [1, 2]
    assert s.maybe_concat("a", "b") == "ab" and s.maybe_concat(None, "b") == "b"
    assert s.maybe_concat(None, None) is None
    merged = s.merge_map({"k": [1]}, {"k": [2], "j": [3]})
    assert list(merged["k"]) == [1, 2] and list(merged["j"]) == [3]


@pytest.mark.parametrize(
    ("name", "value", "kind", "bad"),
    [
        ("arr_int", rffi.List([1, 2]), rffi.Array, ["x"]),
        ("list_int", rffi.Array([1, 2]), rffi.List, [1.5]),
        ("list_str", ["a"], rffi.List, [1]),
        ("map_str_int", rffi.Dict({"a": 1}), rffi.Map, {"a": "b"}),
        ("dict_str_str", rffi.Map({"a": "b"}), rffi.Dict, {1: "b"}),
    ],
)
def test_schema_identities_convert_between_container_types(name, value, kind, bad):
    f = getattr(rffi.testing, f"schema_id_{name}")
    out = f(value)
    assert type(out) is kind
    if kind in (rffi.Map, rffi.Dict):
        assert dict(out.items()) == dict(value.items())
    else:
        assert list(out) == list(value)
    with pytest.raises(TypeError, match="expected"):
        f(bad)


def test_deep_copy_goes_into_any_and_object_fields():
    inner = rffi.testing.TestIntPair(3, 4)
    obj = rffi.testing.create_object("testing.TestDeepCopyEdges", v_any=inner, v_obj=inner)
    dup = copy.deepcopy(obj)
    assert not dup.v_any.same_as(inner) and dup.v_any.a == 3
    assert dup.v_any.same_as(dup.v_obj)  # shared in the original: shared in the copy


class Status(dc.Enum, type_key="test_enums.Status"):
    ready = dc.auto()
    done = dc.auto()


class Priority(dc.IntEnum, type_key="test_enums.Priority"):
    low = 1
    high = 20
    higher = dc.auto()


class Op(dc.StrEnum, type_key="test_enums.Op"):
    arity: int = 2

    add = "+"
    neg = dc.entry("-", 1)
    mul = dc.entry("*", arity=2)
    other = dc.auto()


def test_class_enums():
    assert [m.name for m in Status] == ["ready", "done"] and len(Status) == 2
    assert (Status.ready.value, Status.done.value) == (0, 1)
    assert Status(1) is Status.done and Status.get("ready") is Status.ready
    assert list(Status.all_entries()) == [Status.ready, Status.done]
    assert (Priority.low.value, Priority.high.value, Priority.higher.value) == (1, 20, 21)
    assert Priority.high == 20 and hash(Priority.high) == hash(20)
    assert Op.add == "+" and Op.other.value == "other"
    assert (Op.add.arity, Op.neg.arity, Op.mul.arity) == (2, 1, 2)
    with pytest.raises(ValueError):
        Status(5)
    with pytest.raises(KeyError):
        Status.get("missing")
    with pytest.raises(AttributeError):
        Status.ready.value = 3
    assert repr(Op.neg) == "<Op.neg: '-'>"


def test_enum_members_are_shared_runtime_objects():
    echo = rffi.get_global_func("testing.echo")
    back = echo(Status.done)
    assert type(back) is Status and back.same_as(Status.done) and back == Status.done
    assert rffi.get_global_func("ffi.ObjectGetField")(Op.mul, "value") == "*"
    members = rffi._lookup_type_attr(Status.__rffi_type_index__, "__ffi_enum__")
    assert members["done"].same_as(Status.done)
    # Copies keep members: they are singletons (other objects are copied).
    assert copy.deepcopy(Status.ready) is Status.ready and copy.copy(Op.add) is Op.add
    arr = rffi.Array([Status.ready, Priority.high, rffi.Array([Op.add])])
    dup = rffi.deep_copy(arr)
    assert not dup.same_as(arr) and not dup[2].same_as(arr[2])
    assert dup[0].same_as(Status.ready) and dup[2][0].same_as(Op.add)


def test_bad_enum_declarations():
    with pytest.raises(TypeError, match="must be int"):

        class Bad(dc.IntEnum, type_key="test_enums.Bad"):
            x = "text"

    with pytest.raises(TypeError, match="no field"):

        class Bad2(dc.StrEnum, type_key="test_enums.Bad2"):
            x = dc.entry("x", missing=1)

    class Base(dc.IntEnum):  # no type key: an abstract base
        pass

    class Child(Base, type_key="test_enums.Child"):
        one = 1

    assert Child.one.value == 1 and len(Base) == 0
