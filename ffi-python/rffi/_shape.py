"""``Shape``: an immutable tuple of int64 dimensions (``ffi.Shape``), a plain Python value."""

from __future__ import annotations

import operator

I64_MIN = -(2**63)
I64_MAX = 2**63 - 1


class Shape(tuple):
    """An immutable tuple of int64 dimensions (``ffi.Shape``)."""

    __slots__ = ()

    def __new__(cls, dims=()):
        dims = tuple(dims)
        for k, d in enumerate(dims):
            if type(d) is not int:
                try:
                    d = operator.index(d)
                except TypeError:
                    raise TypeError(
                        f"Shape dimension #{k} must be an int, got {type(d).__name__}"
                    ) from None
            if not I64_MIN <= d <= I64_MAX:
                raise OverflowError(f"Shape dimension #{k} ({d}) does not fit in int64")
        return super().__new__(cls, (int(d) for d in dims))

    def __repr__(self) -> str:
        return f"Shape({tuple(self)!r})"
