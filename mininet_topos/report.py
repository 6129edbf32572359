"""Turn an experiment's raw records into ``report.md`` and PNG plots, and a console summary.

Input (``results/<run>/``): ``iterations.jsonl``, one record per worker per iteration::

    {"mode": "dlcp", "workload": "ps", "iteration": 3, "worker": "h1", "comm_time_s": 0.41,
     "bytes": 1234, "retransmissions": 2, "lost_fraction": 0.03, "accuracy": 0.91}

and ``switch_stats.jsonl``, one record per mode with the switches' counters after the run::

    {"mode": "dlcp", "selective_drops": {"q3/m1": 120}, "ecn_marks": {...},
     "tail_drops": {"q0": 40}, "spray": {"leaf1/g1/m0": 10}, "malformed": 0}

Everything here is pure computation over those files, so it is tested on synthetic records.
"""

from __future__ import annotations

import json
import math
from collections import defaultdict
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402 - the backend must be chosen first

PLOTS = ("comm_time_cdf.png", "comm_time_p50_p99.png", "drops_per_class.png", "accuracy.png")


def read_jsonl(path: Path) -> list[dict]:
    if not path.exists():
        return []
    records = []
    for lineno, line in enumerate(path.read_text().splitlines(), 1):
        if line.strip():
            try:
                records.append(json.loads(line))
            except json.JSONDecodeError as err:
                raise ValueError(f"{path}:{lineno}: not JSON: {err.msg}") from None
    return records


def percentile(values: list[float], q: float) -> float:
    """Nearest-rank percentile (q in 0..100) of a non-empty list."""
    ordered = sorted(values)
    rank = max(1, math.ceil(q / 100 * len(ordered)))
    return ordered[rank - 1]


@dataclass
class ModeSummary:
    mode: str
    iterations: int
    p50_s: float
    p99_s: float
    mean_s: float
    retransmissions: int
    lost_fraction: float
    final_accuracy: float | None
    selective_drops: int
    tail_drops: int
    critical_drops: int


def iteration_times(records: Iterable[dict]) -> dict[str, list[float]]:
    """Per mode: each iteration's communication time = the slowest worker's."""
    slowest: dict[tuple[str, int], float] = {}
    for r in records:
        key = (r["mode"], int(r["iteration"]))
        slowest[key] = max(slowest.get(key, 0.0), float(r["comm_time_s"]))
    times: dict[str, list[float]] = defaultdict(list)
    for (mode, _), t in sorted(slowest.items()):
        times[mode].append(t)
    return dict(times)


def summarise(records: list[dict], stats: list[dict], order: list[str] | None = None) -> list[ModeSummary]:
    """One row per mode, in ``order`` (the configured mode order), else in order of first appearance."""
    times = iteration_times(records)
    by_mode_stats = {s["mode"]: s for s in stats}
    seen = list(dict.fromkeys([*(order or []), *(r["mode"] for r in records)]))
    summaries = []
    for mode in (m for m in seen if m in times):
        values = times[mode]
        mine = [r for r in records if r["mode"] == mode]
        accs = [(r["iteration"], r["accuracy"]) for r in mine if r.get("accuracy") is not None]
        st = by_mode_stats.get(mode, {})
        summaries.append(ModeSummary(
            mode=mode, iterations=len(values), p50_s=percentile(values, 50), p99_s=percentile(values, 99),
            mean_s=sum(values) / len(values),
            retransmissions=sum(int(r.get("retransmissions", 0)) for r in mine),
            lost_fraction=sum(float(r.get("lost_fraction", 0.0)) for r in mine) / max(1, len(mine)),
            final_accuracy=max(accs)[1] if accs else None,
            selective_drops=sum(st.get("selective_drops", {}).values()),
            tail_drops=sum(st.get("tail_drops", {}).values()),
            critical_drops=int(st.get("critical_drops", 0)),
        ))
    return summaries


def summary_table(summaries: list[ModeSummary]) -> str:
    """An aligned plain-text table (also valid Markdown)."""
    head = ["mode", "iters", "p50 comm (s)", "p99 comm (s)", "retx", "lost %", "accuracy", "sel. drops",
            "tail drops"]
    rows = [[s.mode, str(s.iterations), f"{s.p50_s:.3f}", f"{s.p99_s:.3f}", str(s.retransmissions),
             f"{100 * s.lost_fraction:.2f}", "-" if s.final_accuracy is None else f"{100 * s.final_accuracy:.2f}%",
             str(s.selective_drops), str(s.tail_drops)] for s in summaries]
    widths = [max(len(x) for x in col) for col in zip(head, *rows, strict=False)]
    line = lambda cells: "| " + " | ".join(c.ljust(w) for c, w in zip(cells, widths, strict=True)) + " |"  # noqa: E731
    sep = "|" + "|".join("-" * (w + 2) for w in widths) + "|"
    return "\n".join([line(head), sep, *(line(r) for r in rows)])


