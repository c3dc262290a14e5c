"""Hostile use of the rffi Python package, each use in a forked child so that a crash (a signal)
or a hang (5 s) is seen and named instead of ending the probe:

* ``released``: every public attribute of every kind of wrapper, read and called, after the
  wrapper was released (``obj.__del__()``; an object moved out by ``obj._move()`` is the same);
  then copied, deep-copied, pickled, passed to a function, indexed, compared.
* ``bare``: the same over every ``rffi.Object`` class of the public modules, made by
  ``cls.__new__(cls)`` and never initialised.
* ``api``: every public callable of the public modules with no argument, each hostile value
  alone, and random pairs and triples of them.
* ``methods``: every public method of every kind of wrapper with hostile arguments.
* ``sessions``: every method of a ThreadSession and a ProcessSession of two workers (with and
  without a communicator, ``init_ccl("shm")``) with hostile arguments and values on the workers
  (tensors, freed values, a shut-down session's), then a ``sync``: an error or a result, never a
  crash or a hang (30 s).
* ``deep``: Arrays, Lists and Python lists nested a million deep, freed, converted, copied,
  printed, hashed, compared, serialized and pickled.
* ``kernels``: every op of the kernels plugin (``rffi_kernels``, on the CPU here) with tensors of
  every layout and dtype class (0-d, empty, transposed, reversed, broadcast, misaligned, 32
  dimensions, 16-bit, integer, bool, complex, NaN) and hostile options and outputs.
* ``shard``: ``rffi.shard.load_local`` of a safetensors file with random shard plans and hostile
  ranks and world sizes.

Python exceptions are the expected outcome and are not reported; an exception that reaches
``sys.unraisablehook`` (lost in a finalizer or in a callback of a deallocation) is a failure.

Usage: ``python fuzz/python_probe.py [part ...] [--seed N]`` (all parts by default); exits 1 if
any use failed. ``make probe-python`` runs it on both call paths; results go in
docs/RELIABILITY.md.
"""

from __future__ import annotations

import copy
import inspect
import os
import pickle
import random
import signal
import sys

import numpy as np

import rffi
import rffi.access_path
import rffi.core
import rffi.dataclasses
import rffi.serialization
import rffi.shard
import rffi.structural
import rffi.testing

PLUGIN = os.environ.get("RFFI_PROBE_PLUGIN", "")
MODULES = (
    rffi,
    rffi.structural,
    rffi.serialization,
    rffi.access_path,
    rffi.dataclasses,
    rffi.core,
    rffi.shard,
)
# Sessions start worker processes and Ray; `testing` is the helpers' own module.
SKIP = {"RaySession", "ProcessSession", "ThreadSession", "Session", "session", "worker", "testing"}
DUNDERS = (
    "__len__ __iter__ __repr__ __str__ __hash__ __bool__ __dlpack__ __dlpack_device__ "
    "__reduce__ __copy__ __chandle__ __ctypes_handle__ __array__ __call__ __getstate__"
).split()
OPERATORS = (
    "__getitem__ __setitem__ __delitem__ __contains__ __call__ __dlpack__ __eq__ __lt__ "
    "__add__ __mul__ __getattr__ __setattr__"
).split()


def hostile_values() -> list:
    """Made afresh in each child: plain values at their limits, containers, runtime objects (one
    released), callables, arrays, types."""
    released = rffi.Array([1])
    released.__del__()
    return [
        None, 0, -1, 2**63, -(2**64), 1.5, float("nan"), "x", "", "\x00", "int32", "cuda",
        b"x", [], [1, [2]], {}, {"a": None}, (1,), object(), released,
        rffi.from_dlpack(np.zeros((2, 3), dtype=np.float32)), rffi.Array([1, 2]),
        rffi.Map({1: 2}), rffi.List(), rffi.Dict(), rffi.get_global_func("testing.echo"),
        lambda *a: a, np.zeros(3), type, ValueError("e"), rffi.dtype("float32"),
        rffi.device("cpu", 0),
    ]  # fmt: skip


