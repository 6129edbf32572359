"""Compare ``dlcp-exp --arch tna`` and ``--arch v1model`` runs over several seeds (not a test).

Why it exists (issue 15): the Tofino program's Mininet results are judged against the BMv2
program's run to run, where background traffic and timing vary; one pair of runs cannot tell a
difference of the programs from noise. This reads run directories laid out as
``ROOT/<arch>/seed<N>/<run>/`` (``dlcp-exp ... --seed N --arch <arch> --out ROOT/<arch>/seed<N>``)
and prints, per mode and counter, each program's mean with its 95 % interval (t distribution)
and seed-to-seed standard deviation, the ratio of the means and Welch's t for the difference;
also the switches' own stop lines: packet-thread CPU per packet, time waiting for a CPU, full
Python GCs (and those while forwarding, with the longest). Last, the direction of the comparison
the experiment exists for, per program: DLCP mode's communication time over the TCP mode's, seed
by seed (both modes of one seed ran back to back), with the mean, median and 95 % interval of
those ratios.

    .venv/bin/python tests/tna/compare_arch_runs.py ROOT
"""

from __future__ import annotations

import json
import math
import re
import statistics as st
import sys
from pathlib import Path

T975 = {1: 12.71, 2: 4.30, 3: 3.18, 4: 2.78, 5: 2.57, 6: 2.45, 7: 2.36, 8: 2.31, 9: 2.26, 10: 2.23}
MODES = ("dlcp", "baseline", "tcp")


