"""Results of a training run (dlcp-sim --workload ps-train): JSON lines, report.md and plots.

Why this exists: every figure of a run is kept as data (transfers.jsonl: one object per transfer;
iterations.jsonl: one per worker and iteration; runs.json: per mode and load) beside the human
report and its plots (FCT mean and p99 by flow-size bucket vs load, iteration-time CDF, drops per
class), so a reader can recompute any number. The report states the scale of what was simulated.
For a PS job it also has a table per iteration with the background on the PS's host link: a TCP
baseline's iterations are not alike over a long run (the web-search background's heavy tail sends a
few flows of tens of MB into the PS now and then, and the gradients share that port with them), so
the per-iteration figures say which iterations met such flows (docs/results/dctcp-late-iterations).
"""

from __future__ import annotations

import json
import math
from pathlib import Path

from simulation.job import JobResult
from simulation.report import percentile

SIZE_BUCKETS = ((0, 100_000, "< 100 kB"), (100_000, 1_000_000, "100 kB - 1 MB"),
                (1_000_000, 10_000_000, "1 - 10 MB"), (10_000_000, math.inf, ">= 10 MB"))


def fct_stats(transfers: list[dict], kind: str, lo: float = 0, hi: float = math.inf) -> dict:
    sel = [t for t in transfers if t["kind"] == kind and lo <= t["bytes"] < hi]
    done = [t["fct_s"] for t in sel if t["completed"]]
    return {"flows": len(sel), "completed": len(done),
            "mean_us": round(1e6 * sum(done) / len(done), 1) if done else None,
            "p99_us": round(1e6 * percentile(done, 99), 1) if done else None}


def iteration_stats(r: JobResult) -> dict:
    """Per iteration, the job's time is its slowest worker's; mean and max over iterations."""
    by_it: dict[int, float] = {}
    for rec in r.iterations:
        if rec["iter_s"] is not None:
            by_it[rec["iteration"]] = max(by_it.get(rec["iteration"], 0.0), rec["iter_s"])
    times = [by_it[k] for k in sorted(by_it)]
    return {"iterations": len(times), "mean_ms": round(1e3 * sum(times) / len(times), 3) if times else None,
            "max_ms": round(1e3 * max(times), 3) if times else None, "times_ms": [round(1e3 * t, 3) for t in times]}


def summary(r: JobResult) -> dict:
    grads = [t for t in r.transfers if t["kind"] == "gradient" and t["dlcp"]]
    return {"mode": r.mode, "load": r.extra.get("load"), "gradient": fct_stats(r.transfers, "gradient"),
            "parameter": fct_stats(r.transfers, "parameter"), "background": fct_stats(r.transfers, "background"),
            "iteration": iteration_stats(r), "finished": r.finished, "sim_ms": round(r.sim_time_s * 1e3, 3),
            "events": r.events, "events_per_s": round(r.events / r.run_wall_s) if r.run_wall_s else None,
            "run_wall_s": round(r.run_wall_s, 2), "build_wall_s": round(r.build_wall_s, 2),
            "collect_wall_s": round(r.collect_wall_s, 2), "max_rss_mb": round(r.max_rss_mb),
            "dlcp_retx": sum(t.get("retx", 0) for t in grads),
            "dlcp_zero_filled_packets": sum(t.get("zero_filled", 0) for t in grads),
            "dlcp_packets": sum(t.get("packets", 0) for t in grads)}


def ps_host(transfers: list[dict]) -> str | None:
    """The parameter server: the one host every gradient goes to (None: no gradient, or several)."""
    dsts = {t["dst"] for t in transfers if t["kind"] == "gradient"}
    return dsts.pop() if len(dsts) == 1 else None


