"""Regenerates the model profile data files (``python -m host_agent.profiles.build``).

Per-layer parameter tensors follow the reference implementations (torchvision ResNet-50 and
VGG-16, Hugging Face BERT-base and GPT-2 small; weights and biases, no running statistics), in
model order, so front layers come first. ``grad_scale`` is the typical |g| of a layer's gradient
(Laplace scale), modelled as 0.01 / sqrt(fan_in) and halved for biases/norm parameters; it shapes
the synthetic traffic (see host_agent/traffic.py), it is not measured from a training run.
"""

from __future__ import annotations

import json
import math
from pathlib import Path

HERE = Path(__file__).parent


def _layer(name: str, shape: tuple[int, ...], fan_in: int) -> dict:
    n = math.prod(shape)
    scale = 0.01 / math.sqrt(max(fan_in, 1)) * (0.5 if len(shape) == 1 else 1.0)
    return {"name": name, "shape": list(shape), "params": n, "grad_scale": float(f"{scale:.4g}")}


def resnet50() -> list[dict]:
    L = [_layer("conv1.weight", (64, 3, 7, 7), 147), _layer("bn1.weight", (64,), 64), _layer("bn1.bias", (64,), 64)]
    inp = 64
    for stage, (blocks, width) in enumerate(zip((3, 4, 6, 3), (64, 128, 256, 512), strict=True), start=1):
        for b in range(blocks):
            p = f"layer{stage}.{b}"
            L += [_layer(f"{p}.conv1.weight", (width, inp, 1, 1), inp), _layer(f"{p}.bn1.weight", (width,), width),
                  _layer(f"{p}.bn1.bias", (width,), width),
                  _layer(f"{p}.conv2.weight", (width, width, 3, 3), 9 * width),
                  _layer(f"{p}.bn2.weight", (width,), width), _layer(f"{p}.bn2.bias", (width,), width),
                  _layer(f"{p}.conv3.weight", (4 * width, width, 1, 1), width),
                  _layer(f"{p}.bn3.weight", (4 * width,), width), _layer(f"{p}.bn3.bias", (4 * width,), width)]
            if b == 0:
                L += [_layer(f"{p}.downsample.0.weight", (4 * width, inp, 1, 1), inp),
                      _layer(f"{p}.downsample.1.weight", (4 * width,), width),
                      _layer(f"{p}.downsample.1.bias", (4 * width,), width)]
            inp = 4 * width
    return L + [_layer("fc.weight", (1000, 2048), 2048), _layer("fc.bias", (1000,), 2048)]


def vgg16() -> list[dict]:
    L, inp, i = [], 3, 0
    for v in (64, 64, "M", 128, 128, "M", 256, 256, 256, "M", 512, 512, 512, "M", 512, 512, 512, "M"):
        if v != "M":
            L += [_layer(f"features.{i}.weight", (v, inp, 3, 3), 9 * inp), _layer(f"features.{i}.bias", (v,), 9 * inp)]
            inp = v
            i += 2
        else:
            i += 1
    for j, (a, b) in zip((0, 3, 6), ((25088, 4096), (4096, 4096), (4096, 1000)), strict=True):
        L += [_layer(f"classifier.{j}.weight", (b, a), a), _layer(f"classifier.{j}.bias", (b,), a)]
    return L


def bert_base() -> list[dict]:
    d, ff = 768, 3072
    L = [_layer("embeddings.word_embeddings.weight", (30522, d), 1),
         _layer("embeddings.position_embeddings.weight", (512, d), 1),
         _layer("embeddings.token_type_embeddings.weight", (2, d), 1),
         _layer("embeddings.LayerNorm.weight", (d,), d), _layer("embeddings.LayerNorm.bias", (d,), d)]
    for k in range(12):
        p = f"encoder.layer.{k}"
        for m in ("query", "key", "value"):
            L += [_layer(f"{p}.attention.self.{m}.weight", (d, d), d), _layer(f"{p}.attention.self.{m}.bias", (d,), d)]
        L += [_layer(f"{p}.attention.output.dense.weight", (d, d), d),
              _layer(f"{p}.attention.output.dense.bias", (d,), d),
              _layer(f"{p}.attention.output.LayerNorm.weight", (d,), d),
              _layer(f"{p}.attention.output.LayerNorm.bias", (d,), d),
              _layer(f"{p}.intermediate.dense.weight", (ff, d), d), _layer(f"{p}.intermediate.dense.bias", (ff,), d),
              _layer(f"{p}.output.dense.weight", (d, ff), ff), _layer(f"{p}.output.dense.bias", (d,), ff),
              _layer(f"{p}.output.LayerNorm.weight", (d,), d), _layer(f"{p}.output.LayerNorm.bias", (d,), d)]
    return L + [_layer("pooler.dense.weight", (d, d), d), _layer("pooler.dense.bias", (d,), d)]


def gpt2_small() -> list[dict]:
    d, ff = 768, 3072
    L = [_layer("wte.weight", (50257, d), 1), _layer("wpe.weight", (1024, d), 1)]
    for k in range(12):
        p = f"h.{k}"
        L += [_layer(f"{p}.ln_1.weight", (d,), d), _layer(f"{p}.ln_1.bias", (d,), d),
              _layer(f"{p}.attn.c_attn.weight", (d, 3 * d), d), _layer(f"{p}.attn.c_attn.bias", (3 * d,), d),
              _layer(f"{p}.attn.c_proj.weight", (d, d), d), _layer(f"{p}.attn.c_proj.bias", (d,), d),
              _layer(f"{p}.ln_2.weight", (d,), d), _layer(f"{p}.ln_2.bias", (d,), d),
              _layer(f"{p}.mlp.c_fc.weight", (d, ff), d), _layer(f"{p}.mlp.c_fc.bias", (ff,), d),
              _layer(f"{p}.mlp.c_proj.weight", (ff, d), ff), _layer(f"{p}.mlp.c_proj.bias", (d,), ff)]
    return L + [_layer("ln_f.weight", (d,), d), _layer("ln_f.bias", (d,), d)]


MODELS = {"resnet50": resnet50, "vgg16": vgg16, "bert-base": bert_base, "gpt2-small": gpt2_small}


def main() -> None:
    for name, fn in MODELS.items():
        layers = fn()
        doc = {"name": name, "total_params": sum(x["params"] for x in layers), "layers": layers}
        (HERE / f"{name}.json").write_text(json.dumps(doc, indent=0) + "\n")
        print(name, len(layers), doc["total_params"])


if __name__ == "__main__":
    main()
