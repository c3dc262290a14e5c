"""Object types with fields and methods from Python: Rust- and C-registered types bound with
register_object / c_class, Python-defined py_class types read from Rust, type schemas and function
signatures, and the mutable List and Dict."""

import copy
import inspect
import pickle
from typing import Dict, List, Optional

import pytest

import rffi
from rffi import dataclasses as dc


@rffi.register_object("testing.TestPoint")
class Point(rffi.Object):
    pass


@rffi.register_object("testing.TestPoint3")
class Point3(Point):
    pass


def test_register_object_fields_methods_and_docs():
    p = rffi.get_global_func("testing.make_point")(1, 2)
    assert type(p) is Point
    assert (p.x, p.y, p.label) == (1, 2, "made in Rust")
    assert p.sum() == 3
    assert p.shift(5) == 7 and p.y == 7
    p.y = 10  # a writable field, type-checked in the runtime
    assert p.y == 10
    with pytest.raises(TypeError, match="expected int, got str"):
        p.y = "ten"
    with pytest.raises(AttributeError):
        p.x = 5  # frozen: a read-only property
    assert Point.__doc__ == "A point for tests."
    assert Point.x.__doc__ == "The x coordinate (frozen)."
    assert Point.shift.__doc__ == "Adds `d` to y and returns the new y."


def test_constructor_inheritance_and_isinstance():
    p3 = Point3(1, 2, 0.5)  # __ffi_init__ becomes __init__
    assert isinstance(p3, Point)
    assert (p3.x, p3.z, p3.label) == (1, 0.5, "3d")
    assert p3.sum() == 3.5  # the derived method overrides
    assert p3.shift(1) == 3  # the inherited one is reached through the parent
    echoed = rffi.get_global_func("testing.echo")(p3)
    assert type(echoed) is Point3 and echoed.same_as(p3)
    info = rffi.type_info("testing.TestPoint3")
    assert info["ancestors"] == ["ffi.Object", "testing.TestPoint"]
    assert [f["name"] for f in info["fields"]] == ["z"]
    assert "testing.TestPoint3" in rffi.get_registered_type_keys()


# A type registered by native code, with runtime-laid-out fields (as a C type with a field table).
rffi.get_global_func("ffi.TypeRegisterValueType")(
    "test_native.Pair",
    None,
    '[{"name": "a", "flags": 0, "type_schema": "{\\"type\\":\\"int\\"}"},'
    ' {"name": "b", "flags": 1024}]',
)


@dc.c_class("test_native.Pair", eq=True)
class Pair(rffi.Object):
    pass


def test_c_class_init_repr_eq():
    a = Pair(1, b="x")  # b is keyword-only (flag 1 << 10)
    assert (a.a, a.b) == (1, "x")
    assert a == Pair(1, b="x") and a is not Pair(1, b="x")
    assert repr(a) == "Pair(a=1, b='x')"
    assert a != Pair(2, b="x")
    with pytest.raises(TypeError):
        Pair(1, "x")
    with pytest.raises(TypeError):
        hash(a)  # eq without frozen: unhashable, as dataclasses


@dc.py_class("test_py.Particle")
class Particle:
    """A particle defined in Python."""

    mass: float
    name: str = "p"
    tags: List[int] = dc.field(default_factory=list)
    _: dc.KW_ONLY
    charge: int = 0


@dc.py_class("test_py.Heavy")
class Heavy(Particle):
    weight: Optional[float] = None


def test_py_class_init_defaults_kw_only_and_checks():
    p = Particle(2, "e", charge=-1)
    assert p.mass == 2.0 and isinstance(p.mass, float)  # int widened by the field's schema
    assert (p.name, list(p.tags), p.charge) == ("e", [], -1)
    with pytest.raises(TypeError):
        Particle(1, "e", [], 5)  # charge is keyword-only
    with pytest.raises(TypeError, match="missing required argument: 'mass'"):
        Particle()
    with pytest.raises(TypeError, match="expected str"):
        p.name = 3
    with pytest.raises(TypeError, match=r"at \[1\]"):
        p.tags = [1, "x"]
    assert repr(p).startswith("Particle(mass=2.0, name='e'")
    assert Particle.__doc__ == "A particle defined in Python."


