"""``String`` and ``Bytes``: the runtime's text and byte strings (``ffi.String``, ``ffi.Bytes``) as
Python sees them, a ``str`` and a ``bytes``.

They add nothing to ``str`` and ``bytes`` on purpose: they compare, hash, format, slice and pickle
exactly as the plain values do, and convert back to the runtime as them. ``rffi.convert`` returns
them for text and bytes, naming the runtime's type; calls return plain ``str`` and ``bytes`` (the
faster form, equal to these in every way).
"""

from __future__ import annotations


class String(str):
    """A runtime string (``ffi.String``): a ``str`` in every respect."""

    __slots__ = ()


class Bytes(bytes):
    """A runtime byte string (``ffi.Bytes``): a ``bytes`` in every respect."""

    __slots__ = ()
