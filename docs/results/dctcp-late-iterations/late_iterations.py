"""Why a TCP run's later PS iterations are slower: each gradient against the background on its path.

Why this exists: over the goal command's ten iterations DCTCP's gradient FCT is not steady (seed 1:
iteration 5's mean is 1.9 ms against 0.3 ms in iterations 1-3), so a ratio over "iterations 0-K"
depends on which background those iterations met. This reads two dlcp-sim result directories'
``transfers.jsonl`` (no re-run) and prints, per iteration: the gradients' FCT; the background flows in
flight into the PS (every gradient crosses the PS's host link) and out of each gradient's sender when
the gradient starts; and each worker's *stalls*: a worker's gradients of one iteration travel one after
another over one persistent TCP connection, so the time from a gradient's start (or the previous
gradient's end, the later) to its end is time in which that connection delivered nothing of it. Long
stalls that cluster at sums of consecutive retransmission timeouts (minimum RTO ``R``, doubling:
1, 3, 7, 15, 31 x R) point at timeouts; stalls that grow smoothly with competing bytes point at
queueing and sharing. The records hold no per-flow drop or timeout count: this is circumstantial.

    python docs/results/dctcp-late-iterations/late_iterations.py --tcp DIR [--dlcp DIR] [--iterations 0-6]
                           [--min-rto-us 192.92] [--ps h0]

``--min-rto-us``: ns-3's ``TcpSocketBase::MinRto`` of the run (simulation.scenario.fabric_timer_floor_s:
192.92 µs on paper-144). Background bytes "remaining" assume each flow progressed at a constant rate
over its FCT (an open flow: its bytes counted whole).
"""

from __future__ import annotations

import argparse
import json
import sys
from collections import defaultdict
from pathlib import Path

BINS = (0, 1, 3, 7, 11, 15, 19, 27, 35, 47, 63)   # stall histogram edges, in minimum RTOs


def load(run_dir: str) -> list[dict]:
    """The transfer records of a dlcp-sim result directory (one mode)."""
    path = Path(run_dir) / "transfers.jsonl"
    if not path.is_file():
        sys.exit(f"late_iterations: {path}: no such file (a dlcp-sim --out directory holds transfers.jsonl)")
    recs = [json.loads(line) for line in path.read_text().splitlines() if line.strip()]
    modes = {r["mode"] for r in recs}
    if len(modes) != 1:
        sys.exit(f"late_iterations: {path}: records of {len(modes)} modes {sorted(modes)}; give a one-mode run")
    return recs


def iterations_arg(text: str) -> list[int]:
    """'0-6' or '0,2,5' -> [0, ..., 6] / [0, 2, 5]."""
    try:
        if "-" in text:
            lo, hi = (int(x) for x in text.split("-", 1))
            return list(range(lo, hi + 1))
        return [int(x) for x in text.split(",")]
    except ValueError:
        raise argparse.ArgumentTypeError(f"--iterations {text!r}: expected 'A-B' or 'A,B,...'") from None


def end_s(r: dict) -> float | None:
    return r["start_s"] + r["fct_s"] if r["completed"] else None


def in_flight(bg: list[dict], t: float) -> tuple[int, float, float]:
    """(flows, bytes of those flows, bytes not yet delivered at t, linear estimate) of bg at time t."""
    n, total, left = 0, 0.0, 0.0
    for r in bg:
        e = end_s(r)
        if r["start_s"] <= t and (e is None or e > t):
            n += 1
            total += r["bytes"]
            left += r["bytes"] if e is None else r["bytes"] * (e - t) / r["fct_s"]
    return n, total, left


