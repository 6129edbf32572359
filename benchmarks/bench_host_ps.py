"""Benchmark: a ResNet-50-sized gradient set (25.6 M floats, 161 tensors) through PS push/pull.

One worker process and one server process over 127.0.0.1, with no injected loss, in the same run:
DLCP (tagged, p = 10 %), baseline (same packets untagged, fully reliable) and plain TCP. Figure:
seconds per push+pull iteration (best of --repeat) and the ratio to TCP; also the share of
elements zero-filled (socket-buffer overflow is real loss on loopback and is reported, not hidden).

    .venv/bin/python benchmarks/bench_host_ps.py [--profile resnet50] [--scale 1.0] [--repeat 2] [--quick]
"""

from __future__ import annotations

import argparse
import multiprocessing as mp
import time

from benchmode import add_quick_flag, announce

from host_agent.collectives import PS_SERVER_ID, PSServer, PSWorker
from host_agent.endpoint import Endpoint, EndpointConfig
from host_agent.policy import BASELINE_POLICY, TagPolicy
from host_agent.tcp_baseline import TcpPSServer, TcpPSWorker
from host_agent.workloads import ProfileWorkload


def server_proc(mode: str, profile: str, scale: float, iters: int, q) -> None:
    wl = ProfileWorkload(profile, scale)
    if mode == "tcp":
        srv = TcpPSServer(("127.0.0.1", 0), wl.shapes, 1)
        q.put(srv.address)
        srv.accept_all()
    else:
        ep = Endpoint(EndpointConfig(job_id=1, worker_id=PS_SERVER_ID))
        q.put(ep.address)
        srv = PSServer(ep, wl.shapes, 1, BASELINE_POLICY if mode == "baseline" else TagPolicy())
    for it in range(iters):
        srv.step(it)
    if mode != "tcp":
        ep.close(linger=0.5)


def run(mode: str, profile: str, scale: float, iters: int) -> list[tuple[float, int, int, int]]:
    wl = ProfileWorkload(profile, scale)
    q = mp.Queue()
    p = mp.Process(target=server_proc, args=(mode, profile, scale, iters, q))
    p.start()
    addr = q.get()
    params = wl.initial_params()
    grads = wl.gradients(0, 0, params)
    if mode == "tcp":
        w = TcpPSWorker(addr, 0, params)
    else:
        ep = Endpoint(EndpointConfig(job_id=1, worker_id=0))
        w = PSWorker(ep, addr, params, BASELINE_POLICY if mode == "baseline" else TagPolicy())
    out = []
    for it in range(iters):
        t = time.perf_counter()
        st = w.step(it, grads)
        out.append((time.perf_counter() - t, st.retransmitted, st.zero_filled_elements, st.bytes_sent))
    p.join()
    if mode != "tcp":
        ep.close()
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--profile", default="resnet50")
    ap.add_argument("--scale", type=float, default=None, help="share of the profile's elements (default 1.0)")
    ap.add_argument("--repeat", type=int, default=None, help="iterations per mode, best shown (default 2)")
    add_quick_flag(ap)
    args = ap.parse_args()
    announce(args.quick)
    args.scale = args.scale if args.scale is not None else (0.01 if args.quick else 1.0)
    args.repeat = args.repeat if args.repeat is not None else (1 if args.quick else 2)
    wl = ProfileWorkload(args.profile, args.scale)
    n = sum(s[0] for s in wl.shapes)
    print(f"{args.profile} x{args.scale}: {n / 1e6:.2f} M floats, {len(wl.shapes)} tensors, "
          f"{4 * n / 1e6:.0f} MB each way")
    best = {}
    for mode in ("tcp", "dlcp", "baseline"):
        res = run(mode, args.profile, args.scale, args.repeat)
        for sec, retx, zero, nbytes in res:
            print(f"{mode:>8}: {sec:.3f} s push+pull, {retx} retransmitted (worker side), "
                  f"{zero} elements zero-filled in pull, {nbytes / 1e6:.0f} MB sent")
        best[mode] = min(r[0] for r in res)
    for mode in ("dlcp", "baseline"):
        print(f"ratio {mode}/tcp time: {best[mode] / best['tcp']:.2f}x "
              f"({2 * 4 * n / best[mode] / 1e9:.2f} GB/s vs {2 * 4 * n / best['tcp'] / 1e9:.2f} GB/s)")


if __name__ == "__main__":
    main()
