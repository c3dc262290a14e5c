"""``Function``: a callable runtime function, and the ctypes call path.

A call fills a preallocated frame (``_frame``) and calls ``RFFIFunctionCallFrame(frame)``: one
ctypes call with one pointer, no ctypes structures built per call; ctypes' CDLL releases the GIL
around it. Each Function keeps a small pool of frames; a frame is taken out of the pool for the
duration of a call, so calls from several threads, and calls made from inside callbacks, each get
their own.

With the native fast path (``_native``), ``Function`` is the vectorcall subclass the native
library makes of the class defined here: it converts the common arguments and results in Rust and
hands everything else to this class's ``__call__`` (the conversion table's setters), so the rules
stay in ``_convert``. Without it, the class defined here is ``Function``.
"""

from __future__ import annotations

import struct

from . import _layout as L
from . import _lib, _native
from ._convert import ARGS, OBJECT, TABLE, kind_of, release_temps, write_owned
from ._decode import OBJ_DECODERS, decode_borrowed, decode_frame_result, decode_owned
from ._error import callback_failed, take_raised_exception
from ._frame import CAP, new_frame
from ._object import CLASS_OF_INDEX, Object
from ._shape import I64_MAX, I64_MIN

_IncRef = _lib.ObjectIncRef
_CallFrame = _lib.CallFrame
_M32 = 0xFFFFFFFF
_from_bytes = int.from_bytes
# The common argument shapes, written with one pack_into at the argument count that also sets it
# and resets the result slot (the words NUM_ARGS..ARGS of ``_frame``, then the arguments).
_AT_COUNT = L.FRAME_NUM_ARGS
_PACK1 = struct.Struct("<qqq" + "qq").pack_into
_PACK2 = struct.Struct("<qqq" + "qq" * 2).pack_into
_PACK3 = struct.Struct("<qqq" + "qq" * 3).pack_into


def argument_error(func, args, e):
    """Says which argument could not be converted (the hot path converts without checks and
    comes here when a memoryview refused a value)."""
    name = func._name or "<function>"
    for k, a in enumerate(args):
        if isinstance(a, int) and not I64_MIN <= a <= I64_MAX:
            return OverflowError(
                f"argument #{k} of `{name}`: int {a} does not fit in int64 "
                f"(range {I64_MIN}..{I64_MAX})"
            )
    return e


def fill(fr, args, n):
    """Writes ``n`` arguments into a frame by the table; returns what must stay alive until the
    call returns (or None). Exact ints, floats and short ASCII strs are written inline: the same
    rules as their setters, without the call."""
    q = fr[1]
    q[1] = n
    q[2] = 0
    d = fr[2]
    temps = None
    i = ARGS
    try:
        for a in args:
            t = type(a)
            if t is int:
                q[i] = 1
                q[i + 1] = a
            elif t is float:
                q[i] = 3
                d[i + 1] = a
            elif t is str and len(a) <= 7 and a.isascii():
                q[i] = 11 | (len(a) << 32)
                q[i + 1] = int.from_bytes(a.encode(), "little")
            else:
                kind = TABLE.get(t) or kind_of(t)
                if kind == OBJECT and a._h:  # runtime objects: borrowed as they are
                    q[i] = a._ti
                    q[i + 1] = a._h
                else:
                    k = kind.setter(a, fr, i)
                    if k is not None:
                        if temps is None:
                            temps = [k]
                        else:
                            temps.append(k)
            i += 2
    except BaseException:
        # An argument that cannot be written: undo what the ones before it did (a moved
        # object's reference goes back to its wrapper).
        if temps is not None:
            release_temps(temps)
        raise
    return temps