def ps_iterations(transfers: list[dict]) -> list[dict]:
    """Per iteration of a PS job, its gradients and the background on the PS's host link: the flows
    into the PS in flight at the iteration's first gradient start (started by then, not complete by
    then; a flow never completed counts whole), and of the background flows into or out of the PS
    started from then to the next iteration's first gradient start, how many completed by the run's
    end. [] without a PS job."""
    ps = ps_host(transfers)
    if ps is None:
        return []
    grads: dict[int, list[dict]] = {}
    for t in transfers:
        if t["kind"] == "gradient":
            grads.setdefault(t["iteration"], []).append(t)
    into = [t for t in transfers if t["kind"] == "background" and t["dst"] == ps]
    touching = [t for t in transfers if t["kind"] == "background" and ps in (t["src"], t["dst"])]
    firsts = {it: min(t["start_s"] for t in g) for it, g in grads.items()}
    rows = []
    for it in sorted(grads):
        g, at = grads[it], firsts[it]
        until = min((v for k, v in firsts.items() if k > it), default=math.inf)
        open_then = [t for t in into if t["start_s"] <= at and not (t["completed"] and t["start_s"] + t["fct_s"] <= at)]
        started = [t for t in touching if at <= t["start_s"] < until]
        st = fct_stats(g, "gradient")
        rows.append({"iteration": it, "gradients": st["flows"], "completed": st["completed"],
                     "first_start_ms": round(at * 1e3, 3),
                     "start_spread_ms": round((max(t["start_s"] for t in g) - at) * 1e3, 3),
                     "mean_us": st["mean_us"], "p99_us": st["p99_us"],
                     "into_ps_flows": len(open_then), "into_ps_mb": round(sum(t["bytes"] for t in open_then) / 1e6, 2),
                     "ps_background_started": len(started),
                     "ps_background_completed": sum(1 for t in started if t["completed"])})
    return rows


def write(out: Path, runs: list[JobResult], header: str) -> Path:
    """transfers.jsonl, iterations.jsonl, runs.json, report.md and plots/*.png into ``out``."""
    out.mkdir(parents=True, exist_ok=True)
    with (out / "transfers.jsonl").open("w") as fh:
        for r in runs:
            for t in r.transfers:
                fh.write(json.dumps(t | {"load": r.extra.get("load")}) + "\n")
    with (out / "iterations.jsonl").open("w") as fh:
        for r in runs:
            for it in r.iterations:
                fh.write(json.dumps(it | {"load": r.extra.get("load")}) + "\n")
    sums = [summary(r) for r in runs]
    (out / "runs.json").write_text(json.dumps([r.as_dict() | {"summary": s} for r, s in zip(runs, sums, strict=True)],
                                              indent=1) + "\n")
    lines = [header, "", "| mode | load | iteration mean (ms) | iteration max (ms) | iterations | gradient FCT mean (µs) | "
             "gradient FCT p99 (µs) | gradients complete | parameter FCT p99 (µs) | background complete | "
             "DLCP retx / zero-filled / packets | sim (ms) | events | events/s | Run (s) | build (s) |",
             "|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|"]
    for s in sums:
        g, p, b, it = s["gradient"], s["parameter"], s["background"], s["iteration"]
        lines.append(f"| {s['mode']} | {s['load']} | {it['mean_ms']} | {it['max_ms']} | {it['iterations']} | "
                     f"{g['mean_us']} | {g['p99_us']} | {g['completed']}/{g['flows']} | {p['p99_us']} | "
                     f"{b['completed']}/{b['flows']} | {s['dlcp_retx']} / {s['dlcp_zero_filled_packets']} / "
                     f"{s['dlcp_packets']} | {s['sim_ms']} | {s['events']:,} | {s['events_per_s']:,} | "
                     f"{s['run_wall_s']} | {s['build_wall_s']} |")
    lines += ["", "Background FCT by flow size (µs; mean / p99 / complete of started):", "",
              "| mode | load | " + " | ".join(b[2] for b in SIZE_BUCKETS) + " |", "|---|---|" + "---|" * len(SIZE_BUCKETS)]
    for r, s in zip(runs, sums, strict=True):
        cells = []
        for lo, hi, _ in SIZE_BUCKETS:
            st = fct_stats(r.transfers, "background", lo, hi)
            cells.append(f"{st['mean_us']} / {st['p99_us']} / {st['completed']} of {st['flows']}")
        lines.append(f"| {s['mode']} | {s['load']} | " + " | ".join(cells) + " |")
    for r in runs:
        rows = ps_iterations(r.transfers)
        if not rows:
            continue
        lines += ["", f"Per iteration, {r.mode} load {r.extra.get('load')} (PS {ps_host(r.transfers)}): gradient FCT "
                  "(µs) and the background on the PS's host link: flows into the PS in flight at the iteration's "
                  "first gradient start, and background flows into or out of the PS started during the iteration, "
                  "complete by the run's end of started:", "",
                  "| iteration | gradients complete | first start (ms) | start spread (ms) | gradient FCT mean | "
                  "gradient FCT p99 | into the PS in flight: flows / MB | to or from the PS: complete of started |",
                  "|---|---|---|---|---|---|---|---|"]
        for w in rows:
            lines.append(f"| {w['iteration']} | {w['completed']}/{w['gradients']} | {w['first_start_ms']} | "
                         f"{w['start_spread_ms']} | {w['mean_us']} | {w['p99_us']} | {w['into_ps_flows']} / "
                         f"{w['into_ps_mb']} | {w['ps_background_completed']} of {w['ps_background_started']} |")
    lines += ["", "Switch counters:", ""]
    for r in runs:
        lines.append(f"* {r.mode} (load {r.extra.get('load')}): `{json.dumps(r.counters, sort_keys=True)}`")
    _plots(out, runs)
    lines += ["", "Plots: `fct_by_size.png` (background FCT mean and p99 per size bucket vs load), "
              "`iteration_cdf.png`, `drops_per_class.png`.", "",
              "FCT = receiver complete - transfer start. DLCP gradients complete at the loss bound "
              "(missing non-critical packets zero-filled), TCP ones when every byte arrived; parameters are "
              "fully reliable in every mode. Iteration time = fwd_done(i+1) - fwd_done(i) of the slowest worker."]
    report = out / "report.md"
    report.write_text("\n".join(lines) + "\n")
    return report


