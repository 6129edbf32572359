"""Benchmark: packetize + tag throughput (GB/s of gradient data, one core).

Cuts a ResNet-50-sized gradient set (the 161 tensors of the profile, 25.6 M float32, Laplace
values) into tagged DLCP packets with the default policy, and compares with the floor of the same
work: one plain memory copy of the same bytes (np.copyto) measured in the same run.

    .venv/bin/python benchmarks/bench_host_packetize.py [--profile resnet50] [--repeat 5] [--quick]
"""

from __future__ import annotations

import argparse
import time

import numpy as np
from benchmode import add_quick_flag, announce

from host_agent.packetizer import packetize
from host_agent.policy import TagPolicy
from host_agent.traffic import load_profile, synthetic_gradients


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--profile", default="resnet50")
    ap.add_argument("--repeat", type=int, default=None, help="best of N (default 5)")
    ap.add_argument("--mtu", type=int, default=1500)
    add_quick_flag(ap)
    args = ap.parse_args()
    announce(args.quick)
    repeat = args.repeat if args.repeat is not None else (1 if args.quick else 5)
    prof = load_profile(args.profile)
    grads = synthetic_gradients(prof, np.random.default_rng(0))
    if args.quick:                    # the first 20 tensors (~1/8 of ResNet-50's bytes)
        grads = grads[:20]
    nbytes = sum(g.nbytes for g in grads)
    pol = TagPolicy()
    n = len(grads)
    best_pk = best_cp = 1e9
    dst = [np.empty_like(g) for g in grads]
    for _ in range(repeat):
        t = time.perf_counter()
        pts = [packetize(g, tensor_id=i, policy=pol, position=i, num_layers=n, mtu=args.mtu)
               for i, g in enumerate(grads)]
        best_pk = min(best_pk, time.perf_counter() - t)
        t = time.perf_counter()
        for d, g in zip(dst, grads, strict=True):
            np.copyto(d, g)
        best_cp = min(best_cp, time.perf_counter() - t)
    packets = sum(p.n_packets for p in pts)
    print(f"{prof.name}: {nbytes / 1e6:.0f} MB in {n} tensors -> {packets} packets (MTU {args.mtu})")
    print(f"packetize+tag: {best_pk * 1e3:.1f} ms = {nbytes / best_pk / 1e9:.2f} GB/s "
          f"({packets / best_pk / 1e6:.2f} Mpps)")
    print(f"memcpy floor:  {best_cp * 1e3:.1f} ms = {nbytes / best_cp / 1e9:.2f} GB/s")
    print(f"ratio packetize/memcpy throughput: {best_cp / best_pk:.2f}x (target: >= 1 GB/s absolute)")


if __name__ == "__main__":
    main()
