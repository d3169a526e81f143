#!/usr/bin/env python3
"""Regular training of a seed-table model in PyTorch: the baseline next to remat's CUDA runtime.

One training step is what bench_cuda's is: forward, softmax cross-entropy
(plus 0.4 x the auxiliary classifier's for Inception v3 and networks with an
auxiliary head), backward, SGD (lr 0.01, no momentum), on random non-zero
inputs and random labels, at the model's batch and input size. It reports the
peak of torch.cuda.max_memory_allocated() over the timed steps and the median
of their device times (CUDA events), after warm-up steps.

The model is torchvision's (--model alexnet, vgg11..19, resnet18..152,
densenet121..201, inception-v3) or, with --graph, a remat JSON graph
(`remat zoo export NAME`) run op by op by GraphNet below: that is how the
DARTS-code-base NAS networks (nasnet-cifar10, amoebanet-cifar10,
darts-cifar10), which torchvision lacks, are measured. PyTorch's defaults are
kept: cuDNN heuristics (cudnn.benchmark off), TF32 allowed for convolutions,
not for matrix products.

--compile runs the same step with the model's forward and loss compiled by
torch.compile (Inductor; the optimizer stays eager), and --memory-budget B
sets torch._functorch.config.activation_memory_budget to B for it (1.0 is
PyTorch's default: save what the partitioner would; lower budgets make it
recompute). Compilation happens in the warm-up steps, of which there are then
at least two.

U-Net and PSPNet, which torchvision lacks too, are measured the same way;
their PyTorch modules below (UNet, PSPNet) are what --check holds the zoo's
graphs to.

--check builds both forms of every torchvision model, U-Net and PSPNet on the
CPU at a small size, copies the modules' parameters into GraphNet by module
path and checks that parameter counts and losses agree (GraphNet runs remat's
graphs as PyTorch runs the modules they were built from), and that GraphNet
owns exactly the parameters of each NAS graph and trains a step. It exits 77
without PyTorch.

  python3 bench/pytorch_baseline.py --model resnet50 --batch 64 --image 224 224 --json out.json
  python3 bench/pytorch_baseline.py --graph darts.json --json out.json
  python3 bench/pytorch_baseline.py --model resnet50 --compile --memory-budget 0.5 --json out.json
  python3 bench/pytorch_baseline.py --check --remat build/examples/remat
"""
import argparse
import json
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

try:
    import torch
    import torch.nn.functional as F
    import torchvision
except ImportError as error:  # the device machines have PyTorch; CI and most build hosts do not
    print(f"pytorch_baseline.py needs PyTorch and torchvision ({error}); "
          "install them (e.g. pip install torch torchvision) or run it where they are", file=sys.stderr)
    sys.exit(77 if "--check" in sys.argv else 1)  # 77: test runners report a skip

TORCHVISION = {
    "alexnet": "alexnet", "vgg11": "vgg11", "vgg13": "vgg13", "vgg16": "vgg16", "vgg19": "vgg19",
    "resnet18": "resnet18", "resnet34": "resnet34", "resnet50": "resnet50", "resnet101": "resnet101",
    "resnet152": "resnet152", "densenet121": "densenet121", "densenet161": "densenet161",
    "densenet169": "densenet169", "densenet201": "densenet201", "inception-v3": "inception_v3",
    "googlenet": "googlenet",
}
SEGMENTATION = {"unet": 2, "pspnet": 19}  # the zoo's segmentation networks and their classes
NAS_MODELS = ["nasnet-cifar10", "amoebanet-cifar10", "darts-cifar10"]
AUXILIARY_WEIGHT = 0.4


class UNetStep(torch.nn.Module):
    """Two valid 3x3 convolutions with bias, each followed by a ReLU."""

    def __init__(self, cin, cout):
        super().__init__()
        self.conv1 = torch.nn.Conv2d(cin, cout, 3)
        self.conv2 = torch.nn.Conv2d(cout, cout, 3)

    def forward(self, x):
        return F.relu(self.conv2(F.relu(self.conv1(x))))


