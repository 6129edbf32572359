"""Workloads the CLI processes run: the digits MLP (real learning) or a model profile (synthetic).

A workload tells every process of a job the same tensor shapes, how rank r makes its gradients
for iteration i, and how the server turns the gradient sum into parameters, so separate
``dlcp-agent`` processes (e.g. in Mininet hosts) agree without talking about it.

Names: ``digits`` (64-64-10 MLP, 4.9k parameters, the accuracy check), ``digits-wide`` (64-400-400-10,
190k parameters: about 530 packets per worker per iteration, real gradients, real accuracy), or a
model profile (``resnet50`` ...). Profile gradients are not drawn from a formula: each layer is a
contiguous slice of the digits-wide model's measured gradients (a pool of real backpropagation
output), rescaled to the profile's per-layer scale, so magnitude classes see real gradient structure.
"""

from __future__ import annotations

from collections.abc import Callable

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
    """Measured gradients of the digits-wide MLP (a few batches, concatenated), divided by their mean |g|."""
    from host_agent.training import MLP, load_digits_split
    xtr, ytr, _, _ = load_digits_split(seed)
    mlp = MLP(hidden=WIDE_HIDDEN, seed=seed)
    parts = []
    for b in range(batches):
        grads, _ = MLP.gradients(mlp.params, xtr[b * 32:(b + 1) * 32], ytr[b * 32:(b + 1) * 32])
        parts += [g.reshape(-1) for g in grads]
    pool = np.concatenate(parts)
    return (pool / max(float(np.abs(pool).mean()), 1e-12)).astype(np.float32)


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
