"""Errors crossing the boundary in both directions.

Native -> Python: the raised Error object becomes a built-in exception picked by its kind
(``ValueError``, ``KeyError``, ...; unknown kinds give ``RuntimeError``), with the Error reachable
as ``exc.__rffi_error__`` and the native frames of its traceback (``  File "<file>", line <n>,
in <fn>`` lines, most recent first) added after the Python frames as real-looking frames.

Python -> native: an exception raised in a Python callback becomes an Error object (kind = the
exception's class name, the Python frames in its traceback) raised in the runtime. The exception
itself waits in a side table keyed by that Error, so when the Error comes back to a Python caller,
at any depth of nesting, the caller gets the *same* exception object, with the native frames it
crossed and the callback's frames in its traceback.
"""

from __future__ import annotations

import builtins
import ctypes
import struct
import threading
import types

from . import _layout as L
from . import _lib
from ._object import CLASS_OF_INDEX, Object, wrap_new

_string_at = getattr(ctypes, "_string_at", ctypes.string_at)  # without the Python wrapper
_byref = ctypes.byref
_unpack_cell = struct.Struct("<QQQQ").unpack

_KIND_TO_CLASS = {
    name: getattr(builtins, name)
    for name in (
        "ValueError",
        "TypeError",
        "KeyError",
        "IndexError",
        "AttributeError",
        "RuntimeError",
        "NotImplementedError",
        "MemoryError",
        "AssertionError",
    )
}
_CLASS_TO_KIND = {cls: kind for kind, cls in _KIND_TO_CLASS.items()}


def register_error(kind=None, cls=None):
    """Maps an error kind to an exception class (both ways), as a decorator or a call:

    ``@rffi.register_error`` (kind = the class name), ``@rffi.register_error("MyKind")`` or
    ``rffi.register_error("MyKind", MyError)``."""
    if isinstance(kind, type) and cls is None:
        kind, cls = kind.__name__, kind

    def register(c):
        if not (isinstance(c, type) and issubclass(c, BaseException)):
            raise TypeError(f"register_error expects an exception class, got {c!r}")
        name = kind or c.__name__
        _KIND_TO_CLASS[name] = c
        _CLASS_TO_KIND[c] = name
        return c

    return register(cls) if cls is not None else register


class Error(Object):
    """A runtime Error object: ``kind``, ``message`` and ``backtrace`` (most recent call first)."""

    # `_tb_mark`: the first traceback entry that was already in the exception when this error
    # came back to Python; the entries before it are the Python frames added since, which a
    # callback trampoline appends to the Error when the exception crosses into native code again.
    __slots__ = ("_tb_mark",)

    def __init__(self, kind: str, message: str, backtrace: str = ""):
        h = _create_error(kind, message, backtrace)
        self._h = h
        self._ti = _lib.kError

    def _field(self, getter) -> str:
        ba = _lib.ByteArray()
        if getter(self._h, _byref(ba)) != 0:
            raise_last_error()
        return _string_at(ba.data, ba.size).decode("utf-8", "replace") if ba.size else ""

    @property
    def kind(self) -> str:
        return self._field(_lib.ErrorGetKind)

    @property
    def message(self) -> str:
        return self._field(_lib.ErrorGetMessage)

    @property
    def backtrace(self) -> str:
        return self._field(_lib.ErrorGetBacktrace)

    def py_error(self) -> BaseException:
        """The exception this error stands for (the original one, if it came from Python)."""
        entry = _PY_ERRORS.get(self._h)
        if entry is not None:
            return entry[1]
        return _new_exception(self.kind, self.message, self)

    def _value_form(self, what: str):
        return Error, (self.kind, self.message, self.backtrace)

    def __repr__(self) -> str:
        return f"rffi.Error(kind={self.kind!r}, message={self.message!r})"

    def __str__(self) -> str:
        return f"{self.kind}: {self.message}"


CLASS_OF_INDEX[_lib.kError] = Error


def _byte_array(data: bytes):
    """A ByteArray over ``data`` (the caller keeps ``data`` alive)."""
    return _lib.ByteArray(ctypes.cast(ctypes.c_char_p(data), ctypes.c_void_p).value, len(data))


