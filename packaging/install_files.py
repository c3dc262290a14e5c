"""Lays out what C and C++ builds need from rffi: the library, the headers, `rffi.pc` and the
CMake package (`find_package(rffi)` -> `rffi::rffi`), under an install prefix (`make install`)
or inside the Python package (the wheel, see ffi-python/setup.py).

Both layouts use the same templates (this folder); their config files find everything relative
to their own location, so a prefix can be moved or staged (DESTDIR) as a whole.

    python3 packaging/install_files.py --prefix /usr/local --lib target/release/librffi.so
"""

from __future__ import annotations

import argparse
import os
import re
import shutil

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)

#: Where each part goes, relative to the root of a layout.
PREFIX_LAYOUT = {
    "lib": "lib",
    "include": "include",
    "cmake": "lib/cmake/rffi",
    "pkgconfig": "lib/pkgconfig",
}
#: The Python package: the library stays next to ``rffi/__init__.py``, where the loader finds it.
WHEEL_LAYOUT = {
    "lib": ".",
    "include": "include",
    "cmake": "share/cmake/rffi",
    "pkgconfig": "share/pkgconfig",
}


def version(root: str = ROOT) -> str:
    """The workspace version (Cargo.toml `[workspace.package] version`)."""
    with open(os.path.join(root, "Cargo.toml"), encoding="utf-8") as f:
        text = f.read()
    section = text.split("[workspace.package]", 1)[1]
    m = re.search(r'^version\s*=\s*"([^"]+)"', section, re.M)
    if not m:
        raise SystemExit("no [workspace.package] version in Cargo.toml")
    return m.group(1)


def _up(path: str) -> str:
    """The relative path from folder `path` (relative to the layout root) back to the root."""
    depth = len([p for p in path.split("/") if p not in ("", ".")])
    return "/".join([".."] * depth) or "."


def _render(template: str, layout: dict, rel_dir: str, ver: str) -> str:
    with open(os.path.join(HERE, template), encoding="utf-8") as f:
        text = f.read()
    for key, value in {
        "@PC_TO_PREFIX@": _up(rel_dir),
        "@CMAKE_TO_PREFIX@": _up(rel_dir),
        "@LIBDIR@": layout["lib"],
        "@INCLUDEDIR@": layout["include"],
        "@VERSION@": ver,
    }.items():
        text = text.replace(key, value)
    return text


def write_layout(dest: str, layout: dict, lib: str | None, root: str = ROOT) -> list:
    """Writes the headers, config files and (if `lib` is given) the library under `dest`;
    returns the files written."""
    ver = version(root)
    written = []

    def put(rel: str, text: str | None = None, src: str | None = None, mode: int = 0o644):
        path = os.path.normpath(os.path.join(dest, rel))
        os.makedirs(os.path.dirname(path), exist_ok=True)
        if src is not None:
            shutil.copyfile(src, path)
        else:
            with open(path, "w", encoding="utf-8") as f:
                f.write(text)
        os.chmod(path, mode)
        written.append(path)

    headers = os.path.join(root, "include")
    for dirpath, _, files in os.walk(headers):
        for name in sorted(files):
            if name.endswith((".h", ".hpp")):
                src = os.path.join(dirpath, name)
                put(os.path.join(layout["include"], os.path.relpath(src, headers)), src=src)
    if lib is not None:
        put(os.path.join(layout["lib"], "librffi.so"), src=lib, mode=0o755)
    put(
        os.path.join(layout["pkgconfig"], "rffi.pc"),
        _render("rffi.pc.in", layout, layout["pkgconfig"], ver),
    )
    for name in ("rffiConfig.cmake", "rffiConfigVersion.cmake"):
        put(
            os.path.join(layout["cmake"], name),
            _render(name + ".in", layout, layout["cmake"], ver),
        )
    return written


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--prefix", required=True, help="install prefix, e.g. /usr/local")
    parser.add_argument("--destdir", default="", help="staging root prepended to the prefix")
    parser.add_argument("--lib", required=True, help="the built librffi.so")
    args = parser.parse_args(argv)
    if not os.path.isfile(args.lib):
        raise SystemExit(f"{args.lib} not found: build it with `cargo build --release -p rffi-c`")
    dest = (
        os.path.join(args.destdir, os.path.abspath(args.prefix).lstrip("/"))
        if args.destdir
        else os.path.abspath(args.prefix)
    )
    for path in write_layout(dest, PREFIX_LAYOUT, args.lib):
        print(f"installed {path}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
