"""Results of a dlcp-sim run: flows.jsonl (one JSON object per flow), runs.json and report.md.

Why this exists: every number a run produces is kept as data (JSON lines) next to the short
human report derived from it, so a reader can recompute any figure; the report states the scale
and the limits of what was simulated beside the results.
"""

from __future__ import annotations

import json
import math
from pathlib import Path

from simulation.scenario import RunResult, flow_dict


def percentile(values: list[float], p: float) -> float:
    """Nearest-rank percentile (p in 0..100)."""
    ordered = sorted(values)
    rank = max(1, math.ceil(p / 100 * len(ordered)))
    return ordered[rank - 1]


def summary(run: RunResult, kind: str = "gradient") -> dict:
    flows = [f for f in run.flows if f.kind == kind]
    done = [f.fct_s for f in flows if f.completed and f.fct_s is not None]
    arrived = [f.fct_s for f in flows if f.fct_s is not None]
    delivered = sum(f.delivered_bytes for f in flows)
    total = sum(f.bytes for f in flows)
    return {"flows": len(flows), "completed": len(done),
            "mean_fct_us": round(1e6 * sum(done) / len(done), 1) if done else None,
            "p99_fct_us": round(1e6 * percentile(done, 99), 1) if done else None,
            "with_arrivals": len(arrived),
            "mean_last_arrival_us": round(1e6 * sum(arrived) / len(arrived), 1) if arrived else None,
            "delivered_fraction": round(delivered / total, 4) if total else None}


def write(out: Path, runs: list[RunResult], header: str) -> Path:
    """Write flows.jsonl, runs.json and report.md into ``out``; returns the report's path."""
    out.mkdir(parents=True, exist_ok=True)
    with (out / "flows.jsonl").open("w") as fh:
        for run in runs:
            for f in run.flows:
                fh.write(json.dumps(flow_dict(f)) + "\n")
    (out / "runs.json").write_text(json.dumps([r.as_dict() | {"gradient": summary(r), "background":
                                               summary(r, "background")} for r in runs], indent=1) + "\n")
    lines = [header, "",
             "| mode | gradient flows complete | mean FCT (µs) | p99 FCT (µs) | flows with arrivals | "
             "mean last arrival (µs) | gradient bytes delivered | background complete | wall (s) | events | "
             "events/s |",
             "|---|---|---|---|---|---|---|---|---|---|---|"]
    for r in runs:
        g, b = summary(r), summary(r, "background")
        lines.append(f"| {r.mode} | {g['completed']}/{g['flows']} | {g['mean_fct_us']} | {g['p99_fct_us']} | "
                     f"{g['with_arrivals']} | {g['mean_last_arrival_us']} | {g['delivered_fraction']} | {b['completed']}/{b['flows']} | {r.wall_s:.2f} | {r.events} | "
                     f"{r.events / r.wall_s:,.0f} |")
    lines += ["", "Switch counters per mode:", ""]
    for r in runs:
        lines.append(f"* {r.mode}: `{json.dumps(r.counters, sort_keys=True)}`")
    lines += ["", "FCT = last byte received - flow start, over complete flows (every byte arrived). DLCP "
              "gradient flows are open-loop DLCP-tagged UDP (no retransmission): selective and tail drops leave "
              "most incomplete; 'mean last arrival' is when their last surviving packet arrived and 'delivered' "
              "how many bytes did. Not yet the bounded-loss transport "
              "(docs/simulation.md, \"Not yet\")."]
    report = out / "report.md"
    report.write_text("\n".join(lines) + "\n")
    return report