def _create_error(kind: str, message: str, backtrace: str) -> int:
    k, m, b = (s.encode("utf-8", "replace") for s in (kind, message, backtrace))
    out = ctypes.c_void_p()
    ka, ma, ba = _byte_array(k), _byte_array(m), _byte_array(b)
    if _lib.ErrorCreate(_byref(ka), _byref(ma), _byref(ba), _byref(out)) != 0:
        raise_last_error()
    return out.value


def _new_exception(kind: str, message: str, err) -> BaseException:
    cls = _KIND_TO_CLASS.get(kind, RuntimeError)
    try:
        exc = cls(message)
    except Exception:  # a registered class with another constructor signature
        exc = RuntimeError(f"{kind}: {message}")
    exc.__rffi_error__ = err
    return exc


# ---- Fake frames for native tracebacks ----


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


def _native_tb(text: str, tb_next):
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


# ---- Native -> Python ----

# Error handle -> (Error wrapper, exception, backtrace length when recorded). The wrapper holds a
# reference, so the handle cannot be reused for another object while the entry exists.
_PY_ERRORS: dict = {}
_PY_ERRORS_SWEEP_AT = 256
_read_u64 = ctypes.c_uint64.from_address
_lock = threading.Lock()


# 16-byte out-slots for the error path (a handle, or an RFFIByteArray), taken from a pool so
# threads and nested errors never share one; the int64 view reads them without ctypes objects.
_OUT_TYPE = ctypes.c_char * 16
_OUT_POOL: list = []


def _out_slot():
    try:
        return _OUT_POOL.pop()
    except IndexError:
        buf = _OUT_TYPE()
        return (buf, memoryview(buf).cast("B").cast("q"), ctypes.addressof(buf))


def _backtrace_bytes(handle: int) -> bytes:
    slot = _out_slot()
    try:
        if _lib.ErrorGetBacktraceAt(handle, slot[2]) != 0:
            _lib.ErrorMoveFromRaised(None)
            return b""
        data, size = slot[1]
        return _string_at(data, size) if size else b""
    finally:
        _OUT_POOL.append(slot)


def take_raised_exception() -> BaseException:
    """Takes this thread's raised Error and returns the exception to raise for it (with its
    traceback set to the native frames, followed by a callback's Python frames if it came from
    one). Call as ``raise take_raised_exception()`` so no local variable holds it (a local would
    make a reference cycle through the traceback's frame)."""
    slot = _out_slot()
    _lib.ErrorMoveFromRaisedAt(slot[2])
    handle = slot[1][0]
    _OUT_POOL.append(slot)
    if not handle:
        return RuntimeError("rffi: a call failed without raising an error")
    entry = _PY_ERRORS.pop(handle, None)
    if entry is not None:
        # Our own reference from the entry keeps the object; drop the one just moved out.
        _lib.ObjectDecRef(handle)
        err, exc, recorded = entry
        native = _backtrace_bytes(handle)[recorded:].decode("utf-8", "replace")
        tb = exc.__traceback__
        # The first entry is the callback trampoline that caught it; the user's frames follow.
        if tb is not None and tb.tb_frame.f_code is _TRAMPOLINE_CODE[0]:
            tb = tb.tb_next
        tb = _native_tb(native, tb)
        exc.__rffi_error__ = err
        err._tb_mark = tb
        return exc.with_traceback(tb)
    err = wrap_new(Error, handle, _lib.kError)
    # Kind and message straight from the Error cell (two RFFIByteArray at offset 24), which is
    # the ABI; this path is the cost of every raise, so it saves the two accessor calls.
    kind_data, kind_size, msg_data, msg_size = _unpack_cell(_string_at(handle + L.ERROR_KIND, 32))
    kind = _string_at(kind_data, kind_size).decode("utf-8", "replace") if kind_size else ""
    message = _string_at(msg_data, msg_size).decode("utf-8", "replace") if msg_size else ""
    exc = _new_exception(kind or "RuntimeError", message, err)
    tb = _native_tb(_backtrace_bytes(handle).decode("utf-8", "replace"), None)
    err._tb_mark = tb
    return exc.with_traceback(tb)


