"""Finishing the wheel's native files (used by ffi-python/setup.py): strip them, and name the
manylinux platform they run on.

The tag is read from the binaries, as auditwheel does: the newest glibc symbol version any of
them needs, provided every library they link is one manylinux allows. A wheel built on a
glibc-2.34 system is therefore `manylinux_2_34_<arch>` (installable on glibc >= 2.34); build in
an older manylinux image for a wider reach. Tools missing (binutils) leave the plain tag.
"""

from __future__ import annotations

import re
import shutil
import subprocess

# Libraries manylinux wheels may link without bundling (PEP 600 / auditwheel's policy).
_ALLOWED = {
    "libc.so.6",
    "libm.so.6",
    "libdl.so.2",
    "librt.so.1",
    "libpthread.so.0",
    "libgcc_s.so.1",
    "libstdc++.so.6",
    "ld-linux-x86-64.so.2",
    "ld-linux-aarch64.so.1",
}
# The oldest tag each architecture has (manylinux2014).
_FLOOR = (2, 17)


def strip(paths) -> None:
    """Drops symbol tables and debug info (the runtime's tracebacks name frames from its own
    records, not from the library's debug info)."""
    tool = shutil.which("strip")
    if tool is None:
        print("warning: `strip` not found (binutils); the wheel keeps unstripped binaries")
        return
    for path in paths:
        subprocess.run([tool, "--strip-unneeded", path], check=True)


def _readelf(args) -> str | None:
    tool = shutil.which("readelf")
    if tool is None:
        return None
    out = subprocess.run([tool, "--wide", *args], capture_output=True, text=True, check=False)
    return out.stdout if out.returncode == 0 else None


def _requirement(path: str):
    """(major, minor) of the newest GLIBC_x.y the file needs, or None when it cannot be told or
    links a library manylinux does not allow."""
    dynamic = _readelf(["-d", path])
    versions = _readelf(["-V", path])
    if dynamic is None or versions is None:
        return None
    needed = set(re.findall(r"\(NEEDED\)\s+Shared library: \[([^\]]+)\]", dynamic))
    if not needed <= _ALLOWED:
        return None
    found = [(int(a), int(b)) for a, b in re.findall(r"Name: GLIBC_(\d+)\.(\d+)", versions)]
    return max(found, default=_FLOOR)


def platform_tag(paths, plat: str) -> str:
    """`manylinux_X_Y_<arch>` for `linux_<arch>` when the binaries allow it, else `plat`."""
    if not plat.startswith("linux_"):
        return plat
    reqs = [_requirement(p) for p in paths]
    if not reqs or any(r is None for r in reqs):
        return plat
    major, minor = max([*reqs, _FLOOR])
    return f"manylinux_{major}_{minor}_{plat[len('linux_') :]}"
