"""Ideal mean gradient FCT at the PS's host link: fluid schedules of the same flows (issue 13).

Why this exists: the mean-FCT goal (30 % below DCTCP) is a question of how the PS's link is shared
among an incast's flows, and simulation.goals' drain bound only says what no scheduler can beat.
This computes what a few schedules would give the same flows if the link were always busy and
packets had no latency (a fluid model, so each is a floor for that schedule, not a prediction):
smallest-first one flow at a time (SRPT: the best mean any schedule gets), flows in a given class
order ``k`` at a time, whole senders ``k`` at a time with each sender's flows smallest first (what
DLCP's per-sender admission with ``overcommitSenders = k`` and sender SRPT approaches), and every
flow at once (processor sharing: what fair sharing such as TCP's approaches). Times are from the
first flow's start: in paper-144's iteration 0 every push starts within 2 us, so the starts are
taken as equal. Sizes are wire bytes (DLCP's packets with headers at the loss bound, as the drain
bound's; simulation.goals.dlcp_wire_bytes).

In later iterations the pushes are spread (each worker's four groups start together when its forward
pass ends, the workers over ~200 us), so ``--release`` schedules the same flows from their own start
times (release times): preemptive SRPT (the best mean), and units admitted ``k`` at once, a unit being
a flow or a sender's flows of the iteration (what DLCP's per-sender admission does), the waiting units
taken earliest start first or fewest bytes left first, each admitted sender's released flows smallest
first; it prints the run's measured mean beside them and how far its completions lag the whole-sender
schedule with ``k`` = 28 (link time the run lost).

    python -m simulation.ideal DIR [--iteration 0] [--link-gbps 100] [--k 1,12,28] [--release]
"""

from __future__ import annotations

import argparse
import json
import math
import sys
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from simulation.goals import dlcp_wire_bytes

Flow = tuple[str, int, int]          # (sender, layer class, bytes on the wire)


def fluid_mean_s(units: Sequence[Sequence[int]], k: int, link_bps: float) -> float:
    """Mean completion time (s) of every flow when ``units`` (each a list of flow sizes in bytes,
    served one after the other) are served in order, at most ``k`` at once, sharing the link
    equally; a unit that finishes gives its place to the next."""
    pending = [list(u) for u in units if u]
    n = sum(len(u) for u in pending)
    if n == 0:
        return 0.0
    active: list[list[float]] = []             # [bits left of the current flow, sizes after it...]
    t, total, nxt = 0.0, 0.0, 0
    while nxt < len(pending) or active:
        while len(active) < k and nxt < len(pending):
            u = pending[nxt]
            nxt += 1
            active.append([8.0 * u[0]] + [8.0 * b for b in u[1:]])
        share = link_bps / len(active)
        dt = min(a[0] for a in active) / share
        t += dt
        still = []
        for a in active:
            a[0] -= dt * share
            if a[0] <= 1e-6:
                total += t
                if len(a) > 1:
                    still.append(a[1:])
            else:
                still.append(a)
        active = still
    return total / n


def srpt_mean_s(flows: Sequence[Flow], link_bps: float) -> float:
    """Smallest first, one flow at a time."""
    return fluid_mean_s([[b] for b in sorted(b for _, _, b in flows)], 1, link_bps)


def class_order_mean_s(flows: Sequence[Flow], order: Sequence[int], k: int, link_bps: float) -> float:
    """Flows of ``order``'s first class first (senders in name order within a class), ``k`` at once."""
    by_sender = sorted(flows)
    units = [[b] for c in order for _, cls, b in by_sender if cls == c]
    return fluid_mean_s(units, k, link_bps)


def per_sender_mean_s(flows: Sequence[Flow], k: int, link_bps: float) -> float:
    """Whole senders (their flows smallest first), ``k`` senders at once, senders in name order."""
    by: dict[str, list[int]] = {}
    for s, _, b in flows:
        by.setdefault(s, []).append(b)
    return fluid_mean_s([sorted(by[s]) for s in sorted(by)], k, link_bps)


def sharing_mean_s(flows: Sequence[Flow], link_bps: float) -> float:
    """Every flow at once, equal shares (processor sharing)."""
    return fluid_mean_s([[b] for _, _, b in flows], max(1, len(flows)), link_bps)


def load_flows(directory: Path, iteration: int, mode: str = "dlcp") -> list[Flow]:
    """The gradient pushes of ``iteration`` in a dlcp-sim ps-train result directory, as wire bytes."""
    out = []
    with (directory / "transfers.jsonl").open() as fh:
        for line in fh:
            t = json.loads(line)
            if t["kind"] == "gradient" and t["iteration"] == iteration and t["mode"] == mode:
                out.append((t["src"], t["layer_class"], dlcp_wire_bytes(t["bytes"], t.get("loss_bound", 0.1))))
    return out


