"""A PyTorch model's forward, as the partitioner sees it, as a remat graph."""

from __future__ import annotations

import os
from typing import Any, Sequence

import torch
from torch._functorch import partitioners as _partitioners

import remat

from ._cost import CostModel
from ._joint import joint_model


def export(model: torch.nn.Module, example_inputs: Sequence[Any], path: str | os.PathLike | None = None, *,
           cost: CostModel | None = None, name: str | None = None) -> remat.Graph:
    """Traces one training step of `model` on `example_inputs` with aot_autograd
    and returns the forward as a remat graph (written as remat JSON to `path`
    when given, for `remat info / plan / pareto / explain`). The model is not
    changed and its parameters get no gradient."""
    from functorch.compile import aot_module, make_boxed_func

    graphs: list[remat.Graph] = []
    label = name or type(model).__name__

    def capture(joint, joint_inputs, *, num_fwd_outputs, **kwargs):
        graphs.append(joint_model(joint, num_fwd_outputs, cost, name=label).graph)
        return _partitioners.default_partition(joint, joint_inputs, num_fwd_outputs=num_fwd_outputs, **kwargs)

    traced = aot_module(model, fw_compiler=lambda gm, _: make_boxed_func(gm.forward), partition_fn=capture)
    traced(*example_inputs)
    graph = graphs[0]
    if path is not None:
        text = graph.to_json()
        tmp = f"{os.fspath(path)}.tmp{os.getpid()}"
        with open(tmp, "w") as f:
            f.write(text)
        os.replace(tmp, path)
    return graph
