"""Loading plugins (a Rust one and a C one) with rffi.load_module.

Paths come from RFFI_EXAMPLE_RUST_PLUGIN / RFFI_EXAMPLE_C_PLUGIN (set by scripts/demo.sh) or the
command line: python plugins.py RUST_PLUGIN.so C_PLUGIN.so
"""

import os
import sys

import rffi

rust_path = sys.argv[1] if len(sys.argv) > 1 else os.environ["RFFI_EXAMPLE_RUST_PLUGIN"]
c_path = sys.argv[2] if len(sys.argv) > 2 else os.environ["RFFI_EXAMPLE_C_PLUGIN"]

rust = rffi.load_module(rust_path)
print("Rust plugin functions:", rust.list_functions())
print("rust_plugin.add(2, 3) =", rust.add(2, 3))
print("rust_plugin.greet('python') =", rust.greet("python"))
print("rust_plugin.map(x -> x * 10, [1, 2, 3]) =", rust.map(lambda x: x * 10, [1, 2, 3]))
try:
    rust.checked_div(1, 0)
except ValueError as e:
    print("rust_plugin.checked_div(1, 0) raised ValueError:", e)

c = rffi.load_module(c_path)
print("C plugin: mul(6, 7) =", c.mul(6, 7), "and square(9) =", c.square(9))
# Registered functions also joined the global function registry.
print("via the function registry: c_plugin.mul(3, 4) =", rffi.get_global_func("c_plugin.mul")(3, 4))