class UNet(torch.nn.Module):
    """Ronneberger et al.'s U-Net (2015, Fig. 1), as the zoo builds it (models.hpp)."""

    def __init__(self, classes=2):
        super().__init__()
        widths = [64, 128, 256, 512]
        for level, (cin, cout) in enumerate(zip([1] + widths[:-1], widths), 1):
            setattr(self, f"down{level}", UNetStep(cin, cout))
        self.bottom = UNetStep(512, 1024)
        for level, width in enumerate(widths, 1):
            up = UNetStep(2 * width, width)
            up.upconv = torch.nn.ConvTranspose2d(2 * width, width, 2, 2)
            setattr(self, f"up{level}", up)
        self.head = torch.nn.Conv2d(64, classes, 1)

    def forward(self, x, labels):
        skips = []
        for level in range(1, 5):
            x = getattr(self, f"down{level}")(x)
            skips.append(x)
            x = F.max_pool2d(x, 2)
        x = F.dropout(self.bottom(x), 0.5, training=self.training)
        for level in range(4, 0, -1):
            up = getattr(self, f"up{level}")
            x = up.upconv(x)
            skip = skips[level - 1]
            top, left = (skip.shape[2] - x.shape[2]) // 2, (skip.shape[3] - x.shape[3]) // 2
            x = up(torch.cat([skip[:, :, top:top + x.shape[2], left:left + x.shape[3]], x], 1))
        return F.cross_entropy(self.head(x), labels)


class PSPNet(torch.nn.Module):
    """PSPNet (Zhao et al., 2017) as hszhao/semseg builds it, on torchvision's
    dilated ResNet-101, with the zoo's two changes (models.hpp): element-wise
    dropout and a biased convolution without batch norm in the 1x1 bin."""

    def __init__(self, classes=19):
        super().__init__()
        bn = torch.nn.BatchNorm2d
        self.backbone = torchvision.models.resnet101(weights=None, replace_stride_with_dilation=[False, True, True])
        self.backbone.fc = torch.nn.Identity()  # the classifier is not part of PSPNet
        self.ppm = torch.nn.Module()
        self.ppm.features = torch.nn.ModuleList(
            torch.nn.Sequential(torch.nn.AdaptiveAvgPool2d(b), torch.nn.Conv2d(2048, 512, 1, bias=b == 1),
                                torch.nn.Identity() if b == 1 else bn(512), torch.nn.ReLU())
            for b in (1, 2, 3, 6))
        self.cls = torch.nn.Sequential(torch.nn.Conv2d(4096, 512, 3, padding=1, bias=False), bn(512), torch.nn.ReLU(),
                                       torch.nn.Dropout(0.1), torch.nn.Conv2d(512, classes, 1))
        self.aux = torch.nn.Sequential(torch.nn.Conv2d(1024, 256, 3, padding=1, bias=False), bn(256), torch.nn.ReLU(),
                                       torch.nn.Dropout(0.1), torch.nn.Conv2d(256, classes, 1))

    def forward(self, x, labels):
        size, r = x.shape[2:], self.backbone
        x = r.maxpool(r.relu(r.bn1(r.conv1(x))))
        layer3 = r.layer3(r.layer2(r.layer1(x)))
        x = r.layer4(layer3)
        pyramid = [x] + [F.interpolate(stage(x), x.shape[2:], mode="bilinear", align_corners=True)
                         for stage in self.ppm.features]
        x = F.interpolate(self.cls(torch.cat(pyramid, 1)), size, mode="bilinear", align_corners=True)
        aux = F.interpolate(self.aux(layer3), size, mode="bilinear", align_corners=True)
        return F.cross_entropy(x, labels) + AUXILIARY_WEIGHT * F.cross_entropy(aux, labels)


def torchvision_model(name, classes):
    if name == "unet":
        return UNet(classes)
    if name == "pspnet":
        return PSPNet(classes)
    builder = getattr(torchvision.models, TORCHVISION[name])
    if name in ("inception-v3", "googlenet"):
        return builder(weights=None, aux_logits=True, init_weights=True, num_classes=classes)
    return builder(weights=None, num_classes=classes)


