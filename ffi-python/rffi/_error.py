"""Errors crossing the boundary in both directions.

Native -> Python: the raised Error object becomes a built-in exception picked by its kind
(``ValueError``, ``KeyError``, ...; unknown kinds give ``RuntimeError``), with the Error reachable
as ``exc.__rffi_error__`` and the native frames of its traceback (``  File "<file>", line <n>,
in <fn>`` lines, most recent first) added after the Python frames as real-looking frames.

Python -> native: an exception raised in a Python callback becomes an Error object (kind = the
kind its class is registered for, else the class name; the Python frames in its traceback) raised
in the runtime. The exception itself waits in a side table keyed by that Error, so when the Error
comes back to a Python caller, at any depth of nesting, the caller gets the *same* exception
object, with the native frames it crossed and the callback's frames in its traceback. An
exception that came from native code keeps its Error (``exc.__rffi_error__``), which gets the
Python frames it crossed since appended; a class may also define ``__rffi_error__(self)`` to make
the Error its exceptions stand for.

Kinds and classes map both ways through one table, filled by ``register_error`` (the built-in
kinds at import, user kinds by the same call).
"""

from __future__ import annotations

import builtins
import ctypes
import struct
import threading

from . import _layout as L
from . import _lib
from ._object import CLASS_OF_INDEX, Object, wrap_new
from ._traceback import native_tb

_string_at = getattr(ctypes, "_string_at", ctypes.string_at)  # without the Python wrapper
_byref = ctypes.byref
_unpack_cell = struct.Struct("<QQQQ").unpack

# Kind -> the class raised for it; class -> the kind it is raised as in the runtime.
_KIND_TO_CLASS: dict = {}
_CLASS_TO_KIND: dict = {}


def register_error(kind=None, cls=None):
    """Maps an error kind to an exception class, both ways: runtime errors of ``kind`` are raised
    in Python as ``cls``, and ``cls`` exceptions (not its subclasses) cross into the runtime as
    ``kind``. As a decorator or a call: ``@rffi.register_error`` (kind = the class name),
    ``@rffi.register_error("MyKind")`` or ``rffi.register_error("MyKind", MyError)``. A later
    registration of the same kind replaces the class raised for it."""
    if isinstance(kind, type) and cls is None:
        kind, cls = kind.__name__, kind
    if kind is not None and not isinstance(kind, str):
        raise TypeError(f"register_error: the kind must be a str, got {type(kind).__name__}")

    def register(c):
        if not (isinstance(c, type) and issubclass(c, BaseException)):
            raise TypeError(f"register_error expects an exception class, got {c!r}")
        name = kind or c.__name__
        _KIND_TO_CLASS[name] = c
        _CLASS_TO_KIND[c] = name
        return c

    return register(cls) if cls is not None else register


class _KeyError(KeyError):
    """The KeyError raised for runtime errors of that kind. Python's KeyError shows the repr of its
    argument (``KeyError: "key 'a' not found"``); the runtime's message is already what should be
    shown, so ``str()`` is the message itself. It presents itself as the built-in class in
    tracebacks (``KeyError: key 'a' not found``) and pickles as one."""

    def __str__(self) -> str:
        return str(self.args[0]) if len(self.args) == 1 else super().__str__()

    def __reduce__(self):
        return (KeyError, self.args)


_KeyError.__name__ = _KeyError.__qualname__ = "KeyError"
_KeyError.__module__ = "builtins"

for _kind in (
    "ValueError",
    "TypeError",
    "IndexError",
    "AttributeError",
    "RuntimeError",
    "NotImplementedError",
    "MemoryError",
    "AssertionError",
    "RecursionError",
):
    register_error(_kind, getattr(builtins, _kind))
register_error("KeyError", KeyError)
register_error("KeyError", _KeyError)  # raised for the kind; both classes cross as KeyError


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


def _record(exc: BaseException, err) -> None:
    # Also under tvm-ffi's attribute name, so code written for it reads the Error unchanged.
    exc.__rffi_error__ = exc.__tvm_ffi_error__ = err


def _new_exception(kind: str, message: str, err) -> BaseException:
    cls = _KIND_TO_CLASS.get(kind, RuntimeError)
    try:
        exc = cls(message)
    except Exception:  # a registered class with another constructor signature
        exc = RuntimeError(f"{kind}: {message}")
    _record(exc, err)
    return exc


# ---- Native -> Python ----

# Error handle -> (Error wrapper, exception, backtrace length when recorded). The wrapper holds a
# reference, so the handle cannot be reused for another object while the entry exists.
_PY_ERRORS: dict = {}
_PY_ERRORS_SWEEP_AT = 256
_read_u64 = ctypes.c_uint64.from_address
_lock = threading.Lock()


# 16-byte out-slots for the error path (a handle, or an RFFIByteArray), taken from a pool so
# threads and nested errors never share one; the int64 view reads them without ctypes objects.
_OUT_TYPE = ctypes.c_char * max(L.WORD, L.BYTE_ARRAY)
_KIND_AND_MESSAGE = 2 * L.BYTE_ARRAY
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


