"""Native frames as Python traceback entries.

An Error's traceback text holds ``  File "<file>", line <n>, in <fn>`` lines (most recent first);
``native_tb`` turns them into real traceback entries whose frames claim those sites, so Python
prints native frames among its own.
"""

from __future__ import annotations

import types


class _FrameProbe(Exception):
    pass


_FRAME_CACHE: dict = {}
_FRAME_CACHE_MAX = 2048


def _fake_frame(filename: str, lineno: int, name: str):
    """A frame object whose code claims ``filename``, ``lineno`` and function ``name``, made once
    per site by running a tiny compiled ``raise`` placed at that line. Frames are cached: a
    finished frame holds nothing but its globals (a constant dict), so tracebacks share them."""
    key = (filename, lineno, name)
    hit = _FRAME_CACHE.get(key)
    if hit is not None:
        return hit
    code = compile("\n" * (max(lineno, 1) - 1) + "raise _FrameProbe()", filename, "exec")
    try:
        code = code.replace(co_name=name)
    except (AttributeError, ValueError, TypeError):  # pragma: no cover - Python < 3.8
        pass
    try:
        exec(code, {"_FrameProbe": _FrameProbe})
    except _FrameProbe as probe:
        tb = probe.__traceback__.tb_next
        # No instruction offset (-1): the frame's source line is shown without the column
        # markers of the probe's own `raise`, which would point into the native source line.
        hit = (tb.tb_frame, -1)
        del probe, tb
    if len(_FRAME_CACHE) >= _FRAME_CACHE_MAX:
        _FRAME_CACHE.clear()
    _FRAME_CACHE[key] = hit
    return hit


def _parse_frames(text: str) -> list:
    """``  File "<file>", line <n>, in <fn>`` lines -> [(file, line, fn)], in text order."""
    frames = []
    for line in text.splitlines():
        line = line.strip()
        if not line.startswith('File "'):
            continue
        end = line.find('", line ')
        if end < 0:
            continue
        filename = line[6:end]
        rest = line[end + 8 :]
        num, sep, fn = rest.partition(", in ")
        try:
            lineno = int(num)
        except ValueError:
            continue
        frames.append((filename, lineno, fn if sep else "<native>"))
    return frames


_SITES_CACHE: dict = {}


def native_tb(text: str, tb_next):
    """Traceback entries for the frames in ``text`` (most recent first) chained before
    ``tb_next``, in Python order (outermost first)."""
    sites = _SITES_CACHE.get(text)
    if sites is None:
        # Errors raised again and again from one place have the same text: parse it once.
        sites = tuple(
            (*_fake_frame(filename, lineno, fn), lineno)
            for filename, lineno, fn in _parse_frames(text)
        )
        if len(_SITES_CACHE) >= _FRAME_CACHE_MAX:
            _SITES_CACHE.clear()
        _SITES_CACHE[text] = sites
    for frame, lasti, lineno in sites:
        tb_next = _Traceback(tb_next, frame, lasti, lineno)
    return tb_next


_Traceback = types.TracebackType