class GraphNet(torch.nn.Module):
    """A remat JSON graph as a PyTorch module: one submodule per node with
    parameters (named by the node, which is the PyTorch module path in zoo
    graphs), functional ops for the rest. forward(inputs) returns
    sum(loss_weight x loss) and drops every value after its last use, as
    eager PyTorch code does."""

    def __init__(self, graph):
        super().__init__()
        self.nodes = graph["nodes"]
        self.by_name = {n["name"]: n for n in self.nodes}
        self.layers = torch.nn.ModuleDict()
        self.key = {}
        self.uses = {}
        for node in self.nodes:
            for operand in node.get("inputs", []):
                self.uses[operand] = self.uses.get(operand, 0) + 1
            layer = self.layer_of(node)
            if layer is not None:
                self.key[node["name"]] = f"n{len(self.key)}"  # ModuleDict keys may not hold dots
                self.layers[self.key[node["name"]]] = layer

    def shape(self, name):
        return self.by_name[name]["attrs"]["shape"]

    def layer_of(self, node):
        a, op = node.get("attrs", {}), node["op"]
        if op == "conv2d":
            return torch.nn.Conv2d(self.shape(node["inputs"][0])[1], a["out_channels"], tuple(a["kernel"]),
                                   tuple(a["stride"]), tuple(a["padding"]), tuple(a.get("dilation", [1, 1])),
                                   a.get("groups", 1), bool(a.get("bias", 0)))
        if op == "conv_transpose2d":
            return torch.nn.ConvTranspose2d(self.shape(node["inputs"][0])[1], a["out_channels"], tuple(a["kernel"]),
                                            tuple(a["stride"]), tuple(a["padding"]),
                                            tuple(a.get("output_padding", [0, 0])), bias=bool(a.get("bias", 0)))
        if op == "batch_norm":
            return torch.nn.BatchNorm2d(self.shape(node["inputs"][0])[1], a.get("eps", 1e-5), a.get("momentum", 0.1))
        if op == "linear":
            return torch.nn.Linear(self.shape(node["inputs"][0])[1], a["out_features"], bool(a.get("bias", 1)))
        return None

    def module_of(self, name):
        return self.layers[self.key[name]] if name in self.key else None

    def forward(self, inputs):
        values, left, total = dict(inputs), dict(self.uses), 0
        for node in self.nodes:
            name, op, a = node["name"], node["op"], node.get("attrs", {})
            if op == "input":
                continue
            xs = [values[i] for i in node["inputs"]]
            x = xs[0]
            if name in self.key:
                y = self.module_of(name)(x)
            elif op == "relu":
                y = F.relu(x)
            elif op == "sigmoid":
                y = torch.sigmoid(x)
            elif op == "max_pool":
                y = F.max_pool2d(x, a["kernel"], a.get("stride", a["kernel"]), a.get("padding", [0, 0]),
                                 a.get("dilation", [1, 1]), bool(a.get("ceil_mode", 0)))
            elif op == "avg_pool":
                y = F.avg_pool2d(x, a["kernel"], a.get("stride", a["kernel"]), a.get("padding", [0, 0]),
                                 bool(a.get("ceil_mode", 0)), bool(a.get("count_include_pad", 1)))
            elif op == "adaptive_avg_pool":
                y = F.adaptive_avg_pool2d(x, a["output_size"])
            elif op == "upsample_bilinear":
                y = F.interpolate(x, a["size"], mode="bilinear", align_corners=bool(a.get("align_corners", 0)))
            elif op == "add":
                y = xs[0]
                for other in xs[1:]:
                    y = y + other
            elif op == "concat":
                y = torch.cat(xs, dim=a.get("axis", 1))
            elif op == "dropout":
                y = F.dropout(x, a.get("p", 0.5), training=self.training)
            elif op == "flatten":
                y = torch.flatten(x, a.get("start_dim", 1))
            elif op == "slice":
                y = x[tuple(slice(b, e) for b, e in zip(a["begin"], a["end"]))]
            elif op == "softmax_cross_entropy":
                y = F.cross_entropy(x, xs[1])
                total = total + a.get("loss_weight", 1.0) * y
            elif op == "mse_loss":
                y = F.mse_loss(x, xs[1])
                total = total + a.get("loss_weight", 1.0) * y
            else:
                raise SystemExit(f"node '{name}': op '{op}' is not supported by GraphNet")
            values[name] = y
            for operand in node["inputs"]:
                left[operand] -= 1
                if left[operand] == 0 and operand not in inputs:
                    del values[operand]
        return total


def graph_inputs(graph):
    """The graph's float input shapes and label input shapes, by name, and its class count."""
    floats, labels, classes = {}, {}, 1000
    shapes = {n["name"]: n.get("attrs", {}).get("shape") for n in graph["nodes"]}
    for node in graph["nodes"]:
        if node["op"] == "input":
            (labels if node["attrs"]["dtype"] == "i64" else floats)[node["name"]] = node["attrs"]["shape"]
        if node["op"] == "softmax_cross_entropy":
            classes = shapes[node["inputs"][0]][1]
    return floats, labels, classes


