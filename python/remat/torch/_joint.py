"""The forward of an aot_autograd joint graph as a remat graph.

One remat node per storage the forward allocates: a view (``t``, ``view``,
``detach``...) belongs to the node of its base, and each output of a
multi-output op (``native_batch_norm``, ``max_pool2d_with_indices``) is a node
of its own with the op's operands. Primal inputs that receive a gradient are
parameters: their bytes are charged to the first node that reads them, so the
simulator accounts for them and their gradients; the other primals (the batch,
buffers) are graph inputs. What each node's backward reads comes from the
backward ops that use forward values, matched to their forward op by
``seq_nr``: a value read by the backward of the op that made it is read as its
output, one read by the backward of an op it feeds as that op's inputs.
"""

from __future__ import annotations

import dataclasses
import operator
from typing import Any

import torch
from torch import fx
from torch._functorch import partitioners as _partitioners
from torch.multiprocessing.reductions import StorageWeakRef
from torch.utils import _pytree as pytree

import remat

from ._cost import CostModel


@dataclasses.dataclass
class JointModel:
    """A joint graph's forward, as remat sees it."""

    graph: remat.Graph
    #: the graph's nodes as given to remat.Graph, by name (inputs carry no "inputs" or "reads")
    nodes: dict[str, dict[str, Any]]
    #: the joint graph's forward nodes, in order
    forward: list[fx.Node]
    #: remat node name -> the forward fx nodes whose values live in its storage
    members: dict[str, list[fx.Node]]
    #: forward fx nodes that hold resident storage (primals and views of them)
    resident: list[fx.Node]
    #: remat nodes that must not be recomputed: random ops (their RNG is not
    #: replayed), impure ops (mutations, collectives, effects)
    must_keep: set[str]
    #: forward symbolic-size nodes the backward reads
    saved_sym_nodes: list[fx.Node]
    #: copies of updated buffers (protect_updated_buffers): only a recomputation reads them
    buffer_copies: set[str] = dataclasses.field(default_factory=set)


def forward_nodes(joint: fx.GraphModule) -> list[fx.Node]:
    """The nodes up to the last one tagged forward, as PyTorch's default partition splits them."""
    last = None
    for node in joint.graph.nodes:
        if (_partitioners._has_tag_is_forward(node) or _partitioners._is_primal(node)
                or _partitioners._is_fwd_seed_offset(node)):
            last = node
    out = []
    for node in joint.graph.nodes:
        if node.op == "output":
            break
        if not _partitioners._is_tangent(node):
            out.append(node)
        if node is last:
            break
    return out


def _tensor(node: fx.Node) -> torch.Tensor | None:
    value = node.meta.get("val")
    return value if isinstance(value, torch.Tensor) else None


def _storage(value: torch.Tensor, node: fx.Node) -> tuple[int, int]:
    storage = value.untyped_storage()
    nbytes = storage.nbytes()
    if not isinstance(nbytes, int):
        raise remat.Error(f"remat.torch: {node.name} has a symbolic size ({nbytes}); remat plans static shapes "
                          "(torch.compile(..., dynamic=False), as remat.torch.compile does)")
    return StorageWeakRef(storage).cdata, nbytes


def is_random(node: fx.Node) -> bool:
    return node.op == "call_function" and torch.Tag.nondeterministic_seeded in getattr(node.target, "tags", ())


def _is_impure(node: fx.Node) -> bool:
    if node.op != "call_function" or node.target is operator.getitem:
        return False
    return node.is_impure(impure_random=False)


def _short_op(node: fx.Node) -> str:
    target = node.target
    if node.op == "placeholder":
        return "input"
    name = getattr(target, "__name__", None) or str(target)
    return name.split(".")[0] if hasattr(target, "_schema") else name


#: ops that read buffers the step then updates in place (batch norm's running
#: statistics, arguments 3 and 4), and that a recomputation would read again
#: after the update: autograd refuses such a saved tensor.
_READS_UPDATED_BUFFERS = {torch.ops.aten._native_batch_norm_legit_functional.default: (3, 4)}


def protect_updated_buffers(joint: fx.GraphModule) -> None:
    """Makes ops that read buffers updated in place read a copy taken in the
    forward instead (kept, never recomputed: a few bytes per channel), so that
    the op can be recomputed in the backward with the values the forward used."""
    for node in list(joint.graph.nodes):
        for index in _READS_UPDATED_BUFFERS.get(node.target, ()):
            buffer = node.args[index] if index < len(node.args) else None
            if not (isinstance(buffer, fx.Node) and buffer.op == "placeholder"):
                continue
            with joint.graph.inserting_before(node):
                copy = joint.graph.call_function(torch.ops.aten.clone.default, (buffer,))
            copy.meta.update({key: node.meta[key] for key in ("partitioner_tag", "seq_nr") if key in node.meta})
            copy.meta["val"] = buffer.meta["val"].clone()
            copy.meta["remat_buffer_copy"] = True
            node.update_arg(index, copy)
    joint.recompile()


