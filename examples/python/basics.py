"""rffi from Python: call native functions by name, register Python functions that native code
calls back, and get native errors as Python exceptions with the native frame in the traceback."""

import traceback

import rffi

add_one = rffi.get_global_func("testing.add_one")  # a Rust function
print("testing.add_one(41) =", add_one(41))

echo = rffi.get_global_func("testing.echo")
print("echo of a list:", echo([1, "two", 3.0]))  # lists become rffi Arrays
print("echo of a dict:", echo({"a": 1, "b": [2, 3]}))  # dicts become Maps (insertion order)
print("echo of a device:", echo(rffi.device("cuda:1")), "and a dtype:", echo(rffi.dtype("float32")))


@rffi.register_global_func("demo.square")
def square(x):
    return x * x


# Native code calls the Python function (testing.apply(f, *args) calls f(*args) from Rust).
apply = rffi.get_global_func("testing.apply")
print("testing.apply(demo.square, 12) =", apply(rffi.get_global_func("demo.square"), 12))
print("nested: apply(lambda: apply(square, 3) + 1) =", apply(lambda: apply(square, 3) + 1))

try:
    rffi.get_global_func("testing.raise_error")("ValueError", "raised in Rust")
except ValueError as e:
    print("caught:", type(e).__name__, "-", e)
    print("".join(traceback.format_tb(e.__traceback__)[-1:]).rstrip())
    print("its Error object:", e.__rffi_error__)


def callback():
    raise KeyError("raised in a Python callback")


try:
    apply(callback)
except KeyError as e:
    frames = [f.name for f in traceback.extract_tb(e.__traceback__)]
    print("the same exception came back through Rust; frames:", frames)