def wrapper_makers() -> list:
    makers = [
        lambda: rffi.Array([1, 2]),
        lambda: rffi.List([1, 2]),
        lambda: rffi.Map({"a": 1}),
        lambda: rffi.Dict({"a": 1}),
        lambda: rffi.from_dlpack(np.zeros((2, 3))),
        lambda: rffi.from_dlpack(np.zeros((0,), dtype=np.int8)),
        lambda: rffi.get_global_func("testing.echo"),
        lambda: rffi.Function(lambda x: x),
        lambda: rffi.convert(ValueError("x")),
        lambda: rffi.testing.create_object(
            "testing.TestObjectDerived", v_i64=1, v_map=rffi.Map({}), v_array=rffi.Array([])
        ),
        lambda: rffi._core.make_opaque(object()),
        lambda: rffi.structural.StructuralKey([1, 2]),
        lambda: rffi.access_path.AccessPath.root(),
    ]
    if PLUGIN:
        makers.append(lambda: rffi.load_module(PLUGIN))
    return makers


class Probe:
    def __init__(self) -> None:
        self.uses = 0
        self.failures: list[str] = []

    def run(self, label: str, use, seconds: int = 5, setup=None) -> None:
        """Runs ``use()`` (``use(setup())`` with a ``setup``) in a child; a signal or the alarm
        after ``seconds`` is a failure named ``label``, and so is a ``setup`` that raises (the
        use would test nothing)."""
        self.uses += 1
        pid = os.fork()
        if pid == 0:
            signal.alarm(seconds)

            def lost(u, label=label):
                # An exception nobody could see (raised in a finalizer or a callback of a
                # deallocation): a failure too.
                print(f"{label}: unraisable {u.exc_type.__name__}: {u.exc_value}", flush=True)
                os._exit(3)

            sys.unraisablehook = lost
            if setup is not None:
                try:
                    ctx = setup()
                except BaseException as e:
                    print(f"setup of {label} raised {type(e).__name__}: {e}", flush=True)
                    os._exit(2)
            try:
                use() if setup is None else use(ctx)
            except BaseException:  # exceptions are the expected outcome
                pass
            os._exit(0)
        _, status = os.waitpid(pid, 0)
        what = None
        if os.WIFSIGNALED(status):
            sig = os.WTERMSIG(status)
            what = "hang" if sig == signal.SIGALRM else f"signal {sig}"
        elif os.WEXITSTATUS(status) == 3:
            what = "an exception was lost (unraisable)"
        elif os.WEXITSTATUS(status) != 0:
            what = f"setup failed (exit {os.WEXITSTATUS(status)})"
        if what is not None:
            self.failures.append(f"{label}: {what}")
            print(f"FAILED {label}: {what}", flush=True)


def _read_and_call(obj, name: str) -> None:
    value = getattr(obj, name)
    if callable(value):
        value()


WHOLE_USES = {
    "copy": copy.copy,
    "deepcopy": copy.deepcopy,
    "pickle": pickle.dumps,
    "pass": lambda o: rffi.get_global_func("testing.echo")(o),
    "item": lambda o: o[0],
    "compare": lambda o: (o == o, o == 1, hash(o)),
}


def _attribute_names(obj, extra) -> list:
    return sorted(
        {n for n in dir(obj) if not n.startswith("__")} | {n for n in extra if hasattr(obj, n)}
    )


def probe_released(p: Probe, rng: random.Random) -> None:
    for make in wrapper_makers():
        kind = type(make()).__name__

        def released(make=make):
            obj = make()
            obj.__del__()
            return obj

        for name in _attribute_names(make(), DUNDERS):
            p.run(f"released {kind}.{name}", lambda r=released, n=name: _read_and_call(r(), n))
        for what, use in WHOLE_USES.items():
            p.run(f"released {kind} ({what})", lambda r=released, u=use: u(r()))


