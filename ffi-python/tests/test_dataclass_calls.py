"""Calls on object types are checked against their annotations and schemas, whichever language
calls: py_class constructors, methods marked with rffi.dataclasses.method, the constructors and
methods of Rust types; frozen py_class fields are read-only in every language."""

import inspect
from typing import List, Optional

import pytest

import rffi
from rffi import dataclasses as dc


@dc.py_class("test_calls.Body")
class Body:
    """A body with a mass."""

    mass: float
    tags: List[int] = dc.field(default_factory=list)
    _: dc.KW_ONLY
    charge: int = 0

    @dc.method
    def scaled(self, k: float, offset: int = 0) -> float:
        """The mass times ``k``, plus ``offset``."""
        return self.mass * k + offset

    @dc.method
    @staticmethod
    def unit(mass: float) -> "Body":
        return Body(mass)

    def plain(self, x: int):  # not marked: a plain Python method
        return x


@dc.py_class("test_calls.Frozen", frozen=True)
class Frozen:
    a: int
    b: Optional[str] = None


@dc.py_class("test_calls.Mixed")
class Mixed:
    fixed: int = dc.field(frozen=True)
    free: int = 0


def test_init_errors_name_the_argument_field_and_types():
    with pytest.raises(
        TypeError, match=r"Body.__init__\(\) argument #0 \(`mass`\): expected float, got str"
    ):
        Body("heavy")
    with pytest.raises(TypeError, match=r"argument #1 \(`tags`\): expected int at \[1\], got str"):
        Body(1.0, [1, "x"])
    with pytest.raises(TypeError, match=r"keyword argument `charge`: expected int, got float"):
        Body(1.0, charge=0.5)
    b = Body(2, charge=-1)  # int widened for the float field
    assert b.mass == 2.0 and isinstance(b.mass, float) and b.charge == -1


def test_a_default_that_does_not_fit_is_named():
    @dc.py_class("test_calls.BadDefault")
    class BadDefault:
        n: int = dc.field(default_factory=lambda: "not an int")

    with pytest.raises(TypeError, match=r"default of field `n`: expected int, got str"):
        BadDefault()


def test_marked_methods_are_runtime_methods_checked_at_call(rust_plugin_path):
    b = Body(2.0)
    assert b.scaled(3) == 6.0 and b.scaled(3, offset=1) == 7.0 and b.scaled(k=2) == 4.0
    with pytest.raises(TypeError) as e:
        b.scaled("x")
    msg = str(e.value)
    assert "argument #1 (`k`) when calling `test_calls.Body.scaled`" in msg
    assert "expected float, got str" in msg
    assert "signature: test_calls.Body.scaled(self: test_calls.Body, k: float, offset: int)" in msg
    with pytest.raises(TypeError, match=r"expects 2 to 3 arguments but 1 was given"):
        b.scaled()
    assert Body.unit(3).mass == 3.0 and isinstance(Body.unit(3), Body)
    assert b.plain("not checked") == "not checked"
    # Help and signatures show the Python definition.
    assert str(inspect.signature(Body.scaled)) == "(self, k: float, offset: int = 0) -> float"
    assert Body.scaled.__doc__.startswith("The mass times")
    # In the type registry, with their schemas, as a Rust type's methods are.
    methods = {m["name"]: m for m in rffi.type_info("test_calls.Body")["methods"]}
    assert set(methods) == {"scaled", "unit"}
    schema = rffi.TypeSchema.from_json(methods["scaled"]["metadata"]["type_schema"])
    assert repr(schema) == "Callable[[test_calls.Body, float, int], float]"
    assert methods["scaled"]["metadata"]["arg_names"] == ["self", "k", "offset"]
    assert methods["unit"]["flags"] & 4  # static
    # Called by name from Rust (a plugin), with the same checks.
    rffi.load_module(rust_plugin_path)
    call = rffi.get_global_func("rust_plugin.call_method")
    assert call(b, "scaled", [1.5]) == 3.0
    with pytest.raises(TypeError, match=r"argument #1 \(`k`\).*expected float, got str"):
        call(b, "scaled", ["x"])


