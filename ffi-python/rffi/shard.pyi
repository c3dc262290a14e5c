"""Type stubs of rffi.shard."""

from os import PathLike
from typing import Any

from . import Tensor
from .session import DRef, _Session

__all__ = ["load_local", "load_params"]

def load_local(
    weights_path: str | PathLike[str],
    shard_info: dict[str, Any] | str | PathLike[str] | None = None,
    rank: int = 0,
    world_size: int = 1,
    *,
    progress: bool = True,
) -> dict[str, Tensor]: ...
def load_params(
    sess: _Session | DRef,
    weights_path: str | PathLike[str],
    shard_info: dict[str, Any] | str | PathLike[str] | None = None,
    *,
    progress: bool = True,
    via: str = "auto",
) -> dict[str, DRef]: ...