def probe_bare(p: Probe, rng: random.Random) -> None:
    classes = {
        c
        for m in MODULES + (rffi.testing,)
        for c in vars(m).values()
        if inspect.isclass(c) and issubclass(c, rffi.Object)
    }
    for cls in sorted(classes, key=lambda c: f"{c.__module__}.{c.__qualname__}"):
        try:
            probe = cls.__new__(cls)
        except Exception:
            continue
        label = f"bare {cls.__module__}.{cls.__qualname__}"
        for name in _attribute_names(probe, DUNDERS):
            p.run(f"{label}.{name}", lambda c=cls, n=name: _read_and_call(c.__new__(c), n))
        for what, use in WHOLE_USES.items():
            p.run(f"{label} ({what})", lambda c=cls, u=use: u(c.__new__(c)))


def _combos(rng: random.Random, n: int, random_each: int) -> list:
    combos = [()] + [(i,) for i in range(n)]
    combos += [
        tuple(rng.randrange(n) for _ in range(k)) for k in (2, 3) for _ in range(random_each)
    ]
    return combos


def probe_api(p: Probe, rng: random.Random) -> None:
    n = len(hostile_values())
    for mod in MODULES:
        for name in sorted(vars(mod)) if mod is not rffi else sorted(dir(mod)):
            if name.startswith("_") or name in SKIP:
                continue
            f = getattr(mod, name, None)
            if not callable(f):
                continue
            for combo in _combos(rng, n, 25):

                def use(f=f, combo=combo):
                    values = hostile_values()
                    f(*[values[i] for i in combo])

                p.run(f"api {mod.__name__}.{name}{combo}", use)


def probe_methods(p: Probe, rng: random.Random) -> None:
    n = len(hostile_values())
    for make in wrapper_makers():
        kind = type(make()).__name__
        for name in _attribute_names(make(), OPERATORS):
            for combo in _combos(rng, n, 12)[1:]:

                def use(make=make, name=name, combo=combo):
                    values = hostile_values()
                    getattr(make(), name)(*[values[i] for i in combo])

                p.run(f"method {kind}.{name}{combo}", use)


SESSION_METHODS = (
    "get_global_func load_module empty copy_to_worker_0 copy_from_worker_0 sync sync_worker_0 "
    "import_python_module load_params init_ccl allreduce allgather reduce_scatter "
    "broadcast_from_worker_0 scatter_from_worker_0 gather_to_worker_0 send recv"
).split()


def session_values(sess) -> list:
    """Hostile values, with the session's own: values on its workers (an int, a tensor, one
    freed), a function, and a value of a session already shut down."""
    values = hostile_values()
    other = rffi.ThreadSession(1)
    stale = other.get_global_func("testing.echo")(1)
    other.shutdown()
    freed = sess.get_global_func("testing.echo")(2)
    freed._obj.__del__()  # a DRef whose handle was released
    return values + [
        sess.get_global_func("testing.echo")(7),
        sess.empty((4,), "float32"),
        sess.empty((0,), "int8"),
        sess.get_global_func("testing.add_one"),
        stale,
        freed,
        [sess.empty((2,), "float32")],
    ]


def probe_sessions(p: Probe, rng: random.Random) -> None:
    def with_ccl(sess):
        sess.init_ccl("shm")
        return sess

    makers = {
        "ThreadSession": lambda: rffi.ThreadSession(2),
        "ProcessSession": lambda: rffi.ProcessSession(2),
        "ThreadSession+shm": lambda: with_ccl(rffi.ThreadSession(2)),
        "ProcessSession+shm": lambda: with_ccl(rffi.ProcessSession(2)),
    }
    with rffi.ThreadSession(1) as s:
        n = len(session_values(s))
    for kind, make in makers.items():
        for name in SESSION_METHODS:
            combos = [(i,) for i in range(n)] + [
                tuple(rng.randrange(n) for _ in range(k)) for k in (2, 3) for _ in range(6)
            ]
            for combo in [()] + combos:

                def setup(make=make):
                    sess = make()
                    return sess, session_values(sess)

                def use(ctx, name=name, combo=combo):
                    sess, values = ctx
                    try:
                        getattr(sess, name)(*[values[i] for i in combo])
                    finally:
                        try:
                            sess.sync()  # a failure shows here; a hang trips the alarm
                        finally:
                            sess.shutdown()

                p.run(f"session {kind}.{name}{combo}", use, seconds=30, setup=setup)