def test_py_class_fields_are_native_and_inherit():
    h = Heavy(1.0, weight=3)
    assert isinstance(h, Particle) and h.weight == 3.0
    # Rust reads the fields by name: they live in the runtime object.
    get = rffi.get_global_func("ffi.ObjectGetField")
    assert get(h, "mass") == 1.0 and get(h, "weight") == 3.0
    info = rffi.type_info("test_py.Heavy")
    assert info["ancestors"][-1] == "test_py.Particle"


@dc.py_class("test_py.Frozen", frozen=True, eq=True)
class Frozen:
    a: int
    b: str = "x"


def test_frozen_and_hash():
    f = Frozen(1)
    with pytest.raises(dc.FrozenInstanceError):
        f.a = 2
    assert hash(f) == hash(Frozen(1)) and f == Frozen(1)


def test_type_schema_from_annotation_and_convert():
    TS = rffi.TypeSchema
    s = TS.from_annotation(Optional[Dict[str, List[float]]])
    assert repr(s) == "Optional[Map[str, Array[float]]]"
    assert TS.from_json(s.to_json()) == s
    assert TS.from_annotation(Point) == TS("testing.TestPoint")
    assert list(TS.from_annotation(List[float]).convert([1, 2])) == [1.0, 2.0]
    with pytest.raises(TypeError, match=r"expected float at \[1\], got str"):
        TS.from_annotation(List[float]).convert([1, "a"])


def test_function_metadata_and_signature():
    meta = rffi.get_global_func_metadata("testing.add_one")
    schema = rffi.TypeSchema.from_json(meta["type_schema"])
    assert schema.origin == "ffi.Function"

    @rffi.register_global_func("test_py.scale", override=True)
    def scale(x: float, k: int = 2) -> float:
        """Scales x."""
        return x * k

    meta = rffi.get_global_func_metadata("test_py.scale")
    assert meta["arg_names"] == ["x", "k"] and meta["doc"] == "Scales x."
    f = rffi.get_global_func("test_py.scale")
    sig = inspect.signature(f)
    assert str(sig) == "(x: float, k: int, /) -> float"


def test_typed_call_error_prints_the_signature():
    with pytest.raises(TypeError, match=r"signature: testing.add_one\(_0: int\) -> int"):
        rffi.get_global_func("testing.add_one")("x")


def test_list_and_dict():
    lst = rffi.List([1, 2])
    lst.append(3)
    lst.insert(0, 0)
    assert lst == [0, 1, 2, 3] and len(lst) == 4 and 2 in lst
    assert lst[-1] == 3 and lst[1:3] == [1, 2]
    lst[0] = 9
    del lst[1]
    assert lst.pop() == 3 and list(lst) == [9, 2]
    assert lst + [5] == [9, 2, 5] and repr(lst) == "[9, 2]"
    same = rffi.get_global_func("testing.echo")(lst)
    same.append(7)  # shared: every holder sees the change
    assert lst == [9, 2, 7]
    assert pickle.loads(pickle.dumps(lst)) == [9, 2, 7]
    assert copy.deepcopy(lst) == lst
    d = rffi.Dict({"a": 1})
    d["b"] = 2
    d.update(c=3)
    assert d.setdefault("a", 5) == 1
    assert dict(d) == {"a": 1, "b": 2, "c": 3} and d == {"a": 1, "b": 2, "c": 3}
    del d["a"]
    assert list(d.keys()) == ["b", "c"] and list(d.values()) == [2, 3]
    assert d.pop("b") == 2 and "b" not in d
    with pytest.raises(KeyError):
        d["zz"]
    assert repr(d) == "{'c': 3}"
    assert pickle.loads(pickle.dumps(d)) == {"c": 3}