def nearest_rank(xs: list[float], q: float) -> float:
    s = sorted(xs)
    return s[max(0, min(len(s) - 1, int(-(-q * len(s) // 1)) - 1))]


def stalls(grads: list[dict]) -> list[tuple[float, str, float, float]]:
    """(stall s, worker, from s, to s) for every completed gradient: its end minus the later of its
    start and the end of the worker's previous gradient of that iteration (same connection). DLCP sends
    a worker's gradients as separate transfers that may end out of order: a negative stall counts 0."""
    out = []
    by_worker: dict[str, list[dict]] = defaultdict(list)
    for r in grads:
        by_worker[r["src"]].append(r)
    for w, rs in by_worker.items():
        prev = float("-inf")
        for r in sorted(rs, key=lambda x: (x["start_s"], x["id"])):
            e = end_s(r)
            if e is None:
                break
            begin = max(prev, r["start_s"])
            out.append((max(0.0, e - begin), w, begin, e))
            prev = max(prev, e)
    return out


def spearman(xs: list[float], ys: list[float]) -> float:
    def ranks(v: list[float]) -> list[float]:
        order = sorted(range(len(v)), key=v.__getitem__)
        rk = [0.0] * len(v)
        i = 0
        while i < len(order):
            j = i
            while j + 1 < len(order) and v[order[j + 1]] == v[order[i]]:
                j += 1
            for k in range(i, j + 1):
                rk[order[k]] = (i + j) / 2
            i = j + 1
        return rk
    a, b = ranks(xs), ranks(ys)
    ma, mb = sum(a) / len(a), sum(b) / len(b)
    cov = sum((x - ma) * (y - mb) for x, y in zip(a, b, strict=True))
    va = sum((x - ma) ** 2 for x in a) ** 0.5
    vb = sum((y - mb) ** 2 for y in b) ** 0.5
    return cov / (va * vb) if va and vb else float("nan")


def report(name: str, recs: list[dict], its: list[int], ps: str, rto: float) -> dict[int, list[dict]]:
    """Print one run's per-iteration table; return its per-gradient rows (for the correlations)."""
    bg = [r for r in recs if r["kind"] == "background"]
    to_ps = [r for r in bg if r["dst"] == ps]
    from_src: dict[str, list[dict]] = defaultdict(list)
    for r in bg:
        from_src[r["src"]].append(r)
    mode = recs[0]["mode"]
    print(f"\n## {name} ({mode}): per iteration (FCT µs; background in flight at each gradient's start, "
          f"mean over the iteration's gradients; MB left = linear estimate)\n")
    print("| iteration | gradients (complete) | first start (ms) | start spread (ms) | FCT mean | p50 | p99 | "
          f"bg into {ps}: flows / MB / MB left | bg out of the sender: flows / MB left | "
          f"stalls >= 7 R (>= {7 * rto * 1e3:.2f} ms) | longest stall (ms) |")
    print("|---|---|---|---|---|---|---|---|---|---|---|")
    rows: dict[int, list[dict]] = {}
    for it in its:
        grads = [r for r in recs if r["kind"] == "gradient" and r["iteration"] == it]
        done = [r for r in grads if r["completed"]]
        if not done:
            print(f"| {it} | {len(grads)} (0) | | | | | | | | | |")
            continue
        fct = [r["fct_s"] * 1e6 for r in done]
        starts = [r["start_s"] for r in grads]
        rows[it] = []
        for r in done:
            n_ps, _, left_ps = in_flight(to_ps, r["start_s"])
            n_src, _, left_src = in_flight(from_src[r["src"]], r["start_s"])
            rows[it].append({"fct": r["fct_s"], "ps_flows": n_ps, "ps_left": left_ps, "src_flows": n_src,
                             "src_left": left_src})
        here = rows[it]

        def mean(key: str, here: list[dict] = here) -> float:
            return sum(x[key] for x in here) / len(here)
        tot_ps = sum(in_flight(to_ps, r["start_s"])[1] for r in done) / len(done)
        st = stalls(grads)
        long = [s for s in st if s[0] >= 7 * rto]
        print(f"| {it} | {len(grads)} ({len(done)}) | {min(starts) * 1e3:.3f} | {(max(starts) - min(starts)) * 1e3:.2f} "
              f"| {sum(fct) / len(fct):.1f} | {nearest_rank(fct, 0.5):.1f} | {nearest_rank(fct, 0.99):.1f} "
              f"| {mean('ps_flows'):.1f} / {tot_ps / 1e6:.1f} / {mean('ps_left') / 1e6:.1f} "
              f"| {mean('src_flows'):.2f} / {mean('src_left') / 1e6:.2f} "
              f"| {len(long)} | {max(s[0] for s in st) * 1e3:.2f} |")
    return rows


def stall_histogram(name: str, recs: list[dict], its: list[int], rto: float) -> None:
    print(f"\n## {name}: stalls per iteration, in minimum RTOs R = {rto * 1e6:.2f} µs "
          "(consecutive timeouts from R: 1, 3, 7, 15, 31 R)\n")
    head = " | ".join(f"[{a}, {b})" for a, b in zip(BINS, BINS[1:], strict=False)) + f" | >= {BINS[-1]}"
    print(f"| iteration | {head} |")
    print("|---|" + "---|" * len(BINS))
    for it in its:
        st = stalls([r for r in recs if r["kind"] == "gradient" and r["iteration"] == it])
        counts = [0] * len(BINS)
        for s in st:
            u = s[0] / rto
            k = sum(1 for b in BINS if u >= b) - 1
            counts[k] += 1
        print(f"| {it} | " + " | ".join(str(c) for c in counts) + " |")


def stall_ends(name: str, recs: list[dict], it: int, rto: float) -> None:
    """When the long stalls of one iteration end: synchronised ends are timers of connections that lost
    together, not a smooth queue draining."""
    st = sorted(s for s in stalls([r for r in recs if r["kind"] == "gradient" and r["iteration"] == it])
                if s[0] >= 7 * rto)
    if not st:
        return
    print(f"\n## {name}: iteration {it}'s {len(st)} stalls >= 7 R: length (R) and end (ms), grouped by end "
          "in 0.5 ms windows\n")
    groups: dict[float, list[tuple[float, str, float, float]]] = defaultdict(list)
    for s in st:
        groups[int(s[3] * 2e3) / 2e3].append(s)
    print("| stalls ending in (ms) | stalls | workers | length (R): min / median / max | started (ms): min / max |")
    print("|---|---|---|---|---|")
    for t0, g in sorted(groups.items()):
        lens = sorted(x[0] / rto for x in g)
        print(f"| {t0 * 1e3:.1f} - {t0 * 1e3 + 0.5:.1f} | {len(g)} | {len({x[1] for x in g})} | "
              f"{lens[0]:.1f} / {lens[len(lens) // 2]:.1f} / {lens[-1]:.1f} | "
              f"{min(x[2] for x in g) * 1e3:.3f} / {max(x[2] for x in g) * 1e3:.3f} |")


def big_flows(name: str, recs: list[dict], ps: str, lo: float, hi: float, at_least: float = 2e6) -> None:
    print(f"\n## {name}: background flows into {ps} of >= {at_least / 1e6:g} MB started before {hi * 1e3:.1f} ms\n")
    print("| from | MB | start (ms) | end (ms) | mean rate (Gbit/s) |")
    print("|---|---|---|---|---|")
    for r in sorted(recs, key=lambda x: x["start_s"]):
        if r["kind"] == "background" and r["dst"] == ps and r["bytes"] >= at_least and lo <= r["start_s"] < hi:
            e = end_s(r)
            rate = f"{r['bytes'] * 8 / r['fct_s'] / 1e9:.1f}" if e is not None else "open"
            print(f"| {r['src']} | {r['bytes'] / 1e6:.2f} | {r['start_s'] * 1e3:.3f} | "
                  f"{'open' if e is None else f'{e * 1e3:.3f}'} | {rate} |")


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--tcp", required=True, help="a TCP mode's result directory (dctcp, tcp-cubic, ...)")
    ap.add_argument("--dlcp", help="DLCP's result directory of the same command and seed, for comparison")
    ap.add_argument("--iterations", type=iterations_arg, default=iterations_arg("0-6"))
    ap.add_argument("--min-rto-us", type=float, default=192.92, help="the run's TCP MinRto (paper-144: 192.92)")
    ap.add_argument("--ps", default="h0", help="the parameter server's host")
    a = ap.parse_args(argv)
    if a.min_rto_us <= 0:
        ap.error(f"--min-rto-us {a.min_rto_us}: must be > 0")
    rto = a.min_rto_us * 1e-6
    runs = [("TCP run", load(a.tcp))] + ([("DLCP run", load(a.dlcp))] if a.dlcp else [])
    for name, recs in runs:
        if not any(r["kind"] == "gradient" and r["dst"] == a.ps for r in recs):
            sys.exit(f"late_iterations: {name}: no gradient goes to --ps {a.ps}")
        rows = report(name, recs, a.iterations, a.ps, rto)
        flat = [x for it in rows for x in rows[it]]
        if len(flat) > 2:
            f = [x["fct"] for x in flat]
            print(f"\nSpearman rank correlation of gradient FCT (iterations {a.iterations[0]}-{a.iterations[-1]}, "
                  f"{len(flat)} gradients) with the background bytes left into {a.ps}: "
                  f"{spearman(f, [x['ps_left'] for x in flat]):.2f}; with the background flows into {a.ps}: "
                  f"{spearman(f, [x['ps_flows'] for x in flat]):.2f}; with the bytes left out of the sender: "
                  f"{spearman(f, [x['src_left'] for x in flat]):.2f}")
            within = {it: spearman([x["fct"] for x in rows[it]], [x["src_left"] for x in rows[it]])
                      for it in rows if len(rows[it]) > 2}
            print("Within each iteration, FCT against the bytes left out of the sender: "
                  + ", ".join(f"{it}: {v:.2f}" for it, v in within.items()))
        stall_histogram(name, recs, a.iterations, rto)
        worst = max(a.iterations, key=lambda it: max(
            (s[0] for s in stalls([r for r in recs if r["kind"] == "gradient" and r["iteration"] == it])),
            default=0.0))
        stall_ends(name, recs, worst, rto)
        done = [r for r in recs if r["kind"] == "gradient" and r["iteration"] in a.iterations and r["completed"]]
        if done:
            lo = min(r["start_s"] for r in done)
            hi = max(end_s(r) or 0.0 for r in done)
            big_flows(name, recs, a.ps, lo - 1e-3, hi)
    return 0


if __name__ == "__main__":
    sys.exit(main())