def probe_deep(p: Probe, rng: random.Random) -> None:
    """Values nested a million deep (Arrays, Lists, Python lists), made, used and freed: an error
    (RecursionError, or the runtime's "nested too deeply") or a result, never a stack overflow."""
    from rffi import serialization, structural

    def nested(kind, depth=1_000_000):
        v = kind([])
        for _ in range(depth):
            v = kind([v])
        return v

    uses = {
        "free": lambda v: None,
        "convert": rffi.convert,
        "echo": lambda v: rffi.get_global_func("testing.echo")(v),
        "deepcopy": copy.deepcopy,
        "deep_copy": structural.deep_copy,
        "repr": repr,
        "structural_hash": structural.structural_hash,
        "structural_equal": lambda v: structural.structural_equal(v, v),
        "to_json_graph_str": serialization.to_json_graph_str,
        "pickle": pickle.dumps,
        "==": lambda v: v == v,
    }
    for kind in (rffi.Array, rffi.List, list):
        for what, use in uses.items():
            p.run(f"deep {kind.__name__} ({what})", lambda k=kind, u=use: u(nested(k)), seconds=120)


def kernel_values() -> list:
    """Tensors of every layout and dtype class the kernels meet, and values that are not tensors
    (for axes, eps, `approximate` and misplaced arguments)."""
    base = np.arange(24, dtype=np.float32).reshape(4, 6)
    one = np.zeros(1, dtype=np.float32)
    many_dims = np.zeros((4, 6) + (1,) * 30, np.float32)
    return [
        np.ones(()), np.zeros((0,), np.float32), np.zeros((3, 0, 2), np.float32), base, base.T,
        base[:, ::2], base[::-1], base[:, ::-2], np.broadcast_to(np.float32(1), (4, 6)),
        np.lib.stride_tricks.as_strided(one, shape=(1024, 1024), strides=(0, 0)),
        np.zeros((4, 6), np.float16), np.zeros((4, 6), np.int8), np.zeros((4, 6), bool),
        np.zeros((4, 6), np.int64), np.zeros((4, 6), np.complex64), np.zeros((4, 6), np.uint16),
        np.full((4, 6), np.nan, np.float32), np.full((4, 6), np.inf, np.float32),
        np.zeros((1, 6), np.float32), np.zeros((6,), np.float32),
        np.zeros((2, 3, 4), np.float32), many_dims,
        np.frombuffer(bytearray(25), dtype=np.float32, offset=1, count=6),  # misaligned
        None, 0, 1.5, -1, 2**40, "x", (0, 0), (5,), (-1, -1), (0, 1, 0), [],
    ]  # fmt: skip


def probe_kernels(p: Probe, rng: random.Random) -> None:
    """Every op of the kernels plugin (``rffi_kernels``) with hostile tensors and options:
    binary ops with random pairs and outputs (an output that is an input too), unary ops,
    reductions and softmax over every axis value, the normalizations with random weight, bias
    and eps, ``gelu``'s form, ``explain`` of any op."""
    import rffi_kernels as kernels

    kernels.load()
    n = len(kernel_values())

    def call(op, *idx, **kw):
        def use():
            v = kernel_values()
            getattr(kernels, op)(*[v[i] for i in idx], **{k: v[i] for k, i in kw.items()})

        p.run(f"kernels.{op}{idx}{kw or ''}", use, seconds=20)

    pick = rng.randrange
    for op in ("add", "sub", "mul", "div", "matmul"):
        for _ in range(120):
            call(op, pick(n), pick(n))
        for _ in range(30):
            call(op, pick(n), pick(n), pick(n))
        for i in range(n):  # the output is both inputs
            p.run(f"kernels.{op} aliased ({i})", lambda op=op, i=i: _aliased(kernels, op, i))
    for op in ("relu", "exp"):
        for i in range(n):
            call(op, i)
            call(op, i, pick(n))
    for op in ("sum", "mean", "max", "min", "argmax", "softmax"):
        for i in range(n):
            for _ in range(6):
                call(op, i, axis=pick(n))
            call(op, i, axis=pick(n), out=pick(n))
    for i in range(n):
        for _ in range(6):
            call("layer_norm", i, weight=pick(n), bias=pick(n), eps=pick(n))
            call("rms_norm", i, weight=pick(n), eps=pick(n))
        call("gelu", i, pick(n))
    for op in ("add", "softmax", "layer_norm", "sum", "nosuch"):
        for _ in range(6):
            idx = [pick(n) for _ in range(pick(4))]
            p.run(
                f"kernels.explain({op!r}, {idx})",
                lambda op=op, idx=idx: kernels.explain(op, *[kernel_values()[i] for i in idx]),
            )


