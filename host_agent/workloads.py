"""Workloads the CLI processes run: the digits MLP (real learning) or a model profile (synthetic).

A workload tells every process of a job the same tensor shapes, how rank r makes its gradients
for iteration i, and how the server turns the gradient sum into parameters, so separate
``dlcp-agent`` processes (e.g. in Mininet hosts) agree without talking about it.

Names: ``digits`` (64-64-10 MLP, 4.9k parameters, the accuracy check), ``digits-wide`` (64-400-400-10,
190k parameters: about 530 packets per worker per iteration, real gradients, real accuracy), or a
model profile (``resnet50`` ...). Profile gradients are not drawn from a formula: each layer is a
contiguous slice of measured gradients (a pool of real backpropagation output: the digits-wide MLP's
and a small torch CNN's), rescaled to the profile's per-layer scale, so magnitude classes see real
gradient structure.
"""

from __future__ import annotations

import os
from collections.abc import Callable
from pathlib import Path

import numpy as np

from host_agent.errors import UserError
from host_agent.traffic import layer_sizes, load_profile


class Workload:
    shapes: list[tuple[int, ...]]

    def gradients(self, rank: int, iteration: int, params: list[np.ndarray]) -> list[np.ndarray]:
        raise NotImplementedError

    def initial_params(self) -> list[np.ndarray]:
        return [np.zeros(s, np.float32) for s in self.shapes]

    def server_update(self, n_workers: int) -> Callable[[int, np.ndarray], np.ndarray]:
        return lambda tid, s: s

    def evaluate(self, params: list[np.ndarray]) -> dict:
        return {}


def real_gradient_pool(seed: int = 0, batches: int = 4) -> np.ndarray:
    """Measured gradients, each tensor divided by its mean |g|, concatenated: the digits-wide MLP's
    (NumPy) and, when torch is installed, a small torch CNN's on the same digits (conv kernels have a
    structure an MLP's do not). The torch part is computed once and cached (torch starts slowly)."""
    from host_agent.training import MLP, load_digits_split
    xtr, ytr, _, _ = load_digits_split(seed)
    mlp = MLP(hidden=WIDE_HIDDEN, seed=seed)
    parts = []
    for b in range(batches):
        grads, _ = MLP.gradients(mlp.params, xtr[b * 32:(b + 1) * 32], ytr[b * 32:(b + 1) * 32])
        parts += [_unit(g) for g in grads]
    parts += [_unit(g) for g in torch_gradients(seed, xtr, ytr)]
    return np.concatenate(parts).astype(np.float32)


def _unit(g: np.ndarray) -> np.ndarray:
    flat = np.asarray(g, np.float32).reshape(-1)
    return flat / max(float(np.abs(flat).mean()), 1e-12)


def torch_gradients_cache(seed: int) -> Path:
    """Where ``torch_gradients`` keeps seed ``seed``'s gradients ($XDG_CACHE_HOME or ~/.cache, dlcp/)."""
    return Path(os.environ.get("XDG_CACHE_HOME", Path.home() / ".cache")) / "dlcp" / f"torch-grads-{seed}.npz"


def warm_gradient_cache(seed: int) -> None:
    """Compute and cache seed ``seed``'s torch gradients now, as the first ``ProfileWorkload`` of that seed would
    in every agent: a runner calls it before it starts the agents, so that no agent's start-up pays the torch
    import and the CNN (seconds on a busy machine: in a Mininet study the ring's four agents then began their
    first iteration after the PS job had ended, in the first run of every new seed)."""
    if not torch_gradients_cache(seed).is_file():
        from host_agent.training import load_digits_split
        xtr, ytr, _, _ = load_digits_split(seed)
        torch_gradients(seed, xtr, ytr)


