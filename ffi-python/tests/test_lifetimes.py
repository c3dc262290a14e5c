"""Reference counts, wrapper lifetimes and a leak check over 100 000 calls."""

import gc
import resource
import sys

import rffi
from rffi import _core, _error


def test_use_counts(testing):
    arr = rffi.convert((1, 2, 3))
    assert testing.object_use_count(arr) == 1
    holder = testing.echo([arr, {"a": 1, "b": arr}])
    assert testing.object_use_count(arr) == 3
    del holder
    assert testing.object_use_count(arr) == 1
    same = testing.echo(arr)
    assert same.same_as(arr) and same == arr and hash(same) == hash(arr)
    assert testing.object_use_count(arr) == 2
    del same
    assert testing.object_use_count(arr) == 1


def test_wrapper_releases_its_object(testing):
    inner = rffi.convert([1])
    outer = rffi.convert([inner])
    assert testing.object_use_count(inner) == 2
    del outer
    assert testing.object_use_count(inner) == 1


def test_opaque_object_refcounts(testing):
    class Thing:
        pass

    x = Thing()
    before = sys.getrefcount(x)
    for _ in range(1000):
        assert testing.echo(x) is x
    kept = testing.echo([x, x])
    assert sys.getrefcount(x) == before + 2
    del kept
    assert sys.getrefcount(x) == before


def test_temporaries_are_released(testing):
    # Containers made for a call are released after it; a callback's wrappers after it returns.
    s = "a heap string long enough " * 4
    before = sys.getrefcount(s)
    for _ in range(1000):
        testing.nop([s, {"k": s}], s, s.encode())
        testing.apply(lambda *a: None, s, [1, 2])
    assert sys.getrefcount(s) == before


def _rss_kib():
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss


