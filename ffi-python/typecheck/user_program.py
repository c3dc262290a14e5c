"""A user's program over rffi's public API, type-checked with `mypy --strict` against the installed
package's stubs (ffi-python/scripts/typecheck.sh). It is also run, so what it states is true."""

from __future__ import annotations

import copy
import sys
from typing import Any, List, Optional

import rffi
from rffi import dataclasses as dc


@rffi.register_global_func("typecheck.scale")
def scale(x: float, k: int = 2) -> float:
    """Scales ``x``."""
    return x * k


@dc.py_class("typecheck.Particle")
class Particle(rffi.Object):
    """A particle whose fields live in the runtime object."""

    mass: float
    tags: List[int] = dc.field(default_factory=list)
    _: dc.KW_ONLY
    charge: int = 0

    @dc.method
    def scaled(self, k: float) -> float:
        return self.mass * k


@dc.py_class("typecheck.Frozen", frozen=True)
class Frozen(rffi.Object):
    a: int
    b: str | None = None


@rffi.register_object("testing.TestPoint")
class Point(rffi.Object):
    pass


@rffi.register_error("TypecheckError")
class TypecheckError(Exception):
    pass


def functions() -> None:
    add_one: rffi.Function = rffi.get_global_func("testing.add_one")
    assert add_one(41) == 42
    maybe: rffi.Function | None = rffi.get_global_func("typecheck.none", allow_missing=True)
    assert maybe is None
    assert "typecheck.scale" in rffi.list_global_func_names()
    meta: dict[str, Any] = rffi.get_global_func_metadata("typecheck.scale")
    assert meta["arg_names"] == ["x", "k"]
    schema = rffi.TypeSchema.from_annotation(Optional[List[float]])
    assert schema.origin == "Optional" and repr(schema) == "Optional[Array[float]]"
    f = rffi.Function(lambda a, b: a + b)
    assert rffi.get_global_func("testing.apply")(f, 1, 2) == 3
    rffi.remove_global_func("typecheck.scale")


def containers() -> None:
    a = rffi.Array([1, 2, 3])
    assert len(a) == 3 and a[0] == 1 and a[1:] == [2, 3] and a + [4] == [1, 2, 3, 4]
    m = rffi.Map({"a": 1})
    keys: list[Any] = list(m.keys())
    assert keys == ["a"] and m.get("b", 0) == 0 and ("a", 1) in m.items()
    lst = rffi.List([1])
    lst.append(2)
    lst.extend([3])
    assert lst.pop() == 3 and list(lst) == [1, 2]
    d = rffi.Dict({"k": 1})
    d["j"] = 2
    assert d.setdefault("k", 5) == 1 and len(d) == 2
    assert copy.deepcopy(a) == a and rffi.convert((1, 2)) == [1, 2]


def objects() -> None:
    p = Particle(1.0, [1, 2], charge=-1)
    assert p.mass == 1.0 and p.charge == -1 and p.scaled(2.0) == 2.0
    fr = Frozen(1)
    assert fr.a == 1 and fr.b is None
    fields: tuple[dc.Field, ...] = dc.fields(Particle)
    assert [x.name for x in fields] == ["mass", "tags", "charge"]
    info: dict[str, Any] = rffi.type_info("typecheck.Particle")
    assert info["type_key"] == "typecheck.Particle"
    assert "typecheck.Particle" in rffi.get_registered_type_keys()
    pt = rffi.get_global_func("testing.make_point")(1, 2)
    assert isinstance(pt, Point) and pt.type_key == "testing.TestPoint"


def values() -> None:
    dev: rffi.Device = rffi.device("cpu")
    assert dev.type == "cpu" and dev.index == 0
    dt: rffi.DataType = rffi.dtype("float32")
    assert dt.bits == 32 and dt.lanes == 1
    err = rffi.Error("ValueError", "bad")
    assert err.kind == "ValueError" and isinstance(err.py_error(), ValueError)
    try:
        rffi.get_global_func("testing.raise_error")("TypecheckError", "boom")
    except TypecheckError as e:
        assert "boom" in str(e)
    assert rffi.ABI_VERSION[0] >= 0 and isinstance(rffi.__version__, str)


def sessions() -> None:
    with rffi.ThreadSession(2) as sess:
        r: rffi.DRef = sess.get_global_func("testing.add_one")(1)
        assert r.fetch(1) == 2
        sess.sync()


def main() -> int:
    functions()
    containers()
    objects()
    values()
    sessions()
    print("user program: ok")
    return 0


if __name__ == "__main__":
    sys.exit(main())
