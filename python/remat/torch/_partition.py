"""remat's kept-set plans as an aot_autograd partition function."""

from __future__ import annotations

import dataclasses
import uuid
import weakref
from typing import Any, Callable

import torch
from torch import fx
from torch.fx.graph import _BoxedCodeGen
from torch.multiprocessing.reductions import StorageWeakRef
from torch._functorch import partitioners as _partitioners
from torch._functorch.compile_utils import raise_getitems

import remat

from ._cost import CostModel
from ._joint import JointModel, is_random, joint_model, protect_updated_buffers

try:  # Inductor's hook for a partitioner of one's own (PyTorch 2.6 and later)
    from torch._inductor.custom_graph_pass import CustomPartitionerFn as _PartitionerBase
except ImportError:  # older PyTorch: usable as partition_fn only
    _PartitionerBase = object


class BudgetError(remat.Error):
    """The budget is below what any plan of this step needs; `least` is the least that works."""

    def __init__(self, message: str, budget: int, least: int):
        super().__init__(message)
        self.budget = budget
        self.least = least


@dataclasses.dataclass
class PartitionReport:
    """What remat decided for one joint graph, and what the simulator says it costs."""

    #: the forward as remat sees it
    graph: remat.Graph
    #: the method whose plan was taken
    method: str
    #: remat nodes kept through the forward (random and impure ones included)
    kept: list[str]
    #: the forward's values the backward module receives (fx names, primals included)
    saved: list[str]
    #: bytes of the kept set: what the plan holds from the forward for the backward
    saved_bytes: int
    #: remat nodes the backward recomputes
    recomputed: list[str]
    #: each saved fx value's remat node ("" for a resident one: a primal or a view of one)
    owner: dict[str, str]
    #: the simulator's figures for the kept-set plan, run in the order of the forward and backward programs
    figures: remat.Simulation
    #: the plan's schedule, (kind, node) steps
    schedule: list[tuple[str, str]]

    #: what the forward program actually returned for the backward, in bytes of
    #: distinct storage that is not an input of the step (set by backend "eager"
    #: when the program runs; None before)
    measured_saved_bytes: int | None = None

    @property
    def predicted_peak(self) -> int:
        return self.figures.peak_bytes


def _needed(model: JointModel, kept: set[str]) -> set[str]:
    """The members of `kept` the backward uses: values a backward reads, and
    the kept values that recomputing the other ones it reads starts from. A
    kept value nothing uses would only be held by the plan, never by the
    programs (the partition saves what the backward uses). Buffer copies are
    read by recomputations only, never by a backward."""
    needed: set[str] = set()
    for name, node in model.nodes.items():
        reads = node.get("reads", "none")
        if reads in ("output", "both"):
            needed.add(name)
        if reads in ("inputs", "both"):
            needed.update(p for p in node["inputs"] if p not in model.buffer_copies)
    stack = [n for n in needed if n not in kept]
    while stack:
        for p in model.nodes[stack.pop()].get("inputs", ()):
            if p not in needed:
                needed.add(p)
                if p not in kept:
                    stack.append(p)
    return kept & needed


def _kept_of_schedule(schedule: list[tuple[str, str]]) -> set[str]:
    """The values a schedule holds when its forward ends."""
    alive: set[str] = set()
    for kind, node in schedule:
        if kind == "backward":
            break
        if kind in ("compute", "recompute"):
            alive.add(node)
        elif kind == "free":
            alive.discard(node)
    return alive