def raise_last_error():
    """Raises the exception for this thread's raised Error."""
    raise take_raised_exception()


# ---- Python -> native ----

_TRAMPOLINE_CODE = [None]  # the code object of the callback trampoline, set by _core


def _format_frames(tb, stop) -> str:
    """Python frames from ``tb`` up to (not including) ``stop``, most recent first."""
    lines = []
    while tb is not None and tb is not stop:
        code = tb.tb_frame.f_code
        lines.append(f'  File "{code.co_filename}", line {tb.tb_lineno}, in {code.co_name}\n')
        tb = tb.tb_next
    lines.reverse()
    return "".join(lines)


_UPDATE_BACKTRACE = ctypes.CFUNCTYPE(None, ctypes.c_void_p, ctypes.c_void_p, ctypes.c_int32)


def _append_backtrace(handle: int, text: bytes) -> bool:
    """Appends frames to an Error through its cell's ``update_backtrace``."""
    fn = ctypes.c_void_p.from_address(handle + L.ERROR_UPDATE_BACKTRACE).value
    if not fn or not text:
        return bool(fn)
    ba = _byte_array(text)
    _UPDATE_BACKTRACE(fn)(handle, ctypes.addressof(ba), 1)
    return True


def set_raised_from_python(exc: BaseException) -> None:
    """Raises ``exc`` in the runtime as an Error (called by the callback trampoline, whose frame is
    the first entry of ``exc.__traceback__``)."""
    tb = exc.__traceback__
    if tb is not None and tb.tb_frame.f_code is _TRAMPOLINE_CODE[0]:
        tb = tb.tb_next
    err = getattr(exc, "__rffi_error__", None)
    handle = 0
    if isinstance(err, Error) and err._h:
        # It came from native code before: keep the same Error (its identity crosses every
        # layer) and append the Python frames added since it came back.
        handle = err._h
        stop = getattr(err, "_tb_mark", None)
        err._tb_mark = None
        text = _format_frames(tb, stop).encode("utf-8", "replace")
        if not _append_backtrace(handle, text):
            handle = 0
    if not handle:
        kind = _CLASS_TO_KIND.get(type(exc)) or type(exc).__name__
        message = str(exc)
        if isinstance(exc, KeyError) and len(exc.args) == 1:
            message = str(exc.args[0])  # str(KeyError('k')) is "'k'"
        err = wrap_new(Error, _create_error(kind, message, _format_frames(tb, None)), _lib.kError)
        exc.__rffi_error__ = err
        handle = err._h
    recorded = len(_backtrace_bytes(handle))
    _PY_ERRORS[handle] = (err, exc, recorded)
    if len(_PY_ERRORS) >= _PY_ERRORS_SWEEP_AT:
        _sweep()
    _lib.ErrorSetRaised(handle)


def _sweep() -> None:
    """Drops entries whose Error only we still hold (native code dropped it without returning it to
    Python), so exceptions swallowed by native code do not pile up."""
    global _PY_ERRORS_SWEEP_AT
    with _lock:
        for handle in list(_PY_ERRORS):
            if _read_u64(handle).value & 0xFFFFFFFF <= 1:
                _PY_ERRORS.pop(handle, None)
        _PY_ERRORS_SWEEP_AT = max(256, 2 * len(_PY_ERRORS))


def callback_failed(exc: BaseException) -> None:
    """Raises a callback's exception in the runtime as an Error (the native callback path)."""
    try:
        set_raised_from_python(exc)
    except BaseException:  # pragma: no cover - conversion of the exception itself failed
        _lib.ErrorSetRaisedFromCStr(b"RuntimeError", b"rffi: a Python callback failed")


def error_from_exception(exc: BaseException) -> Error:
    """The Error object for a Python exception (the one it came from, if any)."""
    err = getattr(exc, "__rffi_error__", None)
    if isinstance(err, Error) and err._h:
        return err
    kind = _CLASS_TO_KIND.get(type(exc)) or type(exc).__name__
    err = Error(kind, str(exc), _format_frames(exc.__traceback__, None))
    exc.__rffi_error__ = err
    return err