class Function(Object):
    """A callable runtime function: a global, a module's function, a result, or made from a Python
    callable (``rffi.Function(f)``). Positional arguments only."""

    __slots__ = ("_frames", "_name")

    @classmethod
    def __from_extern_c__(cls, c_symbol, *, keep_alive_object=None):
        """The Function calling the C function at address ``c_symbol`` (an int or a
        ``ctypes.c_void_p``), of the runtime's safe-call signature ``int(void* resource, const
        RFFIAny* args, int32_t num_args, RFFIAny* result)``; ``keep_alive_object`` (the library
        that holds it, say) is kept alive as long as the Function. tvm-ffi's name."""
        from ._callback import function_from_c_symbol

        return function_from_c_symbol(c_symbol, keep_alive_object)

    @property
    def __signature__(self):
        """The signature recorded with the global function (``inspect.signature(fn)``)."""
        from ._schema import signature_of

        return signature_of(self)

    # What `help(fn)` reads: a Function is a routine to `inspect` (a descriptor that does not
    # bind: reading it from a class or an instance gives the Function itself, as before), named
    # by its global name, documented by its registered docstring (see `_FunctionDoc`).
    def __get__(self, obj, objtype=None):
        return self

    @property
    def __name__(self) -> str:
        return self._name or "<anonymous>"

    def __init__(self, func):
        if isinstance(func, _CtypesFunction):
            handle = func._h
            _IncRef(handle)
            self._h, self._ti = handle, _lib.kFunction
            self._frames, self._name = [], func._name
            copy_gil_policy(func, self)
            return
        if not callable(func):
            raise TypeError(f"rffi.Function expects a callable, got {type(func).__name__}")
        made = _callback.function_from_callable(func)
        self._h, self._ti, self._frames, self._name = (
            made._h,
            made._ti,
            [],
            made._name,
        )
        copy_gil_policy(made, self)
        made._h = 0

    def __call__(self, *args):
        frames = self._frames
        try:
            fr = frames.pop()
        except IndexError:
            fr = new_frame(self._h, CAP)
        if not args:
            q = fr[1]
            q[1] = 0
            if _CallFrame(fr[0]):
                frames.append(fr)
                raise take_raised_exception()
            w = q[2]
            if w == 0:
                frames.append(fr)
                return None
            r = q[3] if w == 1 else decode_frame_result(fr, w)
            frames.append(fr)
            return r
        # The common shapes (up to three ints, one object, one short str) are written with one
        # pack_into that also sets the count and resets the result slot; they need nothing kept
        # alive, so they skip the try/finally of the general path.
        n = len(args)
        packed = True
        try:
            if n == 1:
                a = args[0]
                t = type(a)
                if t is int:
                    # Three stores beat one pack_into here. The result slot needs no reset: it
                    # only ever holds an object while a result is being taken over.
                    q = fr[1]
                    q[1] = 1
                    q[4] = 1
                    q[5] = a
                elif (TABLE.get(t) or kind_of(t)) == OBJECT and a._h:  # a Tensor, a Function...
                    _PACK1(fr[5], _AT_COUNT, 1, 0, 0, a._ti, a._h)
                elif t is str and len(a) <= 7 and a.isascii():
                    _PACK1(
                        fr[5], 8, 1, 0, 0, 11 | (len(a) << 32), _from_bytes(a.encode(), "little")
                    )
                else:
                    packed = False
            elif n == 2:
                a, b = args
                if type(a) is int and type(b) is int:
                    _PACK2(fr[5], _AT_COUNT, 2, 0, 0, 1, a, 1, b)
                else:
                    packed = False
            elif n == 3:
                a, b, c = args
                if type(a) is int and type(b) is int and type(c) is int:
                    _PACK3(fr[5], _AT_COUNT, 3, 0, 0, 1, a, 1, b, 1, c)
                else:
                    packed = False
            else:
                packed = False
        except (struct.error, ValueError) as e:  # an int outside int64
            frames.append(fr)
            raise argument_error(self, args, e) from None
        if packed:
            if _CallFrame(fr[0]):
                frames.append(fr)
                raise take_raised_exception()
            q = fr[1]
            w = q[2]
            if w == 1:
                r = q[3]
            elif w == 0:
                r = None
            elif w & 0xFFFFFFFF == 11:  # kSmallStr: the text is in the payload
                r = q[3].to_bytes(8, "little")[: w >> 32].decode()
            else:
                r = decode_frame_result(fr, w)
            frames.append(fr)
            return r
        return self._call_general(frames, fr, args, n)

    def _call_general(self, frames, fr, args, n):
        """Any arguments: through the per-type setters, keeping temporaries alive for the call."""
        if n > CAP:
            frames.append(fr)
            frames = None
            fr = new_frame(self._h, n)
        temps = None
        try:
            try:
                temps = fill(fr, args, n)
            except (ValueError, struct.error) as e:
                raise argument_error(self, args, e) from None
            if _CallFrame(fr[0]):
                raise take_raised_exception()
            q = fr[1]
            w = q[2]
            if w == 1:
                return q[3]
            if w == 0:
                return None
            return decode_frame_result(fr, w)
        finally:
            if frames is not None:
                frames.append(fr)
            if temps is not None:
                release_temps(temps)

    @property
    def release_gil(self) -> bool:
        """Whether a call releases the GIL while the native function runs, so that a long call
        lets other threads run. True unless the function is declared non-blocking (its metadata
        says ``"nonblocking": true``: it returns promptly, waits for no other thread and calls
        nothing it is given), which ``get_global_func`` reads; settable per Function. A function
        declared ``"with_arguments"`` (it calls the Functions it is given) shows True and keeps
        the GIL for calls whose Function arguments keep it or are Python callables. The ctypes
        path always releases the GIL and ignores the setting."""
        return True

    @release_gil.setter
    def release_gil(self, value) -> None:
        pass

    def _call_keep(self, *args):
        """Calls and returns ``(type_index, payload)`` of the result without converting it: for an
        object result, the caller takes over the reference."""
        fr = new_frame(self._h, max(len(args), CAP))
        q = fr[1]
        q[1] = len(args)
        temps = []
        try:
            for k, a in enumerate(args):
                temps.append((TABLE.get(type(a)) or kind_of(type(a))).setter(a, fr, ARGS + 2 * k))
            if _CallFrame(fr[0]):
                raise take_raised_exception()
            return q[2] & _M32, q[3]
        finally:
            release_temps([k for k in temps if k is not None])

    def _init_copy(self, new) -> None:
        new._frames = []
        new._name = self._name
        copy_gil_policy(self, new)

    def __repr__(self) -> str:
        name = self._name or "<anonymous>"
        return f"<rffi.Function {name} at {self._h:#x}>"