@dataclass(frozen=True)
class Push:
    """One gradient push with its release (start) time, for the release-time schedules."""
    id: int
    sender: str
    iteration: int
    start_s: float
    wire_bytes: int
    fct_s: float | None = None


def load_pushes(directory: Path, iterations: Sequence[int], mode: str = "dlcp") -> list[Push]:
    """The gradient pushes of ``iterations`` with their start times and measured FCTs (wire bytes)."""
    out = []
    with (directory / "transfers.jsonl").open() as fh:
        for line in fh:
            t = json.loads(line)
            if t["kind"] == "gradient" and t["iteration"] in iterations and t["mode"] == mode:
                out.append(Push(t["id"], t["src"], t["iteration"], t["start_s"],
                                dlcp_wire_bytes(t["bytes"], t.get("loss_bound", 0.1)), t.get("fct_s")))
    return out


def srpt_release(pushes: Sequence[Push], link_bps: float) -> dict[int, float]:
    """Preemptive SRPT from the release times: push id -> completion time (s)."""
    order = sorted(pushes, key=lambda p: (p.start_s, p.id))
    left: dict[int, float] = {}
    done: dict[int, float] = {}
    rate = link_bps / 8.0
    t, i = (order[0].start_s if order else 0.0), 0
    while len(done) < len(order):
        while i < len(order) and order[i].start_s <= t:
            left[order[i].id] = float(order[i].wire_bytes)
            i += 1
        nxt = order[i].start_s if i < len(order) else math.inf
        if not left:
            t = nxt
            continue
        pid = min(left, key=lambda k: (left[k], k))
        finish = t + left[pid] / rate
        if finish <= nxt:
            t = finish
            done[pid] = t
            del left[pid]
        else:
            left[pid] -= (nxt - t) * rate
            t = nxt
    return done


def units_release(pushes: Sequence[Push], k: int, link_bps: float, per_sender: bool,
                  fewest_left: bool = False) -> dict[int, float]:
    """Units (a push, or with ``per_sender`` a sender's pushes of one iteration) admitted at most
    ``k`` at once, never pre-empted, sharing the link equally; the waiting ones earliest start first
    (or ``fewest_left``: fewest bytes left first); an admitted sender serves its released pushes one at
    a time, fewest bytes left first. Push id -> completion time (s)."""
    order = sorted(pushes, key=lambda p: (p.start_s, p.id))
    units: dict[tuple, list[Push]] = {}
    for p in order:
        units.setdefault((p.sender, p.iteration) if per_sender else (p.id,), []).append(p)
    unit_of = {p.id: u for u, ps in units.items() for p in ps}
    first = {u: ps[0].start_s for u, ps in units.items()}
    left = {p.id: float(p.wire_bytes) for p in order}
    released: set[int] = set()
    done: dict[int, float] = {}
    waiting: list[tuple] = []
    active: list[tuple] = []
    rate = link_bps / 8.0
    t, i = (order[0].start_s if order else 0.0), 0
    while len(done) < len(order):
        while i < len(order) and order[i].start_s <= t:
            p = order[i]
            released.add(p.id)
            if unit_of[p.id] not in active and unit_of[p.id] not in waiting:
                waiting.append(unit_of[p.id])
            i += 1
        waiting.sort(key=lambda u: (sum(left[p.id] for p in units[u]) if fewest_left else 0.0, first[u], u))
        while len(active) < k and waiting:
            active.append(waiting.pop(0))
        current = {}
        for u in active:
            ready = [p for p in units[u] if p.id in released and p.id not in done]
            if ready:
                current[u] = min(ready, key=lambda p: (left[p.id], p.start_s, p.id)).id
        nxt = order[i].start_s if i < len(order) else math.inf
        if not current:
            t = nxt
            continue
        share = rate / len(current)
        dt = min(min(left[pid] for pid in current.values()) / share, nxt - t)
        t += dt
        for pid in current.values():
            left[pid] -= dt * share
            if left[pid] <= 1e-6:
                done[pid] = t
        active = [u for u in active if any(p.id not in done for p in units[u])]
    return done


