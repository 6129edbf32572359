"""Synthetic training traffic from model profiles (ResNet-50, VGG-16, BERT-base, GPT-2 small).

A profile lists a model's parameter tensors in model order with a typical gradient scale per
layer. Gradients are drawn from a Laplace distribution with that scale (heavy-tailed like real
gradients: most values small, a few large), so the magnitude classes and the critical share behave
as they would on real training traffic. ``scale`` shrinks every layer proportionally for quick runs.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from host_agent.errors import UserError

PROFILE_DIR = Path(__file__).parent / "profiles"


@dataclass(frozen=True)
class LayerProfile:
    name: str
    shape: tuple[int, ...]
    params: int
    grad_scale: float


@dataclass(frozen=True)
class ModelProfile:
    name: str
    layers: tuple[LayerProfile, ...]

    @property
    def total_params(self) -> int:
        return sum(x.params for x in self.layers)


def available_profiles() -> list[str]:
    return sorted(p.stem for p in PROFILE_DIR.glob("*.json"))


def load_profile(name_or_path: str) -> ModelProfile:
    """A shipped profile by name (``resnet50``...) or a JSON file of the same shape."""
    path = Path(name_or_path)
    if not path.suffix:
        path = PROFILE_DIR / f"{name_or_path}.json"
    if not path.exists():
        raise UserError(f"profile {name_or_path!r} not found (shipped: {', '.join(available_profiles())})")
    try:
        doc = json.loads(path.read_text())
        layers = tuple(LayerProfile(x["name"], tuple(x["shape"]), int(x["params"]), float(x["grad_scale"]))
                       for x in doc["layers"])
    except (ValueError, KeyError, TypeError) as exc:
        raise UserError(f"{path}: not a model profile ({exc})") from None
    return ModelProfile(doc.get("name", path.stem), layers)


def layer_sizes(profile: ModelProfile, scale: float = 1.0) -> list[int]:
    """Element count per layer, each scaled by ``scale`` (at least 1)."""
    return [max(1, int(round(x.params * scale))) for x in profile.layers]


def synthetic_gradients(profile: ModelProfile, rng: np.random.Generator, scale: float = 1.0) -> list[np.ndarray]:
    """One iteration's gradients: Laplace(0, grad_scale) float32 per layer."""
    return [rng.laplace(0.0, x.grad_scale, n).astype(np.float32)
            for x, n in zip(profile.layers, layer_sizes(profile, scale), strict=True)]