def copy_gil_policy(src, dst) -> None:
    """Gives ``dst`` the GIL policy of ``src`` (a wrapper of the same function)."""
    dst.release_gil = src.release_gil
    if hasattr(src, "_gil_with_arguments"):  # the fast path's wrappers
        dst._gil_with_arguments = src._gil_with_arguments


class _FunctionDoc:
    """``__doc__`` of the Function classes: the class's docstring on the class, and on a Function
    the docstring registered with it (its metadata's ``doc``), else the class's."""

    def __init__(self, class_doc: str):
        self.class_doc = class_doc

    def __get__(self, obj, objtype=None):
        if obj is None or not obj._name:
            return self.class_doc
        from ._schema import registered_doc

        return registered_doc(obj._name) or self.class_doc


Function.__doc__ = _FunctionDoc(Function.__doc__)

# The fast path (rffi/_native.py): the native library makes `Function` a vectorcall subclass of
# the class above, which converts common arguments and results in Rust and hands everything else
# to the class above's `__call__` (the rules stay here). Without it, the class above is `Function`.

_CtypesFunction = Function


def wrap_function(h: int, name=None):
    """A Function wrapper (of the class in use) taking over a reference to ``h``."""
    f = Function.__new__(Function)
    f._h = h
    f._ti = _lib.kFunction
    f._frames = []
    f._name = name
    return f


FASTPATH = _native.ENABLED
FASTPATH_REASON = _native.REASON
if FASTPATH:
    try:
        Function = _native.make_function_type(
            _CtypesFunction,
            {
                "fallback": _CtypesFunction.__call__,
                "take_raised": take_raised_exception,
                "decode": decode_owned,
                "table": TABLE,
                "resolve": kind_of,
                "decoders": OBJ_DECODERS,
                "classes": CLASS_OF_INDEX,
                "decode_arg": decode_borrowed,
                "write_owned": write_owned,
                "callback_failed": callback_failed,
            },
        )
        Function.__doc__ = _FunctionDoc(_CtypesFunction.__doc__)
    except Exception as e:  # pragma: no cover - a library that cannot build the type
        FASTPATH, FASTPATH_REASON = False, f"building the Function type failed: {e}"

if FASTPATH:
    # The decoders that take over references release them through a native builtin (wrappers
    # release theirs natively when they die).
    from . import _convert, _decode

    _decode._DecRef = _native.builtin("dec_ref")
    _convert._forget_native_kinds = _native.builtin("forget_kinds")

CLASS_OF_INDEX[_lib.kFunction] = Function
OBJ_DECODERS[_lib.kFunction] = wrap_function

from . import _callback  # noqa: E402  (imports this module)
