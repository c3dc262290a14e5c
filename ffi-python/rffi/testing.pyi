from typing import Any, Callable, TypeVar

_T = TypeVar("_T")

def run_with_gpu_lock(fn: Callable[..., _T], *args: Any, **kwargs: Any) -> _T: ...

# The runtime's `testing.*` global functions (`add_one`, `echo`, ...), each an rffi.Function.
def __getattr__(name: str) -> Any: ...
