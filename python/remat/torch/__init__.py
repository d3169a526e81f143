"""remat's plans inside PyTorch: a partition function for aot_autograd and
torch.compile that saves remat's kept set and recomputes the rest.

    compiled = remat.torch.compile(model)                  # least peak
    compiled = remat.torch.compile(model, budget=2 << 30)  # least recompute within 2 GiB
    loss = compiled(x).sum(); loss.backward()
    remat.torch.reports(compiled)[0].predicted_peak        # the simulator's figure
    remat.torch.export(model, (x,), "model.json")          # the forward for `remat info/plan`

What is never recomputed: random ops (their RNG state is not replayed, so a
second run would draw other numbers) and impure ops (mutations, collectives,
ops with effects); they are kept whatever the plan says.
"""

from ._cost import CostModel
from ._export import export
from ._joint import JointModel, joint_model
from ._partition import BudgetError, Partitioner, PartitionReport, compile, reports

__all__ = ["BudgetError", "CostModel", "JointModel", "PartitionReport", "Partitioner", "compile", "export",
           "joint_model", "reports"]