def release_report(pushes: Sequence[Push], link_bps: float, ks: Sequence[int]) -> str:
    """Markdown: the release-time schedules' means beside the measured one, and the measured
    completions' lag behind the whole-sender schedule with the largest ``k`` (link time lost)."""
    def mean(done: dict[int, float]) -> float:
        return 1e6 * sum(done[p.id] - p.start_s for p in pushes) / len(pushes)

    rows = [("preemptive SRPT (the best mean)", mean(srpt_release(pushes, link_bps)))]
    for k in ks:
        rows.append((f"pushes, {k} at once, fewest bytes left first", mean(units_release(pushes, k, link_bps, False, True))))
        rows.append((f"pushes, {k} at once, earliest start first", mean(units_release(pushes, k, link_bps, False))))
        rows.append((f"whole senders, {k} at once, earliest start first", mean(units_release(pushes, k, link_bps, True))))
    measured = [p for p in pushes if p.fct_s is not None]
    t0 = min(p.start_s for p in pushes)
    lines = [f"{len(pushes)} pushes, starts over {1e6 * (max(p.start_s for p in pushes) - t0):.1f} us, "
             f"{link_bps / 1e9:g} Gbit/s", "", "| schedule (fluid, from each push's own start) | mean FCT (us) |", "|---|---|"]
    lines += [f"| {name} | {v:.1f} |" for name, v in rows]
    if len(measured) == len(pushes):
        lines.append(f"| **measured** | {1e6 * sum(p.fct_s for p in measured) / len(measured):.1f} |")
        fluid = units_release(pushes, max(ks), link_bps, True)
        ends = sorted(p.start_s + p.fct_s - t0 for p in measured)
        ideal_ends = sorted(v - t0 for v in fluid.values())
        lines += ["", f"measured completions behind whole senders, {max(ks)} at once (us from the first start):", "",
                  "| completion rank | measured | fluid | lag |", "|---|---|---|---|"]
        for q in (0.1, 0.25, 0.5, 0.75, 0.9, 1.0):
            j = min(len(ends) - 1, max(0, math.ceil(q * len(ends)) - 1))
            lines.append(f"| {q:.0%} | {1e6 * ends[j]:.1f} | {1e6 * ideal_ends[j]:.1f} | {1e6 * (ends[j] - ideal_ends[j]):.1f} |")
    return "\n".join(lines) + "\n"


def report(flows: Sequence[Flow], link_bps: float, ks: Sequence[int]) -> str:
    """Markdown rows: each schedule's fluid mean (µs from the first start)."""
    classes = sorted({c for _, c, _ in flows})
    rows = [("smallest first, one flow at a time (SRPT)", srpt_mean_s(flows, link_bps))]
    for k in ks:
        rows.append((f"layer classes lowest first, {k} flow(s) at once", class_order_mean_s(flows, classes, k, link_bps)))
    for k in ks:
        rows.append((f"layer classes highest first, {k} flow(s) at once",
                     class_order_mean_s(flows, classes[::-1], k, link_bps)))
    for k in ks:
        rows.append((f"whole senders, {k} at once", per_sender_mean_s(flows, k, link_bps)))
    rows.append(("every flow at once (processor sharing)", sharing_mean_s(flows, link_bps)))
    lines = [f"{len(flows)} flows, {sum(b for _, _, b in flows):,} wire bytes, {link_bps / 1e9:g} Gbit/s", "",
             "| schedule (fluid, link always busy, no latency) | mean (µs from the first start) |", "|---|---|"]
    lines += [f"| {name} | {1e6 * v:.1f} |" for name, v in rows]
    return "\n".join(lines) + "\n"


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="python -m simulation.ideal", description=__doc__.splitlines()[0])
    p.add_argument("directory", type=Path, help="a dlcp-sim ps-train --out directory with a dlcp run")
    p.add_argument("--iteration", type=int, default=0)
    p.add_argument("--link-gbps", type=float, default=100.0, help="the PS's host link (paper-144: 100)")
    p.add_argument("--k", default="1,12,28", help="comma-separated numbers of flows / senders at once")
    p.add_argument("--release", action="store_true", help="schedules from each push's own start time (later iterations)")
    a = p.parse_args(argv)
    try:
        ks = [int(x) for x in a.k.split(",") if x.strip()]
        if not ks or min(ks) < 1:
            raise ValueError(f"--k: expected positive integers, got '{a.k}'")
        flows = load_flows(a.directory, a.iteration)
        pushes = load_pushes(a.directory, [a.iteration]) if a.release else []
    except (OSError, ValueError, KeyError) as err:
        print(f"simulation.ideal: {err}", file=sys.stderr)
        return 2
    if not flows:
        print(f"simulation.ideal: no dlcp gradient flows of iteration {a.iteration} in {a.directory}", file=sys.stderr)
        return 2
    if a.release:
        print(release_report(pushes, a.link_gbps * 1e9, ks), end="")
        return 0
    print(report(flows, a.link_gbps * 1e9, ks), end="")
    return 0


if __name__ == "__main__":
    sys.exit(main())
