"""Weft as a torch.distributed backend for CPU tensors.

Importing this module registers the backend name "weft"::

    import torch.distributed as dist
    import weft.torch  # noqa: F401  (registers "weft")

    dist.init_process_group("weft")

Every operation of a process group runs on one worker thread of that group, in the order the
application issued it, so all ranks run the same sequence; the Work objects returned by async
calls complete when their operation has run. See docs/torch.md for what is supported.
"""

import os

import torch.distributed as _dist

from . import _weft_torch

BACKEND_NAME = "weft"

# Weft reads its environment once per process, when it first needs a setting, so these defaults
# act only if they are in place before the first communicator of the process is made.
_INT32_MAX = 2**31 - 1


def _create_process_group(store, rank, world_size, timeout):
    """The creator torch.distributed calls for init_process_group/new_group with backend "weft"."""
    timeout_ms = max(1, int(timeout.total_seconds() * 1000))
    # This backend serves CPU tensors: host mode, even in a build that has a GPU backend.
    os.environ.setdefault("WEFT_DEVICE", "host")
    # A peer that makes no progress for the process group's timeout fails the operation inside
    # Weft too, also when nobody waits on its Work.
    os.environ.setdefault("WEFT_TIMEOUT_MS", str(min(timeout_ms, _INT32_MAX)))
    return _weft_torch.create_process_group(store, rank, world_size, timeout_ms)


#: True when this build reduces complex64/complex128 tensors.
HAS_COMPLEX = bool(_weft_torch.has_complex)

if BACKEND_NAME.upper() not in _dist.Backend._plugins:
    _dist.Backend.register_backend(BACKEND_NAME, _create_process_group)
