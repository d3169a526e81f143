"""The measured side: the peak of live tensor bytes while a step runs.

A dispatch mode sees every op a program runs; it counts each storage once, from the first op
that touches it (or from the start, for the tensors given as resident) until
it is freed, and takes the largest total at the end of any op, when the op's
operands and results are alive together. Storage held only inside a kernel
(scratch space) and the allocator's rounding are not tensor bytes and are not
counted; remat's model leaves them out too.
"""

from __future__ import annotations

from typing import Any, Callable, Iterable

import torch
from torch.multiprocessing.reductions import StorageWeakRef
from torch.utils import _pytree as pytree
from torch.utils._python_dispatch import TorchDispatchMode


class _LiveBytes(TorchDispatchMode):
    def __init__(self) -> None:
        super().__init__()
        self.live: dict[int, tuple[StorageWeakRef, int]] = {}
        self.current = 0
        self.peak = 0

    def track(self, tensor: torch.Tensor) -> None:
        storage = tensor.untyped_storage()
        ref = StorageWeakRef(storage)
        if ref.cdata not in self.live:
            self.live[ref.cdata] = (ref, storage.nbytes())
            self.current += storage.nbytes()

    def sweep(self) -> None:
        for key in [k for k, (ref, _) in self.live.items() if ref.expired()]:
            self.current -= self.live.pop(key)[1]

    def __torch_dispatch__(self, func: Any, types: Any, args: Any = (), kwargs: Any = None) -> Any:
        # What the program dropped since the last op is gone before this one runs.
        self.sweep()
        out = func(*args, **(kwargs or {}))
        for t in pytree.tree_leaves((args, kwargs, out)):
            if isinstance(t, torch.Tensor):
                self.track(t)
        self.peak = max(self.peak, self.current)
        return out


def measure_peak(step: Callable[[], Any], resident: Iterable[torch.Tensor] = (),
                 compiled: torch.nn.Module | None = None) -> int:
    """Runs `step()` and returns the most bytes of tensor storage alive at once,
    counting `resident` (parameters, buffers, the batch) from the start.

    With `compiled` (a model from remat.torch.compile(..., backend="eager")),
    the mode runs inside its forward and backward programs only: torch.compile
    would run the model eagerly under a mode entered around the whole step.
    Without it, `step` must not call compiled code."""
    from ._partition import _partitioner_of

    mode = _LiveBytes()
    for t in resident:
        mode.track(t)
    mode.peak = mode.current
    if compiled is None:
        with mode:
            step()
        return mode.peak
    partitioner = _partitioner_of(compiled)
    if partitioner.backend != "eager":
        raise ValueError("measure_peak sees the programs of backend='eager' only (Inductor's kernels run no aten ops)")
    partitioner.measuring = mode
    try:
        step()
    finally:
        partitioner.measuring = None
    return mode.peak
