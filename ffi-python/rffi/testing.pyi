from typing import Any, Callable, TypeVar

from . import Object

_T = TypeVar("_T")

def create_object(type_key: str, **fields: Any) -> Object: ...
def run_with_gpu_lock(fn: Callable[..., _T], *args: Any, **kwargs: Any) -> _T: ...

# The runtime's `testing.*` global functions (`add_one`, `echo`, ...), each an rffi.Function, and
# the classes of its testing object types (`TestIntPair`, `TestObjectBase`, ...).
def __getattr__(name: str) -> Any: ...