def _aliased(kernels, op, i):
    v = kernel_values()[i]
    getattr(kernels, op)(v, v, v)


def probe_shard(p: Probe, rng: random.Random) -> None:
    """``rffi.shard.load_local`` of a real safetensors file with random shard plans (steps naming
    the split and qkv functions, other functions and none, hostile shapes, dtypes and extra
    arguments) and hostile ranks and world sizes."""
    import tempfile

    from safetensors.numpy import save_file

    from rffi import shard

    path = os.path.join(tempfile.mkdtemp(), "w.safetensors")
    save_file(
        {
            "a": np.arange(24, dtype=np.float32).reshape(4, 6),
            "b": np.zeros((8,), np.float16),
            "c": np.zeros((0, 3), np.float32),
            "s": np.array(3.0, dtype=np.float32),
        },
        path,
    )
    ints = [0, 1, 2, 3, 4, -1, -2, 6, 24, 2**31, 2**62, -(2**63), 2**63 - 1]
    dtypes = ["float32", "float16", "int8", "bool", "bogus", "", "float32x4", 3]
    shapes = [[], [2], [2, 2], [2, 12], [2, 2, 6], [2, 3, 4], [0], [2**40, 2**40], [-1, 6],
              [2, -12], "x", None]  # fmt: skip
    funcs = ["rffi.shard.split", "rffi.shard.qkv", "testing.echo", "nosuch", "", 5]

    def step():
        extra = [rng.choice(ints + ["x", 1.5, None, True]) for _ in range(rng.randrange(4))]
        return [rng.choice(funcs), [rng.choice(shapes), rng.choice(dtypes)], *extra]

    def plan():
        if rng.random() < 0.05:
            return rng.choice([None, 5, "nofile.json", [], {"a": "x"}])
        out = {}
        for name in rng.sample(["a", "b", "c", "s", "nosuch"], rng.randrange(1, 4)):
            if rng.random() < 0.9:
                out[name] = [step() for _ in range(rng.randrange(3))]
            else:
                out[name] = rng.choice([None, 3, "x", [[]], [[1]]])
        return out

    for _ in range(3000):
        args = (plan(), rng.choice(ints[:6]), rng.choice(ints[:7] + [2**40]))
        p.run(
            f"shard.load_local(w, {args})",
            lambda a=args: shard.load_local(path, *a, progress=False),
            seconds=10,
        )


PARTS = {
    "released": probe_released,
    "bare": probe_bare,
    "api": probe_api,
    "methods": probe_methods,
    "sessions": probe_sessions,
    "deep": probe_deep,
    "kernels": probe_kernels,
    "shard": probe_shard,
}


def main(argv: list) -> int:
    seed = 0
    if "--seed" in argv:
        i = argv.index("--seed")
        seed = int(argv[i + 1])
        del argv[i : i + 2]
    parts = argv or list(PARTS)
    path = "native" if rffi._native.ENABLED else "ctypes"
    for part in parts:
        p = Probe()
        PARTS[part](p, random.Random(seed))
        print(f"{part} ({path} path, seed {seed}): {p.uses} uses, {len(p.failures)} failed")
        if p.failures:
            return 1
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
