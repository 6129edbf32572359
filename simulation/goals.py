"""The goals' figures from dlcp-sim result directories: ratios with bootstrap 95 % intervals, and the
PS link's drain bound on gradient FCT (issue 13).

Why this exists: issue 13's goals compare DLCP with DCTCP (gradient FCT mean and p99) and with TCP
(PS iteration time) at load 0.6. One ns-3 run per seed is deterministic, but one figure per run says
nothing about how far it can be trusted, and a mode's runs may cover different iterations (an
iteration-0 incast, where all workers start together, is not a later, desynchronised iteration).
This reads the per-transfer and per-iteration records a run keeps (``transfers.jsonl``,
``iterations.jsonl``, the seed from ``report.md``), keeps only the iterations asked for, and
computes the ratios with mininet_topos.stats' hierarchical bootstrap: the clusters are (seed,
iteration), resampled with replacement, then the gradient flows within each drawn cluster
(iteration times: seeds, then iterations). Flows of one incast are not independent, so with few
clusters the interval understates what another seed could give; it says so in the output.

The drain bound: every gradient of a PS job crosses the server's host link. If ``k`` gradient flows
have completed, at least the ``k`` smallest sizes have crossed that link since the first of them
started, so under ANY transport and scheduler the ``k``-th smallest FCT is at least
``sum of the k smallest wire sizes / link rate - (latest start - earliest start)``. The mean and
percentiles of that vector bound the run's mean and percentiles from below (a percentile is monotone
in every order statistic). It is tight when the flows start together (iteration 0: all within a few
microseconds) and weak when they are spread. Wire sizes: payload only (any transport, a floor), and
DLCP's packets without the droppable ones its loss bound allows (dlcp_transport.h StartDlcp's
tagging), with their headers.

    python -m simulation.goals --dlcp DIR[,DIR] --dctcp DIR[,DIR] --tcp DIR[,DIR] [--iterations 0]
"""

from __future__ import annotations

import argparse
import json
import math
import re
import sys
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from mininet_topos.stats import STATS, Estimate, bootstrap, ratio

PAYLOAD = 1448                 # sim_net.h TransportConfig::payload
DLCP_WIRE_OVERHEAD = 24 + 8 + 20 + 2   # DLCP header, UDP, IPv4, PPP (dlcp_transport.h's wire size)
CRITICAL_SHARE = 0.05          # sim_net.h TransportConfig::criticalShare


@dataclass
class Run:
    """The gradient flows and job iteration times of one mode in one result directory."""
    mode: str
    seed: int
    source: Path
    flows: dict[int, list[tuple[float, int, float | None]]] = field(default_factory=dict)  # it -> (start, bytes, fct)
    iteration_s: dict[int, float] = field(default_factory=dict)     # it -> slowest worker's iteration time


def _seed_of(report: Path) -> int:
    m = re.search(r"; seed (\d+)", report.read_text()) if report.is_file() else None
    if not m:
        raise ValueError(f"{report}: no '; seed N' in the header (not a dlcp-sim job report?)")
    return int(m.group(1))


def load_runs(directory: Path) -> list[Run]:
    """One Run per mode found in ``directory`` (a dlcp-sim ps-train --out)."""
    seed = _seed_of(directory / "report.md")
    runs: dict[str, Run] = {}
    with (directory / "transfers.jsonl").open() as fh:
        for line in fh:
            t = json.loads(line)
            if t["kind"] != "gradient":
                continue
            run = runs.setdefault(t["mode"], Run(t["mode"], seed, directory))
            run.flows.setdefault(t["iteration"], []).append((t["start_s"], t["bytes"], t["fct_s"]))
    with (directory / "iterations.jsonl").open() as fh:
        for line in fh:
            it = json.loads(line)
            run = runs.setdefault(it["mode"], Run(it["mode"], seed, directory))
            if it["iter_s"] is not None:
                run.iteration_s[it["iteration"]] = max(run.iteration_s.get(it["iteration"], 0.0), it["iter_s"])
    return list(runs.values())


