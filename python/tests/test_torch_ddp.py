"""remat.torch under DistributedDataParallel: two CPU processes (gloo).

The pytorch-checkpoint seed's points: with recomputation, batch-norm running
statistics are updated once per step (they equal the plain run's), and
recomputation adds no communication (the same number of all-reduce calls per
step). Loss and gradients equal the plain DDP run's.
"""

import os
import socket

import pytest

torch = pytest.importorskip("torch", reason="PyTorch is not installed (pip install torch)")
import torch.distributed as dist  # noqa: E402
import torch.multiprocessing as mp  # noqa: E402

nn = torch.nn
STEPS = 3


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.body = nn.Sequential(
            nn.Conv2d(3, 16, 3, padding=1), nn.BatchNorm2d(16), nn.ReLU(),
            nn.Conv2d(16, 16, 3, padding=1), nn.BatchNorm2d(16), nn.ReLU(),
            nn.Conv2d(16, 32, 3, stride=2, padding=1), nn.BatchNorm2d(32), nn.ReLU(),
            nn.AdaptiveAvgPool2d(1), nn.Flatten(), nn.Linear(32, 10))

    def forward(self, x, target):
        return nn.functional.cross_entropy(self.body(x), target)


def train(rank, use_remat, budget_fraction=None):
    """STEPS SGD steps of DDP on this rank; returns losses, gradients, statistics and all-reduce calls per step."""
    import remat.torch as rt
    from torch.nn.parallel import DistributedDataParallel as DDP

    torch.manual_seed(0)
    model = Net()
    ddp = DDP(model)
    calls = []

    def counting_allreduce(state, bucket):
        calls[-1] += 1
        tensor = bucket.buffer().div_(dist.get_world_size())
        return dist.all_reduce(tensor, async_op=True).get_future().then(lambda f: f.value()[0])

    ddp.register_comm_hook(None, counting_allreduce)
    step = ddp
    if use_remat:
        torch._dynamo.reset()
        step = rt.compile(ddp, backend="eager")
    optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
    losses, grads = [], []
    for i in range(STEPS):
        g = torch.Generator().manual_seed(100 * i + rank)
        x = torch.randn(4, 3, 16, 16, generator=g)
        target = torch.randint(0, 10, (4,), generator=g)
        optimizer.zero_grad(set_to_none=True)
        calls.append(0)
        loss = step(x, target)
        loss.backward()
        losses.append(loss.detach().clone())
        grads.append({n: p.grad.clone() for n, p in model.named_parameters()})
        optimizer.step()
    stats = {n: b.clone() for n, b in model.named_buffers()}
    recomputed = None
    if use_remat:
        recomputed = sum(len(r.recomputed) for r in rt.reports(step))
    return {"losses": losses, "grads": grads, "stats": stats, "calls": calls, "recomputed": recomputed}


def worker(rank, port, out):
    os.environ.update(MASTER_ADDR="127.0.0.1", MASTER_PORT=str(port))
    dist.init_process_group("gloo", rank=rank, world_size=2)
    try:
        plain = train(rank, use_remat=False)
        partitioned = train(rank, use_remat=True)
        torch.save({"plain": plain, "remat": partitioned}, f"{out}.{rank}")
    finally:
        dist.destroy_process_group()


def test_ddp_with_remat_updates_statistics_once_and_adds_no_communication(tmp_path):
    out = str(tmp_path / "result")
    mp.spawn(worker, args=(free_port(), out), nprocs=2, join=True)
    for rank in range(2):
        r = torch.load(f"{out}.{rank}")
        plain, partitioned = r["plain"], r["remat"]
        assert partitioned["recomputed"] > 0, "the plan recomputes nothing: the test would prove nothing"
        assert partitioned["calls"] == plain["calls"] and all(c > 0 for c in plain["calls"])
        for a, b in zip(partitioned["losses"], plain["losses"]):
            assert torch.equal(a, b)
        for step_a, step_b in zip(partitioned["grads"], plain["grads"]):
            for name in step_b:
                assert torch.allclose(step_a[name], step_b[name], rtol=1e-6, atol=0), name
        for name, value in plain["stats"].items():
            assert torch.equal(partitioned["stats"][name], value), f"rank {rank}: {name}"