def plot_all(run_dir: Path, records: list[dict], stats: list[dict]) -> list[Path]:
    times = iteration_times(records)
    out = []

    fig, ax = plt.subplots(figsize=(6, 4))
    for mode, values in times.items():
        xs = sorted(values)
        ax.step(xs, [(i + 1) / len(xs) for i in range(len(xs))], where="post", label=mode)
    ax.set(xlabel="iteration communication time (s)", ylabel="CDF", title="Communication time per iteration")
    ax.legend()
    out.append(_save(fig, run_dir / PLOTS[0]))

    fig, ax = plt.subplots(figsize=(6, 4))
    modes = list(times)
    xs = range(len(modes))
    ax.bar([x - 0.2 for x in xs], [percentile(times[m], 50) for m in modes], width=0.4, label="p50")
    ax.bar([x + 0.2 for x in xs], [percentile(times[m], 99) for m in modes], width=0.4, label="p99")
    ax.set_xticks(list(xs), modes)
    ax.set(ylabel="seconds", title="Iteration communication time")
    ax.legend()
    out.append(_save(fig, run_dir / PLOTS[1]))

    out.append(plot_drops(run_dir / PLOTS[2], stats))
    if not any(r.get("accuracy") is not None for r in records):
        (run_dir / PLOTS[3]).unlink(missing_ok=True)      # no empty axes for workloads without accuracy
        return out
    fig, ax = plt.subplots(figsize=(6, 4))
    for mode in times:
        pts = defaultdict(list)
        for r in records:
            if r["mode"] == mode and r.get("accuracy") is not None:
                pts[int(r["iteration"])].append(float(r["accuracy"]))
        if pts:
            its = sorted(pts)
            ax.plot(its, [sum(pts[i]) / len(pts[i]) for i in its], marker=".", label=mode)
    ax.set(xlabel="iteration", ylabel="test accuracy", title="Accuracy over time")
    if ax.get_legend_handles_labels()[0]:
        ax.legend()
    out.append(_save(fig, run_dir / PLOTS[3]))
    return out


def plot_drops(path: Path, stats: list[dict], title: str = "Selective drops per (queue, magnitude class)") -> Path:
    """Grouped bars per (queue, magnitude class); labels rotated and thinned, legend outside the axes."""
    classes = sorted({c for s in stats for c in s.get("selective_drops", {})}, key=_class_order)
    fig, ax = plt.subplots(figsize=(max(6.0, 0.35 * len(classes) + 3), 4))
    width = 0.8 / max(1, len(stats))
    for i, s in enumerate(stats):
        drops = s.get("selective_drops", {})
        ax.bar([j - 0.4 + width * (i + 0.5) for j in range(len(classes))],
               [drops.get(c, 0) for c in classes], width=width, label=s["mode"])
    ax.set_xticks(range(len(classes)), classes, rotation=60, ha="right", fontsize=8)
    ax.set(ylabel="packets", title=title)
    if not classes:
        ax.text(0.5, 0.5, "no selective drops", ha="center", va="center", transform=ax.transAxes)
    if stats:
        ax.legend(loc="upper left", bbox_to_anchor=(1.01, 1.0), fontsize=8)
    return _save(fig, path)


def _class_order(key: str) -> tuple:
    """``q6/m10`` after ``q6/m2``: numeric order of queue, then magnitude class."""
    return tuple(int(part[1:]) if part[1:].isdigit() else part for part in key.split("/"))


def _save(fig, path: Path) -> Path:
    fig.tight_layout()
    fig.savefig(path, dpi=100)
    plt.close(fig)
    return path


def write_report(run_dir: Path, config: dict, notes: list[str] | None = None) -> Path:
    """Write ``report.md`` and the plots for the run in ``run_dir``; returns the report path."""
    records = read_jsonl(run_dir / "iterations.jsonl")
    stats = read_jsonl(run_dir / "switch_stats.jsonl")
    if not records:
        raise ValueError(f"{run_dir}/iterations.jsonl: no iteration records")
    summaries = summarise(records, stats, list(config.get("modes") or []))
    plots = [p.name for p in plot_all(run_dir, records, stats)]
    config = dict(config)
    if config.get("workload") != "ps":
        config.pop("model", None)              # only the PS trains a model; the others reduce a profile
    lines = ["# DLCP experiment report", "", "## Configuration", "", "```json",
             json.dumps(config, indent=2, sort_keys=True), "```", "", "## Summary", "",
             summary_table(summaries), ""]
    base = {s.mode: s for s in summaries}
    if "dlcp" in base and "baseline" in base:
        ratio = base["dlcp"].p99_s / base["baseline"].p99_s if base["baseline"].p99_s else float("nan")
        lines += [f"DLCP p99 / baseline p99 = **{ratio:.2f}** (goal: <= 0.50).", ""]
    lines += ["## Plots", ""] + [f"![{p}]({p})" for p in plots] + [""]
    if PLOTS[3] not in plots:
        lines += ["(no accuracy plot: this workload has no model to evaluate)", ""]
    if notes:
        lines += ["## Notes", ""] + [f"- {n}" for n in notes] + [""]
    path = run_dir / "report.md"
    path.write_text("\n".join(lines))
    return path