def loss_of_torchvision(model, x, labels):
    if isinstance(model, (UNet, PSPNet)):
        return model(x, labels)
    out = model(x)
    if isinstance(out, torchvision.models.InceptionOutputs):
        return F.cross_entropy(out.logits, labels) + AUXILIARY_WEIGHT * F.cross_entropy(out.aux_logits, labels)
    if isinstance(out, torchvision.models.GoogLeNetOutputs):  # Szegedy et al. weigh both auxiliary losses 0.3
        return (F.cross_entropy(out.logits, labels) + 0.3 * F.cross_entropy(out.aux_logits2, labels) +
                0.3 * F.cross_entropy(out.aux_logits1, labels))
    return F.cross_entropy(out, labels)


def measure(args):
    device = torch.device("cuda")
    torch.backends.cudnn.benchmark = False
    torch.manual_seed(1)
    if args.graph:
        graph = json.loads(Path(args.graph).read_text())
        floats, label_shapes, classes = graph_inputs(graph)
        model = GraphNet(graph).to(device).train()
        inputs = {n: torch.rand(s, device=device) * 2 - 1 for n, s in floats.items()}
        inputs.update({n: torch.randint(0, classes, s, device=device) for n, s in label_shapes.items()})
        name = graph.get("name", Path(args.graph).stem)
        batch = next(iter(floats.values()))[0]
        image = next(iter(floats.values()))[2:]
        step_loss = lambda: model(inputs)
    else:
        classes = args.classes
        model = torchvision_model(args.model, classes).to(device).train()
        x = torch.rand(args.batch, 3, *args.image, device=device) * 2 - 1
        labels = torch.randint(0, classes, (args.batch,), device=device)
        name, batch, image = args.model, args.batch, args.image
        step_loss = lambda: loss_of_torchvision(model, x, labels)
    optimizer = torch.optim.SGD(model.parameters(), lr=0.01)
    warmup = args.warmup
    if args.compile:
        import torch._functorch.config as functorch_config
        if args.memory_budget is not None:
            functorch_config.activation_memory_budget = args.memory_budget
        step_loss = torch.compile(step_loss)
        warmup = max(warmup, 2)  # the first call compiles; the second runs what was compiled

    def step():
        optimizer.zero_grad(set_to_none=True)
        loss = step_loss()
        loss.backward()
        optimizer.step()
        return loss

    for _ in range(warmup):
        step()
    torch.cuda.synchronize()
    resident = torch.cuda.memory_allocated()
    torch.cuda.reset_peak_memory_stats()
    times, loss = [], None
    for _ in range(args.steps):
        start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        start.record()
        loss = step()
        end.record()
        end.synchronize()
        times.append(start.elapsed_time(end))
    parameters = sum(p.numel() for p in model.parameters())
    return {
        "model": name,
        "batch": batch,
        "image": list(image),
        "parameters": parameters,
        "peak_bytes": torch.cuda.max_memory_allocated(),
        "resident_bytes": resident,
        "median_ms": statistics.median(times),
        "mean_ms": statistics.fmean(times),
        "times_ms": times,
        "steps": args.steps,
        "warmup": warmup,
        "compiled": args.compile,
        "activation_memory_budget": functorch_config.activation_memory_budget if args.compile else None,
        "loss": float(loss),
        "device": torch.cuda.get_device_name(0),
        "torch": torch.__version__,
        "torchvision": torchvision.__version__,
        "cuda": torch.version.cuda,
        "cudnn": torch.backends.cudnn.version(),
        "cudnn_allow_tf32": torch.backends.cudnn.allow_tf32,
        "matmul_allow_tf32": torch.backends.cuda.matmul.allow_tf32,
    }