def test_a_method_with_keyword_only_arguments_is_registered_unchecked():
    @dc.py_class("test_calls.KwOnly")
    class KwOnly:
        @dc.method
        def f(self, *, k=1):
            return k

    assert KwOnly().f() == 1
    with pytest.raises(TypeError, match="classmethod"):
        dc.method(classmethod(lambda cls: None))


def test_frozen_fields_are_read_only_in_every_language(rust_plugin_path):
    rffi.load_module(rust_plugin_path)
    set_in_rust = rffi.get_global_func("rust_plugin.set_field")
    get_in_rust = rffi.get_global_func("rust_plugin.get_field")
    f = Frozen(1, "x")
    assert get_in_rust(f, "a") == 1 and get_in_rust(f, "b") == "x"
    with pytest.raises(dc.FrozenInstanceError):
        f.a = 2
    for setter in (set_in_rust, rffi.get_global_func("ffi.ObjectSetField")):
        with pytest.raises(
            AttributeError, match="cannot assign to field `a` of `test_calls.Frozen`"
        ):
            setter(f, "a", 5)
    assert f.a == 1
    flags = {x["name"]: x["flags"] for x in rffi.type_info("test_calls.Frozen")["fields"]}
    assert flags["a"] & 1 == 0 and flags["b"] & 1 == 0  # not writable
    # One frozen field in a mutable class.
    m = Mixed(1, 2)
    set_in_rust(m, "free", 3)
    assert m.free == 3
    with pytest.raises(AttributeError, match="it is frozen"):
        set_in_rust(m, "fixed", 3)
    with pytest.raises(dc.FrozenInstanceError):
        m.fixed = 3
    # A frozen object is still made with every value checked.
    with pytest.raises(TypeError, match=r"argument #0 \(`a`\): expected int, got str"):
        Frozen("one")


def test_frozen_and_mutable_classes_do_not_derive_from_each_other():
    with pytest.raises(TypeError, match="cannot inherit non-frozen dataclass from a frozen one"):

        @dc.py_class("test_calls.Thawed")
        class Thawed(Frozen):
            c: int = 0

    @dc.py_class("test_calls.StillFrozen", frozen=True)
    class StillFrozen(Frozen):
        c: int = 0

    s = StillFrozen(1, c=2)
    assert (s.a, s.b, s.c) == (1, None, 2)
    with pytest.raises(AttributeError, match="it is frozen"):
        rffi.get_global_func("ffi.ObjectSetField")(s, "c", 3)


@rffi.register_object("testing.TestPoint")
class Point(rffi.Object):
    pass


def test_rust_constructors_and_methods_name_themselves_in_errors():
    with pytest.raises(TypeError) as e:
        Point("a", 2, "x")
    msg = str(e.value)
    assert "argument #0 when calling `testing.TestPoint.__ffi_init__`" in msg
    assert "signature: testing.TestPoint.__ffi_init__(_0: int, _1: int, _2: str)" in msg
    p = Point(1, 2, "p")
    with pytest.raises(TypeError, match=r"argument #1 when calling `testing.TestPoint.shift`"):
        p.shift("x")
    # Their schemas are in the method metadata, as tvm-ffi records them.
    methods = {m["name"]: m for m in rffi.type_info("testing.TestPoint")["methods"]}
    shift = rffi.TypeSchema.from_json(methods["shift"]["metadata"]["type_schema"])
    assert shift.origin == "ffi.Function" and repr(shift.args[2]) == "int"


def test_rust_types_report_their_size():
    # The header (24 bytes) and the fields of the Rust struct.
    assert rffi.type_info("testing.TestPoint")["total_size"] > 24
    size = rffi.type_info("testing.TestPoint")["total_size"]
    assert rffi.type_info("testing.TestPoint3")["total_size"] > size
    # A py_class: the header and one 16-byte value per field.
    assert rffi.type_info("test_calls.Frozen")["total_size"] == 24 + 2 * 16