def fct_groups(runs: Iterable[Run], iterations: set[int] | None) -> dict[int, list[float]]:
    """Completed gradient FCTs in µs per (seed, iteration) cluster (key seed * 1000 + iteration)."""
    out: dict[int, list[float]] = {}
    for r in runs:
        for it, flows in r.flows.items():
            if iterations is None or it in iterations:
                out.setdefault(r.seed * 1000 + it, []).extend(1e6 * f for _, _, f in flows if f is not None)
    return out


def iteration_groups(runs: Iterable[Run], iterations: set[int] | None) -> dict[int, list[float]]:
    """Job iteration times in ms per seed."""
    out: dict[int, list[float]] = {}
    for r in runs:
        out.setdefault(r.seed, []).extend(1e3 * s for it, s in sorted(r.iteration_s.items())
                                          if iterations is None or it in iterations)
    return {k: v for k, v in out.items() if v}


def dlcp_packets(nbytes: int, loss_bound: float, payload: int = PAYLOAD,
                 critical_share: float = CRITICAL_SHARE) -> tuple[int, int]:
    """(packets, droppable) of a DLCP gradient of ``nbytes``, as dlcp_transport.h StartDlcp tags it:
    d = n_nc - ceil((1 - p) n_nc) of the n - ceil(critical_share n) non-critical packets."""
    n = max(1, math.ceil(nbytes / payload))
    nc = math.ceil(critical_share * n - 1e-9)
    d = (n - nc) - math.ceil((1.0 - loss_bound) * (n - nc) - 1e-9)
    return n, min(d, n - 1)


def dlcp_wire_bytes(nbytes: int, loss_bound: float, payload: int = PAYLOAD,
                    overhead: int = DLCP_WIRE_OVERHEAD, critical_share: float = CRITICAL_SHARE) -> int:
    """The fewest bytes DLCP must put on the server's link for a gradient of ``nbytes``: every packet
    with its headers except the droppable ones (the LAST packet is never droppable, so the dropped
    ones are full)."""
    n, d = dlcp_packets(nbytes, loss_bound, payload, critical_share)
    return nbytes + n * overhead - d * (payload + overhead)


def _prefix_bound(flows: Sequence[tuple[float, int]], link_bps: float) -> np.ndarray:
    starts = [s for s, _ in flows]
    spread = max(starts) - min(starts)
    sizes = np.sort(np.asarray([b for _, b in flows], float))
    return np.maximum(np.cumsum(sizes) * 8 / link_bps - spread, sizes * 8 / link_bps)


WINDOWS_S = (1e-6, 2e-6, 5e-6, 10e-6, 20e-6, 50e-6, 100e-6, 200e-6, 500e-6, 1e-3, math.inf)


