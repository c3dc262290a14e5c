"""``python -m rffi info``: what this installation is (version, library, registered functions);
``python -m rffi --cflags`` (``--includedir``, ``--libdir``, ``--cmakedir``, ``--ldflags``, ...):
where its files for C/C++ builds are (see ``rffi/_config.py``)."""

from __future__ import annotations

import argparse
import sys


def main(argv=None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    if argv and argv[0].startswith("--") and argv[0] not in ("--help",):
        from rffi import _config  # --includedir, --cmakedir, --cflags, ... (paths for C/C++)

        return _config.main(argv)
    parser = argparse.ArgumentParser(
        prog="python -m rffi",
        description=__doc__,
        epilog="Build paths: python -m rffi " + " | ".join(_config_options()),
    )
    sub = parser.add_subparsers(dest="command")
    info = sub.add_parser("info", help="version, library path, registered global functions")
    info.add_argument("--names", action="store_true", help="list every registered name")
    args = parser.parse_args(argv)
    if args.command != "info":
        parser.print_help()
        return 2

    import rffi

    names = rffi.list_global_func_names()
    major, minor, patch = rffi.ABI_VERSION
    print(f"rffi {rffi.__version__} (C ABI {major}.{minor}.{patch})")
    print(f"library: {rffi.LIB_PATH}")
    print(f"python: {sys.version.split()[0]} ({sys.implementation.name})")
    from rffi import _core, _native

    if _core.FASTPATH:
        print("call path: native fast path (vectorcall Functions, arguments converted natively)")
        print(f"native library: {_native.PATH}")
    else:
        print(f"call path: ctypes, because: {_core.FASTPATH_REASON}")
    print(f"global functions: {len(names)}")
    namespaces: dict = {}
    for name in names:
        namespaces.setdefault(name.split(".", 1)[0] if "." in name else "", []).append(name)
    for ns, members in sorted(namespaces.items()):
        if args.names:
            for name in members:
                print(f"  {name}")
        else:
            shown = ", ".join(members[:6]) + (", ..." if len(members) > 6 else "")
            print(f"  {ns or '(top level)'} ({len(members)}): {shown}")
    return 0


def _config_options() -> tuple:
    from rffi import _config

    return _config.OPTIONS


if __name__ == "__main__":
    sys.exit(main())
