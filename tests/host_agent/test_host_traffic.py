"""Model profiles and synthetic traffic: parameter counts of the reference models, gradient shape."""

from __future__ import annotations

import json

import numpy as np
import pytest

from host_agent.errors import UserError
from host_agent.traffic import available_profiles, layer_sizes, load_profile, synthetic_gradients


@pytest.mark.parametrize("name,total,tensors,first,last", [
    ("resnet50", 25_557_032, 161, "conv1.weight", "fc.bias"),
    ("vgg16", 138_357_544, 32, "features.0.weight", "classifier.6.bias"),
    ("bert-base", 109_482_240, 199, "embeddings.word_embeddings.weight", "pooler.dense.bias"),
    ("gpt2-small", 124_439_808, 148, "wte.weight", "ln_f.bias"),
])
def test_profiles_match_reference_parameter_counts(name, total, tensors, first, last):
    p = load_profile(name)
    assert p.total_params == total
    assert len(p.layers) == tensors
    assert (p.layers[0].name, p.layers[-1].name) == (first, last)
    assert all(int(np.prod(x.shape)) == x.params for x in p.layers)


def test_available_profiles():
    assert set(available_profiles()) >= {"resnet50", "vgg16", "bert-base", "gpt2-small"}


def test_synthetic_gradients_are_laplace_with_layer_scale():
    p = load_profile("resnet50")
    g1 = synthetic_gradients(p, np.random.default_rng(3), scale=0.05)
    g2 = synthetic_gradients(p, np.random.default_rng(3), scale=0.05)
    assert [a.size for a in g1] == layer_sizes(p, 0.05)
    assert all(np.array_equal(a, b) for a, b in zip(g1, g2, strict=True))
    big = max(range(len(g1)), key=lambda i: g1[i].size)
    assert np.mean(np.abs(g1[big])) == pytest.approx(p.layers[big].grad_scale, rel=0.05)
    # heavy tail: Laplace kurtosis is 6 (Gaussian 3)
    x = g1[big] / g1[big].std()
    assert np.mean(x ** 4) > 5


def test_profile_errors(tmp_path):
    with pytest.raises(UserError, match="profile 'alexnet' not found"):
        load_profile("alexnet")
    bad = tmp_path / "bad.json"
    bad.write_text(json.dumps({"layers": [{"name": "x"}]}))
    with pytest.raises(UserError, match="bad.json: not a model profile"):
        load_profile(str(bad))