def check(remat):
    """torchvision's modules and GraphNet over remat's export agree on the CPU."""
    failures = 0
    with tempfile.TemporaryDirectory() as tmp:
        # The segmentation networks are held to this file's PyTorch modules,
        # with per-pixel labels, at the smallest sizes their crops and pyramid take.
        sizes = {"inception-v3": 299, "unet": 188, "pspnet": 97}  # Inception's auxiliary head needs 17×17 at Mixed_6e
        for name in list(TORCHVISION) + list(SEGMENTATION):
            size = sizes.get(name, 96)
            path = Path(tmp) / f"{name}.json"
            subprocess.run([remat, "zoo", "export", name, "--batch", "2", "--image", str(size), str(size),
                            "-o", str(path)], check=True, stdout=subprocess.DEVNULL)
            graph = json.loads(path.read_text())
            floats, label_shapes, classes = graph_inputs(graph)
            reference = torchvision_model(name, classes).train()
            net = GraphNet(graph).train()
            missing = []
            with torch.no_grad():
                for key, value in list(reference.state_dict().items()):
                    owner, _, field = key.rpartition(".")
                    module = net.module_of(owner)
                    if module is None or field not in module.state_dict():
                        missing.append(key)
                        continue
                    module.state_dict()[field].copy_(value)
            counted = sum(p.numel() for p in net.parameters())
            expected = sum(p.numel() for p in reference.parameters())
            torch.manual_seed(3)
            x = torch.rand(floats["input"]) * 2 - 1
            labels = torch.randint(0, classes, label_shapes["labels"])
            torch.manual_seed(4)
            theirs = float(loss_of_torchvision(reference, x, labels))
            torch.manual_seed(4)
            mine = float(net({"input": x, "labels": labels}))
            agree = not missing and counted == expected and abs(mine - theirs) <= 1e-4 * max(1.0, abs(theirs))
            failures += not agree
            source = "torchvision" if name in TORCHVISION else "PyTorch"
            print(f"{name:13} parameters {counted:>10} ({source:11} {expected:>10})  loss {mine:.6f} "
                  f"({source:11} {theirs:.6f})  {'agree' if agree else 'DIFFER'}"
                  + (f"; not in the graph: {', '.join(missing[:5])}" if missing else ""))
        # The NAS networks have no torchvision form: GraphNet must own the
        # graph's parameters exactly and train a step.
        for name in NAS_MODELS:
            path = Path(tmp) / f"{name}.json"
            subprocess.run([remat, "zoo", "export", name, "--batch", "2", "-o", str(path)], check=True,
                           stdout=subprocess.DEVNULL)
            graph = json.loads(path.read_text())
            net = GraphNet(graph).train()
            floats, label_shapes, classes = graph_inputs(graph)
            inputs = {n: torch.rand(s) * 2 - 1 for n, s in floats.items()}
            inputs.update({n: torch.randint(0, classes, s) for n, s in label_shapes.items()})
            loss = net(inputs)
            loss.backward()
            counted = sum(p.numel() for p in net.parameters())
            expected = sum(n.get("params", 0) for n in graph["nodes"]) // 4
            agree = counted == expected and torch.isfinite(loss).item()
            failures += not agree
            print(f"{name:17} parameters {counted:>10} (graph {expected:>10})  loss {float(loss):.6f}  "
                  f"{'agree' if agree else 'DIFFER'}")
    checked = len(TORCHVISION) + len(SEGMENTATION) + len(NAS_MODELS)
    print(f"{checked - failures} passed, {failures} failed")
    return 1 if failures else 0


def main():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--model", choices=sorted(TORCHVISION), help="a torchvision model")
    p.add_argument("--graph", help="a remat JSON graph (remat zoo export NAME), run by GraphNet")
    p.add_argument("--batch", type=int, default=64)
    p.add_argument("--image", type=int, nargs=2, default=[224, 224], metavar=("H", "W"))
    p.add_argument("--classes", type=int, default=1000)
    p.add_argument("--steps", type=int, default=20, help="timed steps")
    p.add_argument("--warmup", type=int, default=3, help="steps before timing")
    p.add_argument("--json", help="write the result here (standard output otherwise)")
    p.add_argument("--compile", action="store_true", help="compile the forward and loss with torch.compile")
    p.add_argument("--memory-budget", type=float, help="activation_memory_budget for --compile, in (0, 1]")
    p.add_argument("--check", action="store_true", help="check GraphNet against torchvision on the CPU")
    p.add_argument("--remat", default="build/examples/remat", help="the remat CLI, for --check")
    args = p.parse_args()
    if args.check:
        return check(args.remat)
    if bool(args.model) == bool(args.graph):
        p.error("give exactly one of --model and --graph")
    if args.memory_budget is not None and not (args.compile and 0 < args.memory_budget <= 1):
        p.error("--memory-budget takes a value in (0, 1], with --compile")
    if not torch.cuda.is_available():
        sys.exit("pytorch_baseline.py: PyTorch sees no CUDA device")
    result = json.dumps(measure(args), indent=1)
    if args.json:
        Path(args.json).write_text(result + "\n")
    else:
        print(result)
    return 0


if __name__ == "__main__":
    sys.exit(main())
