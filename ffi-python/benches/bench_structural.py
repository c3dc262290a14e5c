"""Structural operations from Python on one graph, rffi side by side with tvm-ffi: structural
equality and hash, deep copy, and a JSON graph written and read back. Prints a Markdown table (time
per operation, and rffi's time over tvm-ffi's).

The graph is IR-like: `n` records `{"op": str, "args": [int, int], "attrs": {"alpha": float,
"name": str}}` in an Array, each side building its own with `convert`.

Run: ffi-python/benches/run.sh bench_structural.py [n] (sets up the venv and the library).
tvm-ffi is optional (its column is left out when missing).
"""

from __future__ import annotations

import platform
import sys
import timeit

import rffi
import rffi.serialization

try:
    import tvm_ffi
    import tvm_ffi.serialization
except ImportError:  # pragma: no cover
    tvm_ffi = None


def graph(n: int) -> list:
    return [
        {"op": f"op{i % 7}", "args": [i, i + 1], "attrs": {"alpha": i / 3, "name": f"node_{i}"}}
        for i in range(n)
    ]


def measure(fn, number: int, repeat: int = 9) -> float:
    """Best seconds per call of `fn` over `repeat` runs (the least disturbed by other load)."""
    times = timeit.repeat(fn, number=number, repeat=repeat)
    return min(times) / number


def operations(ffi, serialization):
    """(name, setup) pairs; each setup(graph) returns the callable to time."""
    get = ffi.get_global_func
    deep_copy = get("ffi.DeepCopy")

    def equal(g):
        other = ffi.convert(graph(len(g)))
        return lambda: ffi.structural_equal(g, other)

    def hashing(g):
        return lambda: ffi.structural_hash(g)

    def copying(g):
        return lambda: deep_copy(g)

    def to_json(g):
        return lambda: serialization.to_json_graph_str(g)

    def from_json(g):
        text = serialization.to_json_graph_str(g)
        return lambda: serialization.from_json_graph_str(text)

    return [
        ("structural_equal", equal),
        ("structural_hash", hashing),
        ("deep copy (ffi.DeepCopy)", copying),
        ("to_json_graph_str", to_json),
        ("from_json_graph_str", from_json),
    ]


def main() -> None:
    n = int(sys.argv[1]) if len(sys.argv) > 1 else 1000
    number = max(1, 20000 // n)
    sides = [("rffi", rffi, rffi.serialization)]
    if tvm_ffi is not None:
        sides.append(("tvm-ffi", tvm_ffi, tvm_ffi.serialization))
    results = {}
    for label, ffi, ser in sides:
        g = ffi.convert(graph(n))
        for name, setup in operations(ffi, ser):
            results[(label, name)] = measure(setup(g), number)
    print(
        f"Graph: {n} records ({n * 9 + 1} containers and values); CPython "
        f"{platform.python_version()}, {platform.machine()}; best of 9 runs of {number} "
        "operations.\n"
    )
    head = "| operation | rffi (µs) |"
    rule = "|---|---:|"
    if tvm_ffi is not None:
        head += " tvm-ffi (µs) | rffi / tvm-ffi |"
        rule += "---:|---:|"
    print(head)
    print(rule)
    for name, _ in operations(rffi, None):
        ours = results[("rffi", name)] * 1e6
        row = f"| {name} | {ours:.1f} |"
        if tvm_ffi is not None:
            theirs = results[("tvm-ffi", name)] * 1e6
            row += f" {theirs:.1f} | {ours / theirs:.2f} |"
        print(row)


if __name__ == "__main__":
    main()