def _recursion_error(exc: BaseException):
    """The RecursionError that ctypes reports as an ArgumentError when the interpreter's limit
    (on 3.12+ also its C-stack limit, which no headroom raises) stops one of its argument
    conversions; None for any other exception."""
    if isinstance(exc, RecursionError):
        return exc
    if isinstance(exc, ctypes.ArgumentError) and "RecursionError" in str(exc):
        return RecursionError(f"maximum recursion depth exceeded ({exc})")
    return None


def take_raised_exception() -> BaseException:
    """Takes this thread's raised Error and returns the exception to raise for it (with its
    traceback set to the native frames, followed by a callback's Python frames if it came from
    one). Call as ``raise take_raised_exception()`` so no local variable holds it (a local would
    make a reference cycle through the traceback's frame). At the recursion limit, where the
    reading itself fails, the answer is the RecursionError."""
    try:
        return _take_raised()
    except (RecursionError, ctypes.ArgumentError) as e:
        r = _recursion_error(e)
        if r is None:
            raise
        return r


def _take_raised() -> BaseException:
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
        tb = native_tb(native, tb)
        _record(exc, err)
        err._tb_mark = tb
        return exc.with_traceback(tb)
    err = wrap_new(Error, handle, _lib.kError)
    # Kind and message straight from the Error cell (two adjacent RFFIByteArray), which is the
    # ABI; this path is the cost of every raise, so it saves the two accessor calls.
    cell = _string_at(handle + L.ERROR_KIND, _KIND_AND_MESSAGE)
    kind_data, kind_size, msg_data, msg_size = _unpack_cell(cell)
    kind = _string_at(kind_data, kind_size).decode("utf-8", "replace") if kind_size else ""
    message = _string_at(msg_data, msg_size).decode("utf-8", "replace") if msg_size else ""
    exc = _new_exception(kind or "RuntimeError", message, err)
    tb = native_tb(_backtrace_bytes(handle).decode("utf-8", "replace"), None)
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


def _message(exc: BaseException) -> str:
    if isinstance(exc, KeyError) and len(exc.args) == 1:
        return str(exc.args[0])  # str(KeyError('k')) is "'k'": the key, not a message
    return str(exc)


def _error_of(exc: BaseException, tb) -> Error:
    """The Error ``exc`` stands for, with the Python frames of ``tb`` in its backtrace, recorded
    as ``exc.__rffi_error__``:

    - the Error it came from (native code raised it, or it crossed before): the same object,
      whose identity crosses every layer, with the frames added since appended;
    - else the one its class's ``__rffi_error__(self)`` hook makes, with all of ``tb``'s frames;
    - else a new Error of the kind registered for its class (its class name otherwise).
    """
    err = exc.__dict__.get("__rffi_error__") if hasattr(exc, "__dict__") else None
    if isinstance(err, Error) and err._h:
        stop = getattr(err, "_tb_mark", None)
        text = _format_frames(tb, stop).encode("utf-8", "replace")
        if _append_backtrace(err._h, text):
            # Frames later prepended to the traceback are the next ones to append.
            err._tb_mark = exc.__traceback__
            return err
    hook = getattr(type(exc), "__rffi_error__", None) or getattr(
        type(exc), "__tvm_ffi_error__", None
    )
    if callable(hook):
        err = hook(exc)
        if not isinstance(err, Error) or not err._h:
            raise TypeError(
                f"{type(exc).__name__}.__rffi_error__() must return an rffi.Error, "
                f"got {type(err).__name__}"
            )
        _append_backtrace(err._h, _format_frames(tb, None).encode("utf-8", "replace"))
    else:
        kind = _CLASS_TO_KIND.get(type(exc)) or type(exc).__name__
        err = wrap_new(
            Error, _create_error(kind, _message(exc), _format_frames(tb, None)), _lib.kError
        )
    err._tb_mark = exc.__traceback__
    _record(exc, err)
    return err


def set_raised_from_python(exc: BaseException) -> None:
    """Raises ``exc`` in the runtime as an Error (called by the callback trampoline, whose frame is
    the first entry of ``exc.__traceback__``)."""
    tb = exc.__traceback__
    if tb is not None and tb.tb_frame.f_code is _TRAMPOLINE_CODE[0]:
        tb = tb.tb_next
    handle = _error_of(exc, tb)._h
    recorded = len(_backtrace_bytes(handle))
    _PY_ERRORS[handle] = (exc.__rffi_error__, exc, recorded)
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
        set_raised_from_python(_recursion_error(exc) or exc)
    except BaseException as e:  # the conversion itself failed
        conversion_failed(e)


def conversion_failed(e: BaseException) -> None:
    """Raises an Error for a callback whose exception could not be converted: a RecursionError
    when the recursion limit stopped the conversion (it is the caller's recursion)."""
    if _recursion_error(e) is not None:
        _lib.ErrorSetRaisedFromCStr(b"RecursionError", b"maximum recursion depth exceeded")
    else:  # pragma: no cover - an exception whose conversion fails otherwise
        _lib.ErrorSetRaisedFromCStr(b"RuntimeError", b"rffi: a Python callback failed")


def error_from_exception(exc: BaseException) -> Error:
    """The Error for a Python exception passed as a value (``rffi.convert(e)``, an argument): the
    one it came from, with the Python frames it crossed since appended, else a new one."""
    return _error_of(exc, exc.__traceback__)
