"""The C layouts the package reads in place (``rffi/_layout.py``) against the header that cbindgen
generates from the Rust ABI module: a C program prints every size and offset the description
names."""

import json
import os
import pathlib
import shutil
import subprocess

import pytest

from rffi import _frame, _layout

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
    assert (_layout.FRAME_NUM_ARGS, _layout.ANY_VALUE, _layout.BYTE_ARRAY) == (8, 8, 16)


def test_pairs_read_at_once_are_adjacent():
    # (data, size) of a Str, Shape or Array cell, and an Error's kind and message, are each read
    # with one read of adjacent words.
    word, pair = _layout.WORD, _layout.BYTE_ARRAY
    assert _layout.STRUCTS["RFFIByteArray"][1] == {"data": 0, "size": word}
    assert _layout.STRUCTS["RFFIShapeCell"][1] == {"data": 0, "size": word}
    assert _layout.SEQ_SIZE == _layout.SEQ_DATA + word and pair == 2 * word
    assert pair == _layout.BYTE_ARRAY
    cell = _layout.STRUCTS["RFFIErrorCell"][1]
    assert cell["message"] == cell["kind"] + pair


def test_frame_word_indices():
    # The ctypes call path's hot code (rffi/_function.py, _decode.py) indexes a frame's int64
    # words with these numbers written out: q[1] the argument count, q[2] and q[3] the result's
    # type word and payload, q[4] and q[5] the first argument's; and packs from byte 8.
    assert (_frame.NUM_ARGS, _frame.RESULT, _frame.ARGS) == (1, 2, 4)
    assert _layout.FRAME_NUM_ARGS == 8 and _layout.ANY == 2 * _layout.WORD
