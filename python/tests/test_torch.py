"""remat.torch on the CPU: remat's partition against eager autograd.

For each model, one training step under remat's partition (least peak, then
three budgets between it and the peak of keeping everything) must give the
loss and every parameter gradient of eager autograd, save exactly the kept set
remat planned (its bytes as the simulator holds them), and peak, in live tensor
bytes, within 2% of remat's prediction.
"""

import copy

import pytest

torch = pytest.importorskip("torch", reason="PyTorch is not installed (pip install torch torchvision)")
torchvision = pytest.importorskip("torchvision", reason="torchvision is not installed")
nn = torch.nn

import remat  # noqa: E402
import remat.torch as rt  # noqa: E402
from remat.torch._measure import measure_peak  # noqa: E402


class WithLoss(nn.Module):
    """A model and its loss in one graph, so the partition sees the whole step."""

    def __init__(self, model):
        super().__init__()
        self.model = model

    def forward(self, x, target):
        out = self.model(x)
        if isinstance(out, tuple):  # Inception's (logits, aux)
            out = out[0]
        return nn.functional.cross_entropy(out, target)


def dropout_mlp():
    return nn.Sequential(nn.Flatten(), nn.Linear(3 * 16 * 16, 256), nn.ReLU(), nn.Dropout(0.3),
                         nn.Linear(256, 256), nn.GELU(), nn.Dropout(0.2), nn.Linear(256, 10))


MODELS = {
    "resnet18": (lambda: torchvision.models.resnet18(num_classes=10), (4, 3, 32, 32)),
    "densenet121": (lambda: torchvision.models.densenet121(num_classes=10), (2, 3, 32, 32)),
    "inception_v3": (lambda: torchvision.models.inception_v3(num_classes=10, aux_logits=False, init_weights=False),
                     (2, 3, 75, 75)),
    "dropout_mlp": (dropout_mlp, (8, 3, 16, 16)),
}


def make(name, seed=0):
    torch.manual_seed(seed)
    build, shape = MODELS[name]
    model = WithLoss(build())
    x = torch.randn(shape, generator=torch.Generator().manual_seed(1))
    target = torch.randint(0, 10, (shape[0],), generator=torch.Generator().manual_seed(2))
    return model, x, target


def eager_step(model, x, target, seed=3):
    torch.manual_seed(seed)
    loss = model(x, target)
    loss.backward()
    return loss.detach(), {n: p.grad.clone() for n, p in model.named_parameters()}


def resident(model, x, target):
    return [*model.parameters(), *model.buffers(), x, target]


def assert_same(a, b, what):
    if torch.equal(a, b):
        return
    # Kernels whose CPU results depend on the order of a reduction: 1e-6 relative.
    scale = b.abs().max().clamp_min(1e-30)
    assert (a - b).abs().max() / scale <= 1e-6, f"{what} differs beyond 1e-6 relative"


def run_partitioned(name, budget):
    # Dynamo stops compiling a function after a few recompilations; each run is a fresh start.
    torch._dynamo.reset()
    model, x, target = make(name)
    reference = copy.deepcopy(model)
    ref_loss, ref_grads = eager_step(reference, x, target)

    compiled = rt.compile(model, budget, backend="eager", time_limit=5.0)
    torch.manual_seed(3)
    loss = compiled(x, target)
    loss.backward()
    report = rt.reports(compiled)[-1]
    return model, compiled, report, (x, target), (loss.detach(), ref_loss), ref_grads




