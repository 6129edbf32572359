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

    python -m simulation.ideal DIR [--iteration 0] [--link-gbps 100] [--k 1,12,28]
"""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Sequence
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
    a = p.parse_args(argv)
    try:
        flows = load_flows(a.directory, a.iteration)
        ks = [int(x) for x in a.k.split(",") if x.strip()]
    except (OSError, ValueError, KeyError) as err:
        print(f"simulation.ideal: {err}", file=sys.stderr)
        return 2
    if not flows:
        print(f"simulation.ideal: no dlcp gradient flows of iteration {a.iteration} in {a.directory}", file=sys.stderr)
        return 2
    print(report(flows, a.link_gbps * 1e9, ks), end="")
    return 0


if __name__ == "__main__":
    sys.exit(main())