def test_objects_cross_a_rust_plugin(rust_plugin_path):
    rffi.load_module(rust_plugin_path)

    @rffi.register_object("rust_plugin.Counter")
    class Counter(rffi.Object):
        pass

    c = rffi.get_global_func("rust_plugin.make_counter")("hits", 1)
    assert type(c) is Counter and c.name == "hits"
    assert c.increment(2) == 3
    c.count = 10
    assert c.count == 10 and Counter.increment.__doc__.startswith("Adds `by`")
    # A Python-defined object's fields, read by the plugin.
    p = Particle(4, "mu")
    read = rffi.get_global_func("rust_plugin.get_field")
    assert read(p, "mass") == 4.0 and read(p, "name") == "mu"
    with pytest.raises(AttributeError, match="has no field `nope`"):
        read(p, "nope")


def test_array_and_map_compare_by_value():
    a = rffi.Array([1, 2])
    assert a == [1, 2] and a == (1, 2) and a == rffi.Array([1, 2]) and a != [2, 1]
    assert hash(a) == hash(rffi.Array([1, 2]))
    assert a + [3] == [1, 2, 3] and [0] + a == [0, 1, 2] and 2 in a and a[::-1] == [2, 1]
    assert rffi.List([1, 2]) == a
    m = rffi.Map({"a": 1})
    assert m == {"a": 1} and m == rffi.Map({"a": 1}) and m == rffi.Dict({"a": 1})
    assert {m: 1}[rffi.Map({"a": 1})] == 1


@dc.enum("test_py.Color")
class Color:
    RED = 1
    GREEN = "green"


def test_enum_members_are_objects():
    assert [m.name for m in Color] == ["RED", "GREEN"] and len(Color) == 2
    assert Color(1) is Color.RED and Color.GREEN.value == "green"
    echoed = rffi.get_global_func("testing.echo")(Color.RED)
    assert echoed == Color.RED and echoed.name == "RED"
    assert rffi.get_global_func("ffi.ObjectGetField")(Color.GREEN, "value") == "green"
    with pytest.raises(ValueError):
        Color(3)
    with pytest.raises(AttributeError):
        Color.RED.value = 5
    assert repr(Color.RED) == "<Color.RED: 1>"


def test_tvm_ffi_names_through_an_alias():
    import rffi as tvm_ffi

    meta = tvm_ffi.get_global_func_metadata("testing.add_one")
    schema = tvm_ffi.TypeSchema.from_json_str(meta["type_schema"])
    assert repr(schema) == "Callable[[int], int]"
    obj = tvm_ffi.get_global_func("testing.make_point")(1, 2)
    assert isinstance(obj, tvm_ffi.Object) and obj.sum() == 3
    lst = tvm_ffi.List([1])
    lst.append(2)
    d = tvm_ffi.Dict()
    d["k"] = lst
    assert d["k"] == [1, 2]
    assert "testing.TestPoint" in tvm_ffi.get_registered_type_keys()
    fields = [f.name for f in tvm_ffi.dataclasses.fields(Particle)]
    assert fields == ["mass", "name", "tags", "charge"]


def test_a_type_without_a_python_class_gets_one_from_its_type_info():
    reg = rffi.get_global_func("ffi.TypeRegisterValueType")
    base = reg("test_native.Base", None, '[{"name": "a", "flags": 0}]')
    reg("test_native.Leaf", base, '[{"name": "b", "flags": 0}]')
    obj = rffi.get_global_func("ffi.ObjectCreate")("test_native.Leaf")
    assert type(obj).__name__ == "Leaf" and type(obj).__mro__[1].__name__ == "Base"
    obj.a, obj.b = 1, "two"
    assert (obj.a, obj.b) == (1, "two")
    assert type(rffi.get_global_func("testing.echo")(obj)) is type(obj)