def test_no_leak_over_100k_calls(testing):
    class Payload:
        pass

    p = Payload()
    text = "long text argument for the heap path " * 2
    cb = rffi.convert(lambda a, b: a)
    callbacks = len(_core._CALLBACKS)

    def round_of_calls(n):
        for i in range(n):
            testing.add_one(i)
            testing.echo(text)
            testing.echo(p)
            testing.echo([i, "x", p])
            testing.echo({"k": i})
            testing.apply(cb, i, text)
            try:
                testing.raise_error("ValueError", "leak check")
            except ValueError:
                pass

    round_of_calls(2_000)  # warm caches and pools
    gc.collect()
    refs = sys.getrefcount(p), sys.getrefcount(text), sys.getrefcount(cb)
    rss = _rss_kib()
    round_of_calls(100_000 // 7)  # 100 000 calls in all
    gc.collect()
    assert (sys.getrefcount(p), sys.getrefcount(text), sys.getrefcount(cb)) == refs
    assert len(_core._CALLBACKS) == callbacks
    assert len(_error._PY_ERRORS) < 300
    grown = _rss_kib() - rss
    assert grown < 8 * 1024, f"resident memory grew by {grown} KiB over 100 000 calls"


def test_early_release_then_death(testing):
    # `__del__()` releases now; the wrapper's death later releases nothing more.
    arr = rffi.convert([1, 2])
    extra = testing.echo(arr)
    assert testing.object_use_count(arr) == 2
    extra.__del__()
    assert extra._handle == 0 and testing.object_use_count(arr) == 1
    extra.__del__()  # a second early release is a no-op
    del extra
    gc.collect()
    assert testing.object_use_count(arr) == 1


def test_wrapper_in_a_reference_cycle_is_released(testing):
    class Holder(rffi.Object):  # a subclass with a __dict__, which can hold itself
        pass

    arr = rffi.convert([1])
    h = Holder.__new__(Holder)
    _core._IncRef(arr._handle)
    h._h, h._ti = arr._handle, arr._tidx
    h.me = h
    assert testing.object_use_count(arr) == 2
    del h
    gc.collect()
    assert testing.object_use_count(arr) == 1


def test_object_results_use_the_registered_class(testing, monkeypatch):
    # Results are instances of the class registered for their type index, made as
    # `cls.__new__(cls)` makes them: a class with a `__new__` of its own gets it called.
    from rffi import _lib
    from rffi._container import Array
    from rffi._object import CLASS_OF_INDEX

    made = []

    class Plain(Array):
        __slots__ = ()

    class Counted(Array):
        __slots__ = ()

        def __new__(cls):
            made.append(cls)
            return super().__new__(cls)

    arr = rffi.convert([1, 2, 3])
    for cls in (Plain, Counted):
        monkeypatch.setitem(CLASS_OF_INDEX, _lib.kArray, cls)
        r = testing.echo(arr)
        assert type(r) is cls and r.same_as(arr) and list(r) == [1, 2, 3]
        assert testing.object_use_count(arr) == 2
        del r
        assert testing.object_use_count(arr) == 1
    assert made == [Counted]


def _wrappers_of_every_kind(testing):
    import numpy as np

    yield rffi.Array([1, 2])
    yield rffi.List([1, 2])
    yield rffi.Map({"a": 1})
    yield rffi.Dict({"a": 1})
    yield rffi.from_dlpack(np.zeros((2, 3)))
    yield rffi.get_global_func("testing.echo")
    yield rffi.Function(lambda x: x)
    yield rffi.convert(ValueError("x"))
    yield rffi.testing.create_object(
        "testing.TestObjectDerived", v_i64=1, v_map=rffi.Map({}), v_array=rffi.Array([])
    )
    yield _core.make_opaque(object())
    yield rffi.structural.StructuralKey([1, 2])


def test_a_released_wrapper_is_an_error_everywhere_never_a_read(testing):
    """Every public attribute of every kind of wrapper, read and (when callable) called after the
    wrapper was released: an exception or a value, never a read at address 0 (the Tensor's
    properties and `_use_count` read there once)."""
    echo = testing.echo
    for fresh in _wrappers_of_every_kind(testing):
        kind = type(fresh)
        names = [n for n in dir(fresh) if not n.startswith("__")]
        names += ["__len__", "__iter__", "__repr__", "__hash__", "__bool__", "__dlpack__"]
        names += ["__dlpack_device__", "__reduce__", "__copy__", "__array__"]
        for name in names:
            if not hasattr(kind, name):
                continue
            obj = next(o for o in _wrappers_of_every_kind(testing) if type(o) is kind)
            obj.__del__()
            try:
                value = getattr(obj, name)
                if callable(value):
                    value()
            except (ValueError, TypeError, AttributeError, NotImplementedError, KeyError):
                pass
        obj = next(o for o in _wrappers_of_every_kind(testing) if type(o) is kind)
        obj.__del__()
        for use in (echo, lambda o: o == o, lambda o: o[0]):
            try:
                use(obj)
            except (ValueError, TypeError, KeyError):
                pass
        if isinstance(obj, rffi.Tensor):
            for prop in ("shape", "dtype", "device", "strides", "ndim"):
                try:
                    getattr(obj, prop)
                except ValueError as e:
                    assert "released" in str(e)
                else:
                    raise AssertionError(f"Tensor.{prop} of a released wrapper gave a value")


def test_a_wrapper_freed_while_an_exception_propagates_releases_its_object(monkeypatch):
    """The interpreter frees the temporaries of a failing expression with the exception set; the
    wrapper's release (here an opaque object's deleter, which calls back into Python) must
    neither see that exception nor lose the object."""
    payload = object()
    before = sys.getrefcount(payload)
    unraisable = []
    monkeypatch.setattr(sys, "unraisablehook", unraisable.append)

    def fail():
        _core.make_opaque(payload).same_as(1, 2, 3)  # a TypeError; the wrapper is a temporary

    for _ in range(3):
        try:
            fail()
        except TypeError:
            pass
    gc.collect()
    assert [u.exc_value for u in unraisable] == []
    assert sys.getrefcount(payload) == before


def test_freeing_a_deeply_nested_value_does_not_overflow_the_stack(testing):
    # 300 000 levels overflowed an 8 MiB stack when each deleter freed the next level itself.
    leaf = rffi.Array([7])
    v = None
    for i in range(300_000):
        v = (rffi.Array if i % 2 else rffi.List)([v, leaf])
    assert testing.object_use_count(leaf) == 300_001
    del v
    assert testing.object_use_count(leaf) == 1