def drain_bound_s(flows: Sequence[tuple[float, int]], link_bps: float,
                  stat=lambda a: float(np.mean(a))) -> float:
    """A lower bound (s) on ``stat`` of the FCTs of ``flows`` ((start_s, wire_bytes), all crossing
    one link of ``link_bps``) under any scheduler. Within a set of flows, the k-th smallest FCT is at
    least (the k smallest sizes) / rate minus the spread of the set's starts, and at least the k-th
    smallest size's own wire time. Cut the flows into windows of their start times: the sorted
    union of the windows' bound vectors stays below the sorted FCTs, so ``stat`` of it (any
    statistic monotone in every order statistic: mean, percentiles) is a bound; the best over
    window widths WINDOWS_S is returned."""
    if not flows:
        return 0.0
    t0 = min(s for s, _ in flows)
    best = 0.0
    for w in WINDOWS_S:
        cells: dict[int, list[tuple[float, int]]] = {}
        for s, b in flows:
            cells.setdefault(0 if math.isinf(w) else int((s - t0) // w), []).append((s, b))
        lb = np.sort(np.concatenate([_prefix_bound(c, link_bps) for c in cells.values()]))
        best = max(best, stat(lb))
    return best


def p99(a: Sequence[float]) -> float:
    """Interpolated p99 (numpy's default, as mininet_topos.stats)."""
    return float(np.percentile(a, 99))


def p99_nearest_rank(a: Sequence[float]) -> float:
    """Nearest-rank p99, as report.md (simulation.report.percentile)."""
    return float(np.percentile(a, 99, method="inverted_cdf"))


def _parse_iterations(text: str | None) -> set[int] | None:
    if not text:
        return None
    out: set[int] = set()
    for part in text.split(","):
        lo, _, hi = part.partition("-")
        out.update(range(int(lo), int(hi or lo) + 1))
    return out


def _runs(dirs: str, mode: str | None) -> list[Run]:
    runs = [r for d in dirs.split(",") if d.strip() for r in load_runs(Path(d.strip()))]
    return [r for r in runs if mode is None or r.mode == mode]


def _describe(runs: list[Run], iterations: set[int] | None) -> str:
    parts = []
    for r in runs:
        its = sorted(it for it in r.flows if iterations is None or it in iterations)
        parts.append(f"seed {r.seed} iterations {its[0]}-{its[-1]} ({r.source.name})" if its else f"seed {r.seed}: none")
    return "; ".join(parts)


def report(dlcp: list[Run], dctcp: list[Run], tcp: list[Run], iterations: set[int] | None,
           link_bps: float, loss_bound: float, rounds: int = 2000) -> str:
    """Markdown: the goals' ratios with intervals and the drain bound beside the measured figures."""
    lines = [f"Iterations: {'all' if iterations is None else sorted(iterations)}. DLCP: {_describe(dlcp, iterations)}. "
             f"DCTCP: {_describe(dctcp, iterations)}. TCP: {_describe(tcp, iterations)}.", "",
             "| figure | DLCP | baseline | ratio DLCP/baseline [95 % interval] | change | clusters (DLCP / baseline) |",
             "|---|---|---|---|---|---|"]
    g_dlcp, g_dctcp = fct_groups(dlcp, iterations), fct_groups(dctcp, iterations)
    if g_dlcp and g_dctcp:
        for stat in ("mean", "p99"):
            est = ratio(g_dlcp, g_dctcp, stat, rounds)
            a = STATS[stat](np.concatenate([np.asarray(v) for v in g_dlcp.values()]))
            b = STATS[stat](np.concatenate([np.asarray(v) for v in g_dctcp.values()]))
            lines.append(f"| gradient FCT {stat} (µs), vs DCTCP | {a:.1f} | {b:.1f} | {est.text(3)} | "
                         f"{_change(est)} | {len(g_dlcp)} / {len(g_dctcp)} |")
    i_dlcp, i_tcp = iteration_groups(dlcp, iterations), iteration_groups(tcp, iterations)
    if i_dlcp and i_tcp:
        est = ratio(i_tcp, i_dlcp, "mean", rounds)      # speed-up: TCP's time / DLCP's
        a = float(np.mean(np.concatenate([np.asarray(v) for v in i_dlcp.values()])))
        b = float(np.mean(np.concatenate([np.asarray(v) for v in i_tcp.values()])))
        lines.append(f"| job iteration mean (ms), speed-up over TCP | {a:.3f} | {b:.3f} | {est.text(2)} x | "
                     f"(TCP / DLCP) | {sum(map(len, i_dlcp.values()))} / {sum(map(len, i_tcp.values()))} iterations |")
    lines += ["", "Each mode alone (the same clusters; a goal's threshold against a baseline's point value):", "",
              "| mode | gradient FCT mean (µs) | gradient FCT p99 (µs) | job iteration mean (ms) |", "|---|---|---|---|"]
    shown: set[tuple] = set()
    for runs in (dlcp, dctcp, tcp):
        key = tuple((r.source, r.mode) for r in runs)
        g, i = fct_groups(runs, iterations), iteration_groups(runs, iterations)
        if not g or key in shown:
            continue
        shown.add(key)
        cells = [bootstrap(g, STATS[stat], rounds).text(1) for stat in ("mean", "p99")]
        cells.append(bootstrap(i, STATS["mean"], rounds).text(3) if i else "-")
        lines.append(f"| {runs[0].mode} | " + " | ".join(cells) + " |")
    lines += ["", "Drain bound at the PS's host link (any scheduler; µs; wire bytes: payload only / DLCP's "
              f"packets with headers at loss bound {loss_bound}), beside the measured gradient FCT:", "",
              "| mode | seed | iteration | flows complete | start spread | gradient bytes | drain of all | bound mean | bound p99 "
              "| measured mean | measured p99 (nearest rank) | p99 / bound |", "|---|---|---|---|---|---|---|---|---|---|---|---|"]
    seen: set[tuple[Path, str]] = set()
    for r in dlcp + dctcp + tcp:
        if (r.source, r.mode) in seen:
            continue
        seen.add((r.source, r.mode))
        its = [it for it in sorted(r.flows) if iterations is None or it in iterations]
        rows = [(str(it), r.flows[it]) for it in its]
        if len(its) > 1:
            rows.append((f"{its[0]}-{its[-1]} together", [f for it in its for f in r.flows[it]]))
        for name, flows in rows:
            lines.append(_bound_row(r, name, flows, link_bps, loss_bound))
    lines += ["", "Intervals: hierarchical bootstrap (mininet_topos.stats.ratio; clusters = (seed, iteration) "
              "for FCTs, seeds then iterations for iteration times), 2,000 rounds. Flows of one incast are "
              "not independent: with few clusters the interval is narrower than another seed could show. p99 "
              "here interpolates between order statistics (numpy's default, as mininet_topos.stats); report.md's "
              "p99 is the nearest rank (in parentheses), which can be higher where the tail is sparse."]
    return "\n".join(lines) + "\n"


def _bound_row(r: Run, name: str, flows: list[tuple[float, int, float | None]], link_bps: float,
               loss_bound: float) -> str:
    done = [(s, b, f) for s, b, f in flows if f is not None]
    plain = [(s, b) for s, b, _ in done]
    dlcp = [(s, dlcp_wire_bytes(b, loss_bound)) for s, b, _ in done]
    starts = [s for s, _ in plain]
    total = sum(b for _, b in plain)
    fct = [1e6 * f for _, _, f in done]
    bound_p99 = 1e6 * drain_bound_s(plain, link_bps, p99)
    return (f"| {r.mode} | {r.seed} | {name} | {len(done)}/{len(flows)} | {1e6 * (max(starts) - min(starts)):.1f} | {total:,} | "
            f"{1e6 * total * 8 / link_bps:.1f} | {1e6 * drain_bound_s(plain, link_bps):.1f} / "
            f"{1e6 * drain_bound_s(dlcp, link_bps):.1f} | {bound_p99:.1f} / {1e6 * drain_bound_s(dlcp, link_bps, p99):.1f} | "
            f"{float(np.mean(fct)):.1f} | {p99(fct):.1f} ({p99_nearest_rank(fct):.1f}) | {p99(fct) / bound_p99:.2f} |")


def _change(est: Estimate) -> str:
    return f"{100 * (est.value - 1):+.1f} % [{100 * (est.lo - 1):+.1f}, {100 * (est.hi - 1):+.1f}]"


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="python -m simulation.goals", description=__doc__.splitlines()[0])
    p.add_argument("--dlcp", required=True, help="comma-separated result directories with a dlcp run")
    p.add_argument("--dctcp", default="", help="comma-separated result directories with a dctcp run")
    p.add_argument("--tcp", default="", help="comma-separated result directories with the TCP baseline (iteration goal)")
    p.add_argument("--tcp-mode", default="tcp-cubic", help="which mode of --tcp (default tcp-cubic)")
    p.add_argument("--iterations", help="iterations to compare, e.g. 0 or 0-2 or 0,3 (default all)")
    p.add_argument("--link-gbps", type=float, default=100.0, help="the PS's host link (paper-144: 100)")
    p.add_argument("--loss-bound", type=float, default=0.10)
    a = p.parse_args(argv)
    try:
        iterations = _parse_iterations(a.iterations)
        dlcp = _runs(a.dlcp, "dlcp")
        dctcp = _runs(a.dctcp, "dctcp") if a.dctcp else []
        tcp = _runs(a.tcp, a.tcp_mode) if a.tcp else []
    except (OSError, ValueError) as err:
        print(f"simulation.goals: {err}", file=sys.stderr)
        return 2
    if not dlcp:
        print("simulation.goals: --dlcp: no dlcp run in those directories", file=sys.stderr)
        return 2
    print(report(dlcp, dctcp, tcp, iterations, a.link_gbps * 1e9, a.loss_bound), end="")
    return 0


if __name__ == "__main__":
    sys.exit(main())
