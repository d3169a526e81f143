#!/usr/bin/env python3
"""Train a torchvision ResNet a few steps with remat's plan, beside eager PyTorch.

    python3 examples/torch_resnet.py                      # ResNet-18, batch 16, 128x128, CPU
    python3 examples/torch_resnet.py --budget 150MiB      # least recomputation within 150 MiB
    python3 examples/torch_resnet.py --model resnet50 --device cuda

Each step runs twice from the same weights: eager autograd, and
remat.torch.compile(..., backend="eager") (remat's partition, its programs run
as they are). It prints the loss of both, the largest relative difference of
any parameter gradient, remat's predicted peak and the measured one (live
tensor bytes on the CPU, torch.cuda.max_memory_allocated on a GPU), next to
eager's. It exits 1 when a gradient differs from eager's by more than 1e-6
(relative) or the measured peak from the predicted one by more than 2%.
"""

import argparse
import copy
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
# examples/remat (the CLI's sources) would read as a namespace package named remat.
sys.path = [p for p in sys.path if Path(p or ".").resolve() != Path(__file__).resolve().parent]
try:
    import remat
except ImportError:  # run from a checkout: the package as the build lays it out
    for build in ("build", "build-release"):
        if (ROOT / build / "python" / "remat").is_dir():
            sys.path.insert(0, str(ROOT / build / "python"))
            break
    try:
        import remat
    except ImportError:
        sys.exit("remat's Python package is not built: run tools/run-tests (or meson compile -C build), "
                 "or pip install --no-build-isolation .")
try:
    import torch
    import torchvision
except ImportError:
    print("this example needs PyTorch and torchvision: pip install torch torchvision", file=sys.stderr)
    sys.exit(77)  # a skip for the test runner

import remat.torch as rt  # noqa: E402
from remat.torch._measure import measure_peak  # noqa: E402


class WithLoss(torch.nn.Module):
    def __init__(self, model):
        super().__init__()
        self.model = model

    def forward(self, x, labels):
        return torch.nn.functional.cross_entropy(self.model(x), labels)


def parse_bytes(text):
    units = {"B": 1, "KiB": 2**10, "MiB": 2**20, "GiB": 2**30}
    for unit, scale in sorted(units.items(), key=lambda u: -len(u[0])):
        if text.endswith(unit):
            return int(float(text[: -len(unit)]) * scale)
    return int(text)


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--model", default="resnet18", choices=["resnet18", "resnet34", "resnet50", "resnet101"])
    parser.add_argument("--batch", type=int, default=16)
    parser.add_argument("--image", type=int, default=128)
    parser.add_argument("--steps", type=int, default=3)
    parser.add_argument("--budget", type=parse_bytes, default=None, help="bytes for the whole step, e.g. 150MiB")
    parser.add_argument("--device", default="cpu")
    args = parser.parse_args()
    device = torch.device(args.device)
    mib = lambda b: f"{b / 2**20:,.1f} MiB"  # noqa: E731

    torch.manual_seed(0)
    plain = WithLoss(getattr(torchvision.models, args.model)(num_classes=10)).to(device)
    ours = copy.deepcopy(plain)
    compiled = rt.compile(ours, args.budget, backend="eager")
    opt_plain = torch.optim.SGD(plain.parameters(), lr=0.01)
    opt_ours = torch.optim.SGD(ours.parameters(), lr=0.01)

    def measured(model, step, compiled_model=None):
        if device.type == "cuda":
            torch.cuda.synchronize()
            torch.cuda.reset_peak_memory_stats()
            step()
            torch.cuda.synchronize()
            return torch.cuda.max_memory_allocated()
        resident = [*model.parameters(), *model.buffers(), x, labels]
        return measure_peak(step, resident, compiled=compiled_model)

    failed = False
    for i in range(args.steps):
        g = torch.Generator().manual_seed(i)
        x = torch.randn(args.batch, 3, args.image, args.image, generator=g).to(device)
        labels = torch.randint(0, 10, (args.batch,), generator=g).to(device)
        opt_plain.zero_grad(set_to_none=True)
        opt_ours.zero_grad(set_to_none=True)
        losses = {}

        def plain_step():
            losses["eager"] = plain(x, labels)
            losses["eager"].backward()

        def our_step():
            losses["remat"] = compiled(x, labels)
            losses["remat"].backward()

        if i == 0:  # the first call traces and plans; measure from the second step on
            our_step()
            opt_ours.zero_grad(set_to_none=True)
        eager_peak = measured(plain, plain_step)
        our_peak = measured(ours, our_step, compiled)
        worst = max(((a.grad - b.grad).abs().max() / b.grad.abs().max().clamp_min(1e-30)).item()
                    for a, b in zip(ours.parameters(), plain.parameters()))
        report = rt.reports(compiled)[-1]
        print(f"step {i}: loss eager {losses['eager'].item():.6f} remat {losses['remat'].item():.6f}; "
              f"largest gradient difference {worst:.1e} (relative)")
        print(f"  peak: eager {mib(eager_peak)}; remat predicted {mib(report.predicted_peak)}, measured "
              f"{mib(our_peak)} ({our_peak / report.predicted_peak - 1:+.2%}); "
              f"recomputes {len(report.recomputed)} of {len(report.graph)} values, keeps {mib(report.saved_bytes)}")
        opt_plain.step()
        opt_ours.step()
        if worst > 1e-6 or abs(our_peak - report.predicted_peak) > 0.02 * report.predicted_peak:
            failed = True
    if failed:
        print("remat's step disagrees with eager's (gradients beyond 1e-6) or with its prediction (beyond 2%)")
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
