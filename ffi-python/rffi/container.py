"""The containers under their own module name: ``Array``, ``List``, ``Map``, ``Dict``."""

from . import Array, Dict, List, Map
from .dataclasses import MISSING

__all__ = ["Array", "Dict", "List", "MISSING", "Map"]