def joint_model(joint: fx.GraphModule, num_fwd_outputs: int, cost: CostModel | None = None,
                name: str = "") -> JointModel:
    cost = cost or CostModel()
    forward = forward_nodes(joint)
    in_forward = set(forward)
    primals = [n for n in joint.graph.find_nodes(op="placeholder") if _partitioners._is_primal(n)]
    outputs = pytree.arg_tree_leaves(*(n.args for n in joint.graph.find_nodes(op="output")))
    grads = outputs[num_fwd_outputs:]
    has_grad = {p for p, g in zip(primals, grads) if g is not None}

    owner: dict[int, str | None] = {}  # storage -> remat node (None: a parameter, resident)
    param_bytes: dict[int, int] = {}  # parameter storages not charged to a node yet
    specs: dict[str, dict[str, Any]] = {}
    members: dict[str, list[fx.Node]] = {}
    node_of: dict[fx.Node, str] = {}
    resident: list[fx.Node] = []
    must_keep: set[str] = set()
    buffer_copies: set[str] = set()

    def operands(node: fx.Node, seen: set[int], out: list[str], params: list[int]) -> None:
        for arg in node.all_input_nodes:
            value = _tensor(arg)
            if value is None:
                if arg.op == "call_function":  # a multi-output op: its operands are the getitem's
                    operands(arg, seen, out, params)
                continue
            key, _ = _storage(value, arg)
            if key in seen:
                continue
            seen.add(key)
            if key in param_bytes:
                params.append(key)
            elif owner.get(key) is not None:
                out.append(owner[key])

    for node in forward:
        value = _tensor(node)
        if value is None:
            continue
        key, nbytes = _storage(value, node)
        if node.op in ("placeholder", "get_attr"):
            resident.append(node)
            if node in has_grad:
                owner[key] = None
                param_bytes[key] = nbytes
            elif key not in owner:
                owner[key] = node.name
                specs[node.name] = {"name": node.name, "op": "input", "bytes": nbytes}
                members[node.name] = [node]
                node_of[node] = node.name
            continue
        if key in owner:  # a view of a value already made
            base = owner[key]
            if base is None or specs[base]["op"] == "input":
                resident.append(node)
            else:
                members[base].append(node)
                node_of[node] = base
            continue
        inputs: list[str] = []
        params: list[int] = []
        operands(node, set(), inputs, params)
        producer = node.args[0] if node.target is operator.getitem else node
        # A multi-output op's time is shared among its outputs.
        shares = sum(1 for u in producer.users if _tensor(u) is not None) if producer is not node else 1
        spec = {
            "name": node.name,
            "op": _short_op(producer),
            "inputs": inputs,
            "bytes": nbytes,
            "time": cost.seconds(producer) / max(1, shares),
            "params": sum(param_bytes.pop(k) for k in params),
            "reads": "none",
        }
        owner[key] = node.name
        specs[node.name] = spec
        members[node.name] = [node]
        node_of[node] = node.name
        if is_random(producer) or _is_impure(producer):
            must_keep.add(node.name)
        if node.meta.get("remat_buffer_copy"):
            must_keep.add(node.name)
            buffer_copies.add(node.name)

    if param_bytes:  # parameters no forward node reads (the backward alone uses them)
        specs["unread_parameters"] = {"name": "unread_parameters", "op": "input", "bytes": sum(param_bytes.values())}

    # What the backward reads, by the forward op whose backward reads it.
    made_by_seq: dict[int, set[str]] = {}
    for node in forward:
        seq = node.meta.get("seq_nr")
        if seq is not None and node in node_of and specs[node_of[node]]["op"] != "input":
            made_by_seq.setdefault(seq, set()).add(node_of[node])
    reads: dict[str, set[str]] = {n: set() for n in specs}
    saved_sym_nodes: list[fx.Node] = []
    for node in joint.graph.nodes:
        if node in in_forward or node.op in ("placeholder", "output"):
            continue
        for arg in node.all_input_nodes:
            if arg not in in_forward:
                continue
            if _partitioners.is_sym_node(arg):
                if arg not in saved_sym_nodes:
                    saved_sym_nodes.append(arg)
                continue
            u = node_of.get(arg)
            if u is None or specs[u]["op"] == "input":
                continue
            makers = made_by_seq.get(node.meta.get("seq_nr"), set())
            if u in makers:
                reads[u].add("output")
                continue
            consumers = [v for v in makers if u in specs[v]["inputs"]]
            if consumers:
                for v in consumers:
                    reads[v].add("inputs")
            else:
                reads[u].add("output")
    for n, r in reads.items():
        if specs[n]["op"] != "input":
            specs[n]["reads"] = "both" if len(r) == 2 else (next(iter(r)) if r else "none")

    graph = remat.Graph(list(specs.values()), name=name)
    return JointModel(graph, specs, forward, members, resident, must_keep, saved_sym_nodes, buffer_copies)
