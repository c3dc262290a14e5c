"""Python functions registered with annotations are checked at every call against them, whichever
language calls; functions without annotations are registered as they are."""

import inspect
from typing import List, Optional

import pytest

import rffi


@rffi.register_global_func("test_sig.scale")
def scale(x: float, k: int = 2) -> float:
    """Scales ``x`` by ``k``."""
    return x * k


@rffi.register_global_func("test_sig.total")
def total(xs: List[int], start: Optional[int] = None) -> int:
    return sum(xs) + (start or 0)


@rffi.register_global_func("test_sig.plain")
def plain(x, y=1):
    return (type(x).__name__, y)


def test_arguments_are_converted_and_checked():
    f = rffi.get_global_func("test_sig.scale")
    assert f(3) == 6.0 and isinstance(f(3), float)  # int widened to float before the call
    assert f(1, 3) == 3.0 and scale(2) == 4.0  # the registered Function is returned
    with pytest.raises(TypeError) as e:
        f("a")
    assert str(e.value) == (
        "Mismatched type on argument #0 (`x`) when calling `test_sig.scale`: expected float, "
        "got str (signature: test_sig.scale(x: float, k: int) -> float)"
    )
    with pytest.raises(TypeError, match=r"argument #1 \(`k`\).*expected int, got float"):
        f(1, 1.5)
    with pytest.raises(TypeError, match="expects 1 to 2 arguments but 0 were given"):
        f()
    with pytest.raises(TypeError, match="expects 1 to 2 arguments but 3 were given"):
        f(1, 2, 3)
    t = rffi.get_global_func("test_sig.total")
    assert t([1, 2]) == 3 and t([1, 2], 4) == 7 and t([], None) == 0
    with pytest.raises(TypeError, match=r"`xs`\).*expected int at \[1\], got str"):
        t([1, "x"])


def test_native_callers_get_the_same_checks():
    apply = rffi.get_global_func("testing.apply")
    f = rffi.get_global_func("test_sig.scale")
    assert apply(f, 2) == 4.0
    with pytest.raises(TypeError, match=r"argument #0 \(`x`\) when calling `test_sig.scale`"):
        apply(f, "x")


def test_results_are_checked():
    @rffi.register_global_func("test_sig.bad_result")
    def bad(x: int) -> int:
        return str(x)

    with pytest.raises(TypeError, match="`test_sig.bad_result` returned a value that does not fit"):
        bad(1)


def test_signature_metadata_and_unannotated_functions():
    meta = rffi.get_global_func_metadata("test_sig.scale")
    assert meta["arg_names"] == ["x", "k"] and meta["doc"] == "Scales ``x`` by ``k``."
    assert str(inspect.signature(rffi.get_global_func("test_sig.scale"))) == (
        "(x: float, k: int, /) -> float"
    )
    p = rffi.get_global_func("test_sig.plain")
    assert p("s") == ["str", 1] and p(1.5, 2) == ["float", 2]  # nothing converted or refused


def test_help_shows_the_signature_and_docstring():
    import pydoc

    text = pydoc.render_doc(rffi.get_global_func("test_sig.scale"), renderer=pydoc.plaintext)
    assert "test_sig.scale(x: float, k: int, /) -> float" in text
    assert "Scales ``x`` by ``k``." in text
    rust = pydoc.render_doc(rffi.get_global_func("testing.add_one"), renderer=pydoc.plaintext)
    assert "testing.add_one(_0: int, /) -> int" in rust
    assert "A callable runtime function" not in rust  # no class docstring passed off as its own
    # The class keeps its own docstring; a Function read from a class is not bound.
    assert rffi.Function.__doc__.startswith("A callable runtime function")

    class Holder:
        add_one = rffi.get_global_func("testing.add_one")

    assert Holder.add_one(1) == 2 and Holder().add_one(1) == 2