@pytest.mark.parametrize("name", list(MODELS))
def test_remat_partition_matches_eager_at_least_peak_and_three_budgets(name):
    model, compiled, report, (x, target), (loss, ref_loss), ref_grads = run_partitioned(name, None)
    least = report.predicted_peak
    graph = report.graph
    everything = remat.simulate(graph, remat.kept_schedule(graph, graph.names)).peak_bytes
    assert least <= everything
    budgets = sorted({least + (everything - least) * k // 4 for k in (1, 2, 4)})
    runs = [(None, model, compiled, report, (x, target), (loss, ref_loss), ref_grads)]
    for budget in budgets:
        runs.append((budget, *run_partitioned(name, budget)))

    for budget, model, compiled, report, (x, target), (loss, ref_loss), ref_grads in runs:
        label = f"{name} budget {budget}"
        assert_same(loss, ref_loss, f"{label}: the loss")
        for n, p in model.named_parameters():
            assert_same(p.grad, ref_grads[n], f"{label}: the gradient of {n}")
        if budget is not None:
            assert report.predicted_peak <= budget, label

        # What the forward program saved is what remat holds for the backward.
        assert report.measured_saved_bytes == report.saved_bytes, label

        # The step's live tensor bytes against the simulator's peak.
        for p in model.parameters():
            p.grad = None
        torch.manual_seed(3)
        measured = measure_peak(lambda: compiled(x, target).backward(), resident(model, x, target), compiled=compiled)
        assert abs(measured - report.predicted_peak) <= 0.02 * report.predicted_peak, \
            f"{label}: measured {measured} bytes, predicted {report.predicted_peak}"


def test_the_kept_set_is_what_the_backward_receives():
    for name in ("resnet18", "densenet121"):
        _, _, report, *_ = run_partitioned(name, None)
        received = {report.owner[n] for n in report.saved} - {""}
        assert received == set(report.kept), name
        assert not set(report.recomputed) & received, name


def test_random_ops_are_kept_not_recomputed():
    _, _, report, *_ = run_partitioned("dropout_mlp", None)
    graph = report.graph
    dropouts = [n for n in graph.names if graph.node(graph.index(n))["op"] == "native_dropout"]
    assert dropouts, "the traced step has no dropout"
    assert set(dropouts) <= set(report.kept)
    assert not set(dropouts) & set(report.recomputed)


def test_a_budget_below_every_plan_names_the_least_and_leaves_the_model_usable():
    torch._dynamo.reset()
    model, x, target = make("resnet18")
    compiled = rt.compile(model, 1 << 20, backend="eager")
    with pytest.raises(Exception) as e:
        compiled(x, target)
    message = str(e.value)
    assert "below the least peak any plan of this step needs" in message
    least = int(message.split("pass budget >= ")[1].split()[0])
    # The least it names works, and the model still trains eagerly.
    loss, grads = eager_step(model, x, target)
    assert torch.isfinite(loss)
    model.zero_grad(set_to_none=True)
    torch._dynamo.reset()
    ok = rt.compile(model, least, backend="eager")
    ok(x, target).backward()
    assert rt.reports(ok)[-1].predicted_peak <= least


def test_export_writes_a_graph_the_cli_reads(tmp_path):
    model, x, target = make("resnet18")
    path = tmp_path / "resnet18.json"
    graph = rt.export(model, (x, target), path)
    assert remat.Graph.load(str(path)).names == graph.names
    assert all(p.grad is None for p in model.parameters())
    s = remat.solve(graph)
    assert s.status in ("optimal", "feasible") and s.peak >= s.peak_lower_bound


def test_options_are_checked():
    with pytest.raises(ValueError, match="budget must be a positive int"):
        rt.Partitioner(budget=-5)
    with pytest.raises(ValueError, match="unknown method 'fast'"):
        rt.Partitioner(methods=("fast",))
    with pytest.raises(ValueError, match="unknown backend 'tvm'"):
        rt.compile(nn.Linear(2, 2), backend="tvm")
    with pytest.raises(ValueError, match="not a model from remat.torch.compile"):
        rt.reports(nn.Linear(2, 2))


def test_the_results_driver_runs_on_the_cpu(tmp_path):
    import os
    import subprocess
    import sys
    from pathlib import Path

    root = Path(__file__).resolve().parents[2]
    package = Path(os.environ.get("REMAT_BUILD_DIR", root / "build")) / "python"
    out = subprocess.run(
        [sys.executable, str(root / "bench" / "torch-results"), "--cpu", "--models", "resnet18", "--variants",
         "eager,checkpoint,remat-least-eager", "--steps", "1", "--warmup", "0", "--package", str(package),
         "--json", str(tmp_path / "r.json"), "--md", str(tmp_path / "r.md")],
        capture_output=True, text=True, timeout=600)
    assert out.returncode == 0, out.stderr[-3000:]
    import json

    rows = json.loads((tmp_path / "r.json").read_text())["models"]["resnet18"]
    assert {"eager", "checkpoint", "remat-least-eager"} <= set(rows)
    assert all("error" not in rows[v] for v in ("eager", "checkpoint", "remat-least-eager")), rows
    ours = rows["remat-least-eager"]
    assert abs(ours["predicted_bytes"] - ours["peak_bytes"]) <= 0.02 * ours["predicted_bytes"]
    page = (tmp_path / "r.md").read_text()
    assert "| remat-least-eager |" in page and (tmp_path / "results-pytorch" / "resnet18.svg").exists()


def test_inductor_compiles_the_partitioned_programs():
    torch._dynamo.reset()
    model, x, target = make("resnet18")
    reference = copy.deepcopy(model)
    ref_loss, ref_grads = eager_step(reference, x, target)
    compiled = rt.compile(model)  # Inductor, g++ on the CPU
    loss = compiled(x, target)
    loss.backward()
    (report,) = rt.reports(compiled)
    assert report.recomputed, "the plan recomputes nothing: the test would prove nothing"
    # Inductor fuses and reorders reductions: its numbers are its own, close to eager's.
    assert torch.allclose(loss, ref_loss, rtol=1e-5, atol=0)
    for n, p in model.named_parameters():
        scale = ref_grads[n].abs().max().clamp_min(1e-30)
        assert (p.grad - ref_grads[n]).abs().max() / scale <= 1e-3, n