class Partitioner(_PartitionerBase):
    """A partition function (``partition_fn`` of aot_autograd, or Inductor's
    ``custom_partitioner_fn``) that saves remat's kept set and recomputes every
    other value the backward needs, right before its first use.

    budget: None plans the least peak; bytes plan the least recompute time
    within that peak (the whole step: parameters, inputs, activations,
    gradients). methods: remat methods whose plans (as kept sets) compete; the
    lowest simulated peak (or, with a budget, the least recompute within it)
    wins. time_limit: seconds per method.
    """

    def __init__(self, budget: int | None = None, *, methods: tuple[str, ...] = ("kept-search", "exact"),
                 time_limit: float = 10.0, cost: CostModel | None = None):
        if budget is not None and (not isinstance(budget, int) or isinstance(budget, bool) or budget <= 0):
            raise ValueError(f"budget must be a positive int (bytes) or None, got {budget!r}")
        for m in methods:
            if m not in remat.methods:
                raise ValueError(f"unknown method {m!r} (one of {', '.join(remat.methods)})")
        self.budget = budget
        self.methods = tuple(methods)
        self.time_limit = time_limit
        self.cost = cost or CostModel()
        self.reports: list[PartitionReport] = []
        self._token = uuid.uuid4().hex
        #: where the programs run: "inductor", "eager", or None when the caller compiles them
        self.backend: str | None = None
        #: a _LiveBytes mode the eager programs run under while measure_peak measures
        self.measuring: Any = None

    def __getstate__(self) -> dict:
        # Inductor pickles its configuration into cache keys: the options, not what was planned.
        return {k: v for k, v in self.__dict__.items() if k not in ("reports", "measuring")}

    def __setstate__(self, state: dict) -> None:
        self.__dict__.update(state, reports=[], measuring=None)

    def __deepcopy__(self, memo: dict) -> "Partitioner":
        # Inductor copies its configuration; the copy must report to the same place.
        return self

    def uuid(self) -> Any:
        # Inductor keys its compilation caches on this. One key per partitioner:
        # a cache hit would skip the partition, and with it the report of what
        # was planned.
        return self._token

    def plan(self, model: JointModel) -> tuple[str, set[str], remat.Simulation, list]:
        """The kept set to save: each method's least-peak plan and, with a
        budget, its least-recompute plan within the budget, each as the kept
        set it holds for the backward; the best that meets the budget wins."""
        g = model.graph
        candidates = []
        objectives = [("memory", None)] + ([("time", self.budget)] if self.budget is not None else [])
        for method in self.methods:
            for objective, budget in objectives:
                s = remat.solve(g, method=method, objective=objective, budget=budget, time_limit=self.time_limit)
                if s.peak is None:
                    continue
                kept = set(s.kept) if s.kept is not None else _kept_of_schedule(s.schedule)
                kept = _needed(model, kept | model.must_keep)
                schedule = remat.kept_schedule(g, sorted(kept))
                candidates.append((method, kept, remat.simulate(g, schedule), schedule))
        if not candidates:
            raise remat.Error("remat: no method found a plan for this step")
        if self.budget is None:
            return min(candidates, key=lambda c: (c[2].peak_bytes, c[2].recompute_time))
        fits = [c for c in candidates if c[2].peak_bytes <= self.budget]
        if not fits:
            least = min(c[2].peak_bytes for c in candidates)
            raise BudgetError(
                f"remat: a budget of {self.budget} bytes is below the least peak any plan of this step needs, "
                f"{least} bytes ({least / 2**20:.1f} MiB); pass budget >= {least}", self.budget, least)
        return min(fits, key=lambda c: (c[2].recompute_time, c[2].peak_bytes))

    def __call__(self, joint_module: fx.GraphModule, joint_inputs: Any, *, num_fwd_outputs: int,
                 static_lifetime_input_indices: list[int] | None = None, compiler: str | None = None,
                 **kwargs: Any) -> tuple[fx.GraphModule, fx.GraphModule]:
        protect_updated_buffers(joint_module)
        model = joint_model(joint_module, num_fwd_outputs, self.cost, name=f"graph{len(self.reports)}")
        method, kept, figures, schedule = self.plan(model)

        saved = list(model.resident)
        for name in sorted(kept, key=lambda n: model.graph.index(n)):
            saved += [n for n in model.members.get(name, []) if n.op != "placeholder"]
        saved = list(dict.fromkeys(saved))
        saved_sym_nodes = list(model.saved_sym_nodes)
        node_info = _partitioners.classify_nodes(joint_module, static_lifetime_input_indices or [], num_fwd_outputs)
        fw, bw = _partitioners._extract_fwd_bwd_modules(
            joint_module, saved, saved_sym_nodes=saved_sym_nodes, num_fwd_outputs=num_fwd_outputs,
            static_lifetime_input_nodes=node_info.static_lifetime_input_nodes)
        # What the programs do not use goes, random ops included (a dead random op in the backward
        # would draw numbers the eager step does not); collectives and effects stay.
        for module in (fw, bw):
            module.graph.eliminate_dead_code(is_impure_node=_has_effects)
            module.recompile()
        recomputed_fx = {n.name for n in bw.graph.nodes if n.op == "call_function"} & \
            {n.name for n in model.forward}
        for node in bw.graph.nodes:
            if node.name in recomputed_fx and is_random(node):
                raise AssertionError(f"remat: the backward would recompute the random op {node.name}")
        bw = _partitioners.reordering_to_mimic_autograd_engine(bw)
        fw, bw = raise_getitems(fw), raise_getitems(bw)

        received = _placeholder_names(bw)
        recomputed = [k for k in model.graph.names if any(n.name in recomputed_fx for n in model.members.get(k, []))]
        node_of = {n.name: name for name, nodes in model.members.items() for n in nodes}
        saved_names = [n.name for n in saved if n.name in received]
        owner = {n: node_of.get(n, "") for n in saved_names}
        owner = {n: "" if o and model.nodes[o]["op"] == "input" else o for n, o in owner.items()}
        self.reports.append(PartitionReport(
            model.graph, method, sorted(kept, key=model.graph.index), saved_names,
            sum(model.nodes[k]["bytes"] for k in kept), recomputed, owner, figures, schedule))
        self._num_fwd_outputs = num_fwd_outputs
        return fw, bw


