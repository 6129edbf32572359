"""Workloads the CLI processes run: the digits MLP (real learning) or a model profile (synthetic).

A workload tells every process of a job the same tensor shapes, how rank r makes its gradients
for iteration i, and how the server turns the gradient sum into parameters, so separate
``dlcp-agent`` processes (e.g. in Mininet hosts) agree without talking about it.
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


class ProfileWorkload(Workload):
    """Synthetic Laplace gradients shaped like a model profile, scaled by ``scale``."""

    def __init__(self, name: str, scale: float = 1.0, seed: int = 0) -> None:
        if not 0 < scale <= 1:
            raise UserError(f"--scale {scale}: must be in (0, 1]")
        self.profile = load_profile(name)
        self.sizes = layer_sizes(self.profile, scale)
        self.shapes = [(n,) for n in self.sizes]
        self.seed = seed

    def gradients(self, rank: int, iteration: int, params: list[np.ndarray]) -> list[np.ndarray]:
        rng = np.random.default_rng([self.seed, rank, iteration])
        return [rng.laplace(0.0, x.grad_scale, n).astype(np.float32)
                for x, n in zip(self.profile.layers, self.sizes, strict=True)]


class DigitsWorkload(Workload):
    """The digits MLP: rank r trains on shard r of the training split, batch ``batch``."""

    def __init__(self, n_workers: int, batch: int = 32, lr: float = 0.5, seed: int = 0) -> None:
        from host_agent.training import MLP, load_digits_split
        self.mlp = MLP(seed=seed)
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


def make_workload(name: str, n_workers: int, scale: float, seed: int) -> Workload:
    if name == "digits":
        return DigitsWorkload(n_workers, seed=seed)
    return ProfileWorkload(name, scale, seed)
