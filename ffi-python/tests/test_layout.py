"""The C layouts the package reads in place (``rffi/_layout.py``) against the header that cbindgen
generates from the Rust ABI module: a C program prints every size and offset the description
names."""

import json
import os
import pathlib
import shutil
import subprocess

import pytest

from rffi import _layout

REPO = pathlib.Path(__file__).resolve().parents[2]
HEADER = REPO / "include" / "rffi" / "c_api.h"


def test_layout_matches_the_header(tmp_path):
    cc = os.environ.get("CC", "cc")
    if shutil.which(cc) is None or not HEADER.exists():
        pytest.skip("needs a C compiler and the checkout's header")
    lines = ["#include <stddef.h>", "#include <stdio.h>", '#include "rffi/c_api.h"']
    lines.append("int main(void) {")
    lines.append('  printf("{");')
    for k, (name, (_, fields)) in enumerate(_layout.STRUCTS.items()):
        sep = "," if k else ""
        lines.append(f'  printf("{sep}\\"{name}\\": [%zu, {{", sizeof({name}));')
        for j, field in enumerate(fields):
            fsep = "," if j else ""
            lines.append(f'  printf("{fsep}\\"{field}\\": %zu", offsetof({name}, {field}));')
        lines.append('  printf("}]");')
    lines.append('  printf("}\\n");')
    lines.append("  return 0;\n}")
    src = tmp_path / "layout.c"
    src.write_text("\n".join(lines))
    exe = tmp_path / "layout"
    subprocess.run([cc, "-std=c11", f"-I{REPO / 'include'}", str(src), "-o", str(exe)], check=True)
    actual = json.loads(subprocess.run([str(exe)], capture_output=True, check=True).stdout)
    expected = {name: [size, fields] for name, (size, fields) in _layout.STRUCTS.items()}
    assert actual == expected


def test_derived_offsets():
    # The offsets the package uses, spelled out once more: a change to the description that
    # moves one of these is deliberate.
    assert (_layout.CELL, _layout.OBJ_TYPE_INDEX, _layout.ANY) == (24, 8, 16)
    assert (_layout.SEQ_DATA, _layout.SEQ_SIZE, _layout.TENSOR_DL) == (24, 32, 24)
    assert _layout.ERROR_UPDATE_BACKTRACE == 72
    assert (_layout.MANAGED_DELETER, _layout.VERSIONED_DELETER) == (56, 16)
    assert (_layout.FRAME_HEADER, _layout.FRAME_RESULT) == (32, 16)