def torch_gradients(seed: int, x: np.ndarray, y: np.ndarray, batches: int = 2) -> list[np.ndarray]:
    """Per-parameter gradients of a small CNN (2 conv + 2 linear layers) trained on digits with torch."""
    import tempfile
    cache = torch_gradients_cache(seed)
    try:
        with np.load(cache) as z:
            return [z[k] for k in sorted(z.files, key=lambda k: int(k.split("_")[1]))]
    except (OSError, ValueError, KeyError):
        pass
    try:
        import torch
        from torch import nn
    except ImportError:
        return []
    torch.manual_seed(seed)
    net = nn.Sequential(nn.Conv2d(1, 16, 3, padding=1), nn.ReLU(), nn.Conv2d(16, 32, 3, padding=1), nn.ReLU(),
                        nn.MaxPool2d(2), nn.Flatten(), nn.Linear(32 * 16, 64), nn.ReLU(), nn.Linear(64, 10))
    grads: list[np.ndarray] = []
    for b in range(batches):
        xb = torch.tensor(x[b * 32:(b + 1) * 32].reshape(-1, 1, 8, 8))
        yb = torch.tensor(y[b * 32:(b + 1) * 32])
        net.zero_grad()
        nn.functional.cross_entropy(net(xb), yb).backward()
        grads += [p.grad.detach().numpy().astype(np.float32).reshape(-1).copy() for p in net.parameters()]
    try:
        cache.parent.mkdir(parents=True, exist_ok=True)
        with tempfile.NamedTemporaryFile(dir=cache.parent, suffix=".npz", delete=False) as tmp:
            np.savez(tmp, *grads)
        os.replace(tmp.name, cache)                 # atomic: concurrent agents never read half a file
    except OSError:
        pass
    return grads


class ProfileWorkload(Workload):
    """Gradients shaped like a model profile (scaled by ``scale``), values from real gradients."""

    def __init__(self, name: str, scale: float = 1.0, seed: int = 0) -> None:
        if not 0 < scale <= 1:
            raise UserError(f"--scale {scale}: must be in (0, 1]")
        self.profile = load_profile(name)
        self.sizes = layer_sizes(self.profile, scale)
        self.shapes = [(n,) for n in self.sizes]
        self.seed = seed
        self.pool = real_gradient_pool(seed)

    def gradients(self, rank: int, iteration: int, params: list[np.ndarray]) -> list[np.ndarray]:
        rng = np.random.default_rng([self.seed, rank, iteration])
        out = []
        for x, n in zip(self.profile.layers, self.sizes, strict=True):
            reps = -(-n // self.pool.size)
            src = np.tile(self.pool, reps) if reps > 1 else self.pool
            start = int(rng.integers(0, src.size - n + 1))
            out.append(src[start:start + n] * np.float32(x.grad_scale))
        return out


class DigitsWorkload(Workload):
    """The digits MLP: rank r trains on shard r of the training split, batch ``batch``."""

    def __init__(self, n_workers: int, batch: int = 32, lr: float = 0.5, seed: int = 0,
                 hidden: int | tuple[int, ...] = 64) -> None:
        from host_agent.training import MLP, load_digits_split
        self.mlp = MLP(hidden=hidden, seed=seed)
        self.xtr, self.ytr, self.xte, self.yte = load_digits_split(seed)
        self.shapes = [p.shape for p in self.mlp.params]
        self.shards = np.array_split(np.random.default_rng(seed + 1).permutation(len(self.ytr)), n_workers)
        self.batch, self.lr, self.seed = batch, lr, seed

    def initial_params(self) -> list[np.ndarray]:
        return [p.copy() for p in self.mlp.params]

    def gradients(self, rank: int, iteration: int, params: list[np.ndarray]) -> list[np.ndarray]:
        from host_agent.training import MLP
        shard = self.shards[rank]
        per_epoch = max(1, len(shard) // self.batch)
        order = np.random.default_rng([self.seed, rank, iteration // per_epoch]).permutation(shard)
        k = iteration % per_epoch
        b = order[k * self.batch:(k + 1) * self.batch]
        grads, _ = MLP.gradients(params, self.xtr[b], self.ytr[b])
        return grads

    def server_update(self, n_workers: int) -> Callable[[int, np.ndarray], np.ndarray]:
        params = self.initial_params()

        def update(tid: int, grad_sum: np.ndarray) -> np.ndarray:
            params[tid] -= self.lr * grad_sum / n_workers
            return params[tid]
        return update

    def evaluate(self, params: list[np.ndarray]) -> dict:
        from host_agent.training import MLP
        return {"accuracy": MLP.accuracy(params, self.xte, self.yte)}


WIDE_HIDDEN = (400, 400)


def make_workload(name: str, n_workers: int, scale: float, seed: int) -> Workload:
    if name == "digits":
        return DigitsWorkload(n_workers, seed=seed)
    if name == "digits-wide":
        return DigitsWorkload(n_workers, lr=0.1, seed=seed, hidden=WIDE_HIDDEN)
    return ProfileWorkload(name, scale, seed)