def run_counters(run: Path) -> dict[str, dict[str, float]]:
    """Counters of one run directory, per mode: per-queue tx, drops, marks, spray, times."""
    recs = [json.loads(line) for line in (run / "iterations.jsonl").read_text().splitlines()]
    stats = {s["mode"]: s for s in map(json.loads, (run / "switch_stats.jsonl").read_text().splitlines())}
    out: dict[str, dict[str, float]] = {}
    for mode in (m for m in MODES if m in stats):
        raw = json.loads((run / mode / "switch_stats.json").read_text())
        c: dict[str, float] = {}
        for counters in raw.values():
            if isinstance(counters, dict):
                for cell in counters.get("port_queue_tx") or []:
                    key = f"tx_q{cell['queue']}"
                    c[key] = c.get(key, 0) + int(cell.get("packets", 0))
        s = stats[mode]
        c["sel_drops"] = sum(s["selective_drops"].values())
        c["ecn_marks"] = sum(s["ecn_marks"].values())
        c["tail_drops"] = sum(s["tail_drops"].values())
        c["spray_pkts"] = sum(s["spray"].values())
        times = sorted(r["comm_time_s"] for r in recs if r["mode"] == mode)
        c["comm_mean_s"] = st.mean(times) if times else math.nan
        c["comm_p50_s"] = times[len(times) // 2] if times else math.nan
        c["retx"] = sum(r.get("retransmissions", 0) or 0 for r in recs if r["mode"] == mode)
        c.update(stop_lines(run / mode))
        out[mode] = c
    return out


_FINAL = re.compile(r"final: rx (\d+) .* packet thread CPU ([\d.]+) s waited for a CPU ([\d.?]+) s .*"
                    r"gen2 (\d+) \([\d.]+ s, longest (\d+) ms\)(?:; while forwarding gen2 (\d+) \(longest (\d+) ms)?")


def stop_lines(mode_dir: Path) -> dict[str, float]:
    """From the switches' stop lines (``final: ...``): packet-thread CPU per received packet (us),
    seconds waited for a CPU, full GCs (in all; while forwarding, where the switch logs it) and the
    longest, summed (CPU per packet: pooled) over the switches of one mode."""
    rx = cpu = wait = full = full_fwd = 0.0
    longest = longest_fwd = 0.0
    seen = fwd_seen = False
    for log in sorted(mode_dir.glob("*.log")):
        m = _FINAL.search(log.read_text(errors="replace"))
        if not m:
            continue
        seen = True
        rx += int(m.group(1))
        cpu += float(m.group(2))
        wait += float(m.group(3)) if m.group(3) != "?" else 0.0
        full += int(m.group(4))
        longest = max(longest, int(m.group(5)))
        if m.group(6) is not None:
            fwd_seen = True
            full_fwd += int(m.group(6))
            longest_fwd = max(longest_fwd, int(m.group(7)))
    if not seen:
        return {}
    out = {"sw_cpu_us_pkt": cpu / rx * 1e6 if rx else math.nan, "sw_cpu_wait_s": wait,
           "gc_full": full, "gc_full_max_ms": longest}
    if fwd_seen:
        out.update(gc_full_fwd=full_fwd, gc_full_fwd_max_ms=longest_fwd)
    return out


def load(root: Path, arch: str) -> dict[int, dict[str, dict[str, float]]]:
    runs = {}
    for d in sorted((root / arch).glob("seed*")):
        done = [r for r in sorted(d.glob("2*")) if (r / "switch_stats.jsonl").exists()]
        if done:
            runs[int(d.name[4:])] = run_counters(done[-1])
    return runs


def interval(xs: list[float]) -> tuple[float, float, float]:
    """(mean, sd, half-width of the 95 % interval)."""
    m = st.mean(xs)
    if len(xs) < 2:
        return m, 0.0, math.nan
    sd = st.stdev(xs)
    return m, sd, T975.get(len(xs) - 1, 2.0) * sd / math.sqrt(len(xs))


def main(root: Path) -> None:
    tna, v1 = load(root, "tna"), load(root, "v1model")
    seeds = sorted(set(tna) & set(v1))
    print(f"paired seeds: {seeds}")
    for mode in (m for m in MODES if seeds and m in tna[seeds[0]] and m in v1[seeds[0]]):
        print(f"\n== {mode}\n{'counter':12s} {'tna mean ± 95% (sd)':>28s} {'v1model mean ± 95% (sd)':>28s} ratio welch-t")
        for key in sorted({k for s in seeds for k in tna[s][mode]}):
            a = [tna[s][mode].get(key, 0) for s in seeds]
            b = [v1[s][mode].get(key, 0) for s in seeds]
            (ma, sa, ha), (mb, sb, hb) = interval(a), interval(b)
            se = math.sqrt(sa ** 2 / len(a) + sb ** 2 / len(b))
            t = (ma - mb) / se if se else math.nan
            ratio = ma / mb if mb else math.nan
            print(f"{key:12s} {ma:12.4g} ± {ha:7.3g} ({sa:6.3g}) {mb:12.4g} ± {hb:7.3g} ({sb:6.3g}) {ratio:5.2f} {t:6.2f}")
    print_direction({"tna": tna, "v1model": v1}, seeds)


def print_direction(runs: dict[str, dict[int, dict[str, dict[str, float]]]], seeds: list[int]) -> None:
    """DLCP mode over TCP mode per seed, per program: does DLCP win or lose on both programs?"""
    if not seeds or any("dlcp" not in r[seeds[0]] or "tcp" not in r[seeds[0]] for r in runs.values()):
        return
    print("\n== direction: dlcp / tcp per seed (< 1: DLCP faster)")
    for arch, r in runs.items():
        for key in ("comm_mean_s", "comm_p50_s"):
            ratios = [r[s]["dlcp"][key] / r[s]["tcp"][key] for s in seeds if r[s]["tcp"].get(key)]
            m, _sd, h = interval(ratios)
            print(f"{arch:8s} {key:12s} mean {m:5.2f} ± {h:4.2f}  median {st.median(ratios):5.2f}  "
                  f"per seed {' '.join(f'{x:.2f}' for x in ratios)}")


if __name__ == "__main__":
    main(Path(sys.argv[1] if len(sys.argv) > 1 else "."))