def _has_effects(node: fx.Node) -> bool:
    if node.op in ("placeholder", "output"):
        return True
    return not _partitioners.is_not_collective(node) or node.is_impure(impure_random=False)


def _placeholder_names(module: fx.GraphModule) -> set[str]:
    return {n.name for n in module.graph.find_nodes(op="placeholder")}


_compiled: "weakref.WeakKeyDictionary[torch.nn.Module, Partitioner]" = weakref.WeakKeyDictionary()


def _partitioner_of(compiled: torch.nn.Module) -> "Partitioner":
    try:
        return _compiled[compiled]
    except KeyError:
        raise ValueError("not a model from remat.torch.compile") from None


def _eager_compiler(partitioner: "Partitioner", forward: bool) -> Callable:
    """Runs a program as it is, under the partitioner's measuring mode when one
    is set; a forward program also measures what it returns for the backward."""

    def compiler(gm: fx.GraphModule, example_inputs: Any) -> Callable:
        # The program takes its argument list and clears it, so that each value
        # dies after its last use as the plan says, not when the call returns.
        gm.graph.set_codegen(_BoxedCodeGen())
        gm.recompile()
        report = partitioner.reports[-1] if forward and partitioner.reports else None
        first_saved = partitioner._num_fwd_outputs if report else 0
        num_saved = len(report.saved) if report else 0

        def run(args: list) -> Any:
            # What the first run saves is what every run saves: measured once.
            measure_saved = report is not None and report.measured_saved_bytes is None
            if measure_saved:
                inputs = {StorageWeakRef(a.untyped_storage()).cdata for a in args if isinstance(a, torch.Tensor)}
            mode = partitioner.measuring
            if mode is None:
                out = gm(args)
            else:
                with mode:
                    out = gm(args)
            if measure_saved:
                storages = {}
                for t in out[first_saved:first_saved + num_saved]:
                    if isinstance(t, torch.Tensor):
                        storages[StorageWeakRef(t.untyped_storage()).cdata] = t.untyped_storage().nbytes()
                report.measured_saved_bytes = sum(n for k, n in storages.items() if k not in inputs)
            return out

        run._boxed_call = True
        return run

    return compiler


def compile(model: torch.nn.Module, budget: int | None = None, *, backend: str = "inductor",
            methods: tuple[str, ...] = ("kept-search", "exact"), time_limit: float = 10.0,
            cost: CostModel | None = None, **compile_kwargs: Any) -> torch.nn.Module:
    """`torch.compile(model)` whose partitioner saves remat's plan.

    backend "inductor" compiles the forward and backward modules with Inductor;
    "eager" runs them as they are (the memory the plan predicts, without
    Inductor's fusions). `reports(compiled)` gives remat's decisions per graph.
    """
    partitioner = Partitioner(budget, methods=methods, time_limit=time_limit, cost=cost)
    partitioner.backend = backend
    compile_kwargs.setdefault("dynamic", False)  # remat plans bytes: shapes must be known
    if backend == "inductor":
        options = dict(compile_kwargs.pop("options", {}) or {})
        options["custom_partitioner_fn"] = partitioner
        compiled = torch.compile(model, backend="inductor", options=options, **compile_kwargs)
    elif backend == "eager":
        from torch._dynamo.backends.common import aot_autograd

        compiled = torch.compile(model, backend=aot_autograd(fw_compiler=_eager_compiler(partitioner, True),
                                                             bw_compiler=_eager_compiler(partitioner, False),
                                                             partition_fn=partitioner), **compile_kwargs)
    else:
        raise ValueError(f"unknown backend {backend!r} (inductor or eager)")
    _compiled[compiled] = partitioner
    return compiled


def reports(compiled: torch.nn.Module) -> list[PartitionReport]:
    """remat's decisions for each graph `compiled` (from `compile`) has partitioned so far."""
    return _partitioner_of(compiled).reports
