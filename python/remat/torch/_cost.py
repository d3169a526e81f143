"""The stated cost model behind the times remat gives the ops of a joint graph.

A roofline per op: time = max(FLOPs / peak FLOP rate, bytes moved / memory
bandwidth) + a fixed launch cost. FLOPs come from PyTorch's own counting
formulas (torch.utils.flop_counter, convolutions and matrix products); bytes
moved are the op's tensor operands and results. Times only
rank plans against each other (which values are cheaper to recompute); the
memory figures never depend on them.
"""

from __future__ import annotations

import dataclasses

import torch
from torch import fx
from torch.utils import _pytree as pytree
from torch.utils.flop_counter import flop_registry


@dataclasses.dataclass(frozen=True)
class CostModel:
    #: floating-point operations per second the device sustains
    flops_per_second: float = 50e12
    #: bytes per second between memory and the device
    bytes_per_second: float = 2e12
    #: fixed cost of a kernel launch, seconds
    launch_seconds: float = 5e-6

    def seconds(self, node: fx.Node) -> float:
        if node.op != "call_function":
            return 0.0
        values = lambda x: x.meta.get("val") if isinstance(x, fx.Node) else x  # noqa: E731
        args = pytree.tree_map(values, node.args)
        kwargs = pytree.tree_map(values, node.kwargs)
        out = node.meta.get("val")
        moved = sum(t.numel() * t.element_size()
                    for t in pytree.tree_leaves((args, kwargs, out)) if isinstance(t, torch.Tensor))
        flops = 0
        packet = getattr(node.target, "overloadpacket", None)
        if packet in flop_registry:
            try:
                flops = flop_registry[packet](*args, out_val=out, **kwargs)
            except Exception:  # a formula that does not take this overload's arguments: count bytes only
                flops = 0
        return max(flops / self.flops_per_second, moved / self.bytes_per_second) + self.launch_seconds