def _legend_or_note(ax, empty_note: str, **legend_kw) -> None:
    """A legend for what was drawn; on axes with nothing drawn, a note saying why they are empty."""
    if ax.get_legend_handles_labels()[0]:
        ax.legend(**legend_kw)
    else:
        ax.text(0.5, 0.5, empty_note, transform=ax.transAxes, ha="center")


def _plots(out: Path, runs: list[JobResult]) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    modes = sorted({r.mode for r in runs})
    fig, axes = plt.subplots(2, len(SIZE_BUCKETS), figsize=(4 * len(SIZE_BUCKETS), 6), squeeze=False)
    for col, (lo, hi, name) in enumerate(SIZE_BUCKETS):
        for mode in modes:
            pts = sorted((r.extra.get("load") or 0, fct_stats(r.transfers, "background", lo, hi))
                         for r in runs if r.mode == mode)
            for row, key in enumerate(("mean_us", "p99_us")):
                xs = [x for x, st in pts if st[key] is not None]
                ys = [st[key] for x, st in pts if st[key] is not None]
                axes[row][col].plot(xs, ys, marker="o", label=mode)
                axes[row][col].set_title(f"{name}: {key.split('_')[0]}")
                axes[row][col].set_xlabel("load")
                axes[row][col].set_ylabel("FCT (µs)")
    axes[0][0].legend()
    fig.tight_layout()
    fig.savefig(out / "fct_by_size.png")
    plt.close(fig)

    fig, ax = plt.subplots(figsize=(6, 4))
    for r in runs:
        times = sorted(1e3 * rec["iter_s"] for rec in r.iterations if rec["iter_s"] is not None)
        if times:
            ax.step(times, [(i + 1) / len(times) for i in range(len(times))], where="post",
                    label=f"{r.mode} load {r.extra.get('load')}")
    ax.set_xlabel("iteration time per worker (ms)")
    ax.set_ylabel("CDF")
    _legend_or_note(ax, "no iteration closed in these runs")
    fig.tight_layout()
    fig.savefig(out / "iteration_cdf.png")
    plt.close(fig)

    fig, ax = plt.subplots(figsize=(7, 4))
    for r in runs:
        sel = r.counters.get("selective_drops")
        if isinstance(sel, dict) and sel:
            per_mag = [sum(v for k, v in sel.items() if k.endswith(f"/m{m}")) for m in range(16)]
            ax.plot(range(16), per_mag, marker="o", label=f"{r.mode} load {r.extra.get('load')}: selective")
        tail = r.counters.get("tail_drops")
        if isinstance(tail, dict) and tail:
            ax.bar([int(k[1:]) + 0.5 for k in tail], list(tail.values()), width=0.4, alpha=0.4,
                   label=f"{r.mode} load {r.extra.get('load')}: tail drops by queue")
    ax.set_xlabel("magnitude class (selective) / queue (tail)")
    ax.set_ylabel("packets dropped")
    _legend_or_note(ax, "no selective or tail drops in these runs", fontsize=7)
    fig.tight_layout()
    fig.savefig(out / "drops_per_class.png")
    plt.close(fig)
