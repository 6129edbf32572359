"""``report.md`` and plots of a study (``dlcp-exp --scenario``): every mode x job with 95 % intervals.

Input: ``config.json``, ``iterations.jsonl`` and ``runs.jsonl`` of a study directory (see study.py).
An iteration's time is its slowest worker's ``iter_time_s`` (compute plus exposed communication);
iteration 0 (warm-up: connections, first-contact handshakes) is left out. Statistics come from
``stats.py`` (hierarchical bootstrap over seeds and iterations). Every mode is compared with the
status quo (``tcp-cubic``); a comparison whose intervals overlap says "no significant difference".
"""

from __future__ import annotations

import json
import platform
from collections import defaultdict
from pathlib import Path

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402 - the backend must be chosen first

from mininet_topos import stats as st  # noqa: E402
from mininet_topos.cpu import STARVED_WAIT_SHARE, SWITCH_LIMIT, starved_switches  # noqa: E402
from mininet_topos.report import _save, plot_drops, read_jsonl  # noqa: E402
from mininet_topos.scenarios import MODES, STATUS_QUO  # noqa: E402

GOAL_P99_RATIO = 0.5
GOAL_MEAN_SPEEDUP = 1.25
GOAL_ACCURACY_PT = 0.5
MIN_ACCURACY_ITERATIONS = 50   # before that, accuracy differences are noise of early training


def per_iteration(records: list[dict]) -> dict[tuple[str, str], dict[int, dict[int, dict]]]:
    """(job, mode) -> seed -> iteration -> aggregate over the job's workers (warm-up iteration 0 dropped)."""
    out: dict = defaultdict(lambda: defaultdict(dict))
    for r in records:
        if int(r["iteration"]) == 0:
            continue
        cell = out[(r["job"], r["mode"])][int(r["seed"])].setdefault(int(r["iteration"]), {
            "iter": 0.0, "comm": None, "exposed": None, "retx": 0, "given_up": 0, "packets": 0,
            "server_done": False, "accuracy": None})
        cell["iter"] = max(cell["iter"], float(r["iter_time_s"]))
        for key, field in (("comm", "comm_time_s"), ("exposed", "exposed_comm_s")):
            if r.get(field) is not None:          # None: not measured by this kind of agent
                cell[key] = max(cell[key] or 0.0, float(r[field]))
        cell["retx"] += int(r.get("retransmissions", 0))
        cell["given_up"] += int(r.get("recv_given_up", 0))
        cell["packets"] += int(r.get("recv_packets", 0))
        if not cell["server_done"]:          # the server's figures are repeated in each worker's record
            cell["server_done"] = True
            cell["given_up"] += int(r.get("server_given_up", 0))
            cell["packets"] += int(r.get("server_packets", 0))
            cell["retx"] += int(r.get("server_retransmissions", 0))
        if r.get("accuracy") is not None:
            cell["accuracy"] = float(r["accuracy"])
    return out


def _median_or_none(values: list[float | None]) -> float | None:
    """Median of the measured values (upper middle, as before); None when nothing was measured."""
    got = sorted(v for v in values if v is not None)
    return float(got[len(got) // 2]) if got else None


def _mean_or_none(values: list[float | None]) -> float | None:
    got = [v for v in values if v is not None]
    return sum(got) / len(got) if got else None


def _secs(value: float | None) -> str:
    """A table cell in seconds; "-" for what the mode's agents do not measure."""
    return "-" if value is None else f"{value:.3f}"


def _ordered_modes(config: dict, present: set[str]) -> list[str]:
    configured = list(config.get("study", {}).get("modes") or [])
    return [m for m in dict.fromkeys([*configured, *MODES]) if m in present]


def summarise_study(records: list[dict], runs: list[dict], config: dict) -> dict:
    cells = per_iteration(records)
    jobs = list(dict.fromkeys(r["job"] for r in records))
    modes = _ordered_modes(config, {m for _, m in cells})
    out: dict = {"jobs": {}, "modes": modes}
    for job in jobs:
        rows = {}
        for mode in modes:
            by_seed = cells.get((job, mode))
            if not by_seed:
                continue
            times = {s: [c["iter"] for _, c in sorted(its.items())] for s, its in by_seed.items()}
            flat = [c for its in by_seed.values() for c in its.values()]
            finals = [its[max(its)]["accuracy"] for its in by_seed.values() if its[max(its)]["accuracy"] is not None]
            mode_runs = [r for r in runs if r["mode"] == mode and not r.get("failure")]
            switch_cpu = [v["mean_core"] for r in mode_runs for k, v in r.get("cpu", {}).items() if k.startswith("switch:")]
            rows[mode] = {
                "seeds": len(by_seed), "samples": len(flat), "times": times,
                "stats": st.summarise(times),
                "comm_median": _median_or_none([c["comm"] for c in flat]),
                "exposed_mean": _mean_or_none([c["exposed"] for c in flat]),
                "retx_per_it": sum(c["retx"] for c in flat) / len(flat),
                "given_up_per_it": sum(c["given_up"] for c in flat) / len(flat),
                "lost_pct": 100 * sum(c["given_up"] for c in flat) / max(1, sum(c["packets"] for c in flat)),
                "accuracy": sum(finals) / len(finals) if finals else None,
                "selective_drops": sum(sum(r.get("selective_drops", {}).values()) for r in mode_runs) / max(1, len(mode_runs)),
                "tail_drops": sum(sum(r.get("tail_drops", {}).values()) for r in mode_runs) / max(1, len(mode_runs)),
                "switch_cpu_max": max(switch_cpu, default=0.0),
                "switch_wait_max": max((v["wait_share"] for r in mode_runs for k, v in r.get("cpu", {}).items()
                                        if k.startswith("switch:") and "wait_share" in v), default=None),
                "starved_runs": sum(1 for r in mode_runs if starved_switches(r.get("cpu") or {})),
                "bulk_tcp_mbps": _mean([r["bulk_tcp_mbps"] for r in mode_runs if r.get("bulk_tcp_mbps") is not None]),
                "final_iteration": max(max(its) for its in by_seed.values()),
            }
        out["jobs"][job] = rows
    return out


def _mean(values: list[float]) -> float | None:
    return sum(values) / len(values) if values else None


def comparisons(rows: dict) -> list[dict]:
    """Each mode against the status quo: mean speed-up and p99 ratio, each with its interval."""
    base = rows.get(STATUS_QUO)
    if base is None:
        return []
    out = []
    for mode, row in rows.items():
        if mode == STATUS_QUO:
            continue
        speed = st.ratio(base["times"], row["times"], "mean")
        p99 = st.ratio(row["times"], base["times"], "p99")
        med = st.ratio(base["times"], row["times"], "median")
        sig = {k: not row["stats"][k].overlaps(base["stats"][k]) for k in ("median", "mean", "p99")}
        out.append({"mode": mode, "mean_speedup": speed, "median_speedup": med, "p99_ratio": p99, "significant": sig})
    return out


def _fmt_sig(flag: bool) -> str:
    return "significant" if flag else "no significant difference"


def write_study_report(run_dir: Path) -> Path:
    config = json.loads((run_dir / "config.json").read_text())
    records = read_jsonl(run_dir / "iterations.jsonl")
    runs = read_jsonl(run_dir / "runs.jsonl")
    if not records:
        failures = [r["failure"] for r in runs if r.get("failure")]
        raise ValueError(f"{run_dir}/iterations.jsonl: no iteration records"
                         + (f"; first failure: {failures[0]}" if failures else ""))
    summary = summarise_study(records, runs, config)
    scen = config["scenario"]
    lines = [f"# DLCP study: scenario `{scen['name']}`", "",
             f"{scen['about']}.", "",
             f"- started {config.get('started', '?')} (UTC stamp), commit {config.get('git', '?')}, machine: {platform.node()}, "
             f"{_cpu_model()}, {_ncpu()} cores, Linux {platform.release()}",
             f"- topology {scen['topo']} {scen['topo_params']}, links {config['link_mbps']:g} Mbit/s (emulated in the "
             f"switches), queue depth {config['study']['queue_depth']}, compute ratio {config['compute_ratio']:g} "
             f"({'overlapped with' if config['study']['overlap'] else 'not overlapped with'} communication)",
             f"- {config['study']['seeds']} seeds x {config['iterations']} iterations per mode, interleaved; "
             "iteration 0 left out; intervals: 95 % hierarchical bootstrap (seeds, then iterations)",
             "- modes: " + "; ".join(f"`{m}`: {config['modes'].get(m, MODES[m].about)}" for m in summary["modes"]), ""]
    failures = [r for r in runs if r.get("failure")]
    if failures:
        lines += [f"**{len(failures)} run(s) failed** (their records are missing from the figures):", ""]
        lines += [f"- {r['failure']}" for r in failures] + [""]
    notes = list(config["study"].get("notes") or [])
    hot = sorted({f"{s} ({r['mode']}, seed {r['seed']})" for r in runs for s in r.get("cpu_bound_switches", [])})
    if hot:
        notes.append(f"switch processes above {SWITCH_LIMIT:.0%} of a core during a run: {', '.join(hot)}")
    notes += cpu_load_notes(runs) + switch_nice_notes(runs) + starvation_notes(runs) + steal_notes(runs)
    if notes:
        lines += ["## Notes", ""] + [f"- {n}" for n in notes] + [""]
    plots = []
    for job, rows in summary["jobs"].items():
        workload = next(r["workload"] for r in records if r["job"] == job)
        lines += [f"## Job `{job}` ({workload}): iteration time (s), compute + exposed communication", "",
                  "| mode | seeds | iters | median [95 % CI] | mean [95 % CI] | p99 [95 % CI] | comm p50 | exposed comm "
                  "| retx/it | given up/it | lost % | accuracy | sel. drops/run | tail drops/run | switch CPU |",
                  "|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|"]
        for mode, row in rows.items():
            s = row["stats"]
            acc = "-" if row["accuracy"] is None else f"{100 * row['accuracy']:.2f}%"
            lines.append(f"| {mode} | {row['seeds']} | {row['samples']} | {s['median'].text()} | {s['mean'].text()} | "
                         f"{s['p99'].text()} | {_secs(row['comm_median'])} | {_secs(row['exposed_mean'])} | "
                         f"{row['retx_per_it']:.1f} | {row['given_up_per_it']:.1f} | {row['lost_pct']:.2f} | {acc} | "
                         f"{row['selective_drops']:.0f} | {row['tail_drops']:.0f} | {row['switch_cpu_max']:.0%} |")
        lines.append("")
        bulk = {m: r["bulk_tcp_mbps"] for m, r in rows.items() if r.get("bulk_tcp_mbps") is not None}
        if bulk:
            lines += ["Competing bulk TCP goodput during the runs (Mbit/s, all bulk flows together, mean over runs): "
                      + ", ".join(f"{m} {v:.1f}" for m, v in bulk.items()) + ".", ""]
        comps = comparisons(rows)
        if comps:
            lines += [f"Against the status quo (`{STATUS_QUO}`): speed-up = {STATUS_QUO} / mode, p99 ratio = mode / "
                      f"{STATUS_QUO}; \"significant\" = the two modes' 95 % intervals do not overlap.", "",
                      "| mode | mean speed-up | median speed-up | p99 ratio | mean | p99 |", "|---|---|---|---|---|---|"]
            for c in comps:
                lines.append(f"| {c['mode']} | {c['mean_speedup'].text(2)} | {c['median_speedup'].text(2)} | "
                             f"{c['p99_ratio'].text(2)} | {_fmt_sig(c['significant']['mean'])} | "
                             f"{_fmt_sig(c['significant']['p99'])} |")
            lines.append("")
            lines += goal_lines(rows, comps)
        plots += plot_job(run_dir, job, rows)
    stats_rows = [{"mode": m, "selective_drops": _sum_runs(runs, m, "selective_drops")} for m in summary["modes"]]
    plots.append(plot_drops(run_dir / "drops_per_class.png", stats_rows, "Selective drops per (queue, magnitude "
                            "class), all runs").name)
    acc_plot = plot_accuracy(run_dir, records)
    if acc_plot:
        plots.append(acc_plot)
    lines += cpu_table(runs, summary["modes"])
    lines += ["", "## Plots", ""] + [f"![{p}]({p})" for p in plots] + [""]
    if not acc_plot:
        lines += ["(no accuracy plot: no job of this scenario evaluates a model)", ""]
    path = run_dir / "report.md"
    path.write_text("\n".join(lines))
    (run_dir / "summary.json").write_text(json.dumps(summary_json(summary), indent=2))
    return path


def goal_lines(rows: dict, comps: list[dict]) -> list[str]:
    c = next((x for x in comps if x["mode"] == "dlcp"), None)
    if c is None:
        return []
    p99_ok = c["p99_ratio"].value <= GOAL_P99_RATIO and c["significant"]["p99"]
    mean_ok = c["mean_speedup"].value >= GOAL_MEAN_SPEEDUP and c["significant"]["mean"]
    out = [f"Goal (DLCP p99 <= {GOAL_P99_RATIO}x {STATUS_QUO}'s, mean >= {GOAL_MEAN_SPEEDUP}x faster, intervals not "
           f"overlapping): p99 ratio {c['p99_ratio'].value:.2f} -> **{'met' if p99_ok else 'not met'}**; mean speed-up "
           f"{c['mean_speedup'].value:.2f} -> **{'met' if mean_ok else 'not met'}**."]
    lossless = [rows[m]["accuracy"] for m in ("udp-reliable", STATUS_QUO, "tcp-bbr") if m in rows
                and rows[m]["accuracy"] is not None]
    if rows.get("dlcp", {}).get("accuracy") is not None and lossless:
        ref = lossless[0]
        diff = 100 * (rows["dlcp"]["accuracy"] - ref)
        last = rows["dlcp"]["final_iteration"]
        verdict = (f"goal within {GOAL_ACCURACY_PT} pt: **{'met' if abs(diff) <= GOAL_ACCURACY_PT else 'not met'}**"
                   if last + 1 >= MIN_ACCURACY_ITERATIONS else
                   f"after {last + 1} iterations, too early to judge; the `accuracy` scenario checks it")
        out.append(f"Accuracy: DLCP {100 * rows['dlcp']['accuracy']:.2f}% vs lossless {100 * ref:.2f}% "
                   f"({diff:+.2f} pt; {verdict}).")
    return out + [""]


def summary_json(summary: dict) -> dict:
    out = {"modes": summary["modes"], "jobs": {}}
    for job, rows in summary["jobs"].items():
        out["jobs"][job] = {}
        for mode, row in rows.items():
            out["jobs"][job][mode] = {k: v for k, v in row.items() if k not in ("times", "stats")}
            out["jobs"][job][mode]["times_by_seed"] = row["times"]
            out["jobs"][job][mode].update({k: e.as_dict() for k, e in row["stats"].items()})
        out["jobs"][job]["vs_status_quo"] = [
            {"mode": c["mode"], "mean_speedup": c["mean_speedup"].as_dict(), "median_speedup": c["median_speedup"].as_dict(),
             "p99_ratio": c["p99_ratio"].as_dict(), "significant": c["significant"]} for c in comparisons(rows)]
    return out


def plot_job(run_dir: Path, job: str, rows: dict) -> list[str]:
    fig, ax = plt.subplots(figsize=(6.5, 4))
    for mode, row in rows.items():
        xs = sorted(t for v in row["times"].values() for t in v)
        ax.step(xs, [(i + 1) / len(xs) for i in range(len(xs))], where="post", label=mode)
    ax.set(xlabel="iteration time (s): compute + exposed communication", ylabel="CDF",
           title=f"Job {job}: iteration time, all seeds")
    ax.legend(fontsize=8, loc="lower right")
    cdf = _save(fig, run_dir / f"iter_time_cdf_{job}.png").name
    fig, ax = plt.subplots(figsize=(max(6.0, 1.1 * len(rows) + 2), 4))
    modes = list(rows)
    for k, (stat, off) in enumerate((("median", -0.27), ("mean", 0.0), ("p99", 0.27))):
        est = [rows[m]["stats"][stat] for m in modes]
        ax.bar([i + off for i in range(len(modes))], [e.value for e in est], width=0.27, label=stat, color=f"C{k}",
               yerr=[[e.value - e.lo for e in est], [e.hi - e.value for e in est]], capsize=3)
    ax.set_xticks(range(len(modes)), modes, rotation=30, ha="right", fontsize=8)
    ax.set(ylabel="seconds", title=f"Job {job}: iteration time with 95 % intervals")
    ax.legend(loc="upper left", bbox_to_anchor=(1.01, 1.0), fontsize=8)
    bars = _save(fig, run_dir / f"iter_time_stats_{job}.png").name
    return [cdf, bars]


def plot_accuracy(run_dir: Path, records: list[dict]) -> str | None:
    pts: dict = defaultdict(lambda: defaultdict(list))
    for r in records:
        if r.get("accuracy") is not None:
            pts[(r["job"], r["mode"])][int(r["iteration"])].append(float(r["accuracy"]))
    if not pts:
        return None
    fig, ax = plt.subplots(figsize=(6.5, 4))
    for (job, mode), its in sorted(pts.items()):
        xs = sorted(its)
        ax.plot(xs, [sum(its[i]) / len(its[i]) for i in xs], marker=".", label=f"{job}/{mode}")
    ax.set(xlabel="iteration", ylabel="test accuracy (mean over workers and seeds)", title="Accuracy")
    ax.legend(fontsize=8)
    return _save(fig, run_dir / "accuracy.png").name


def cpu_load_notes(runs: list[dict]) -> list[str]:
    """The Notes' line on the stated CPU load (study.CpuLoad) kept on the machine during the runs:
    what was asked and what the busy loops got (lowest-highest over the runs)."""
    loads = [r["cpu_load"] for r in runs if r.get("cpu_load")]
    if not loads:
        return []
    asked = sorted({(ld["cores"], ld["procs"], ld["duty"], ld["period_s"]) for ld in loads})
    got = [ld["measured_cores"] for ld in loads]
    stated = "; ".join(f"{c:g} core(s): {n} process(es) busy {d:.0%} of every {p * 1e3:g} ms" for c, n, d, p in asked)
    return [f"**stated CPU load** during {len(loads)} of {len(runs)} runs (every mode alike): busy loops outside the "
            f"network, {stated}; they got {min(got):.2f}-{max(got):.2f} cores (CPU time per wall second, all loaders)"]


def switch_nice_notes(runs: list[dict]) -> list[str]:
    """The Notes' line on the switches' CPU priority (study.StudyConfig.switch_nice), when it was set."""
    levels = sorted({r["switch_nice"] for r in runs if r.get("switch_nice") is not None})
    if not levels:
        return []
    n = sum(1 for r in runs if r.get("switch_nice") is not None)
    return [f"**switch priority**: every switch thread ran at nice {', '.join(str(x) for x in levels)} during {n} of "
            f"{len(runs)} runs (agents, bulk flows and any stated load at nice 0): the emulated network got its CPU "
            "first"]


def starvation_notes(runs: list[dict]) -> list[str]:
    """The Notes' lines on CPU starvation: which runs had a switch whose packet thread waited for a
    CPU more than ``STARVED_WAIT_SHARE`` of the run, and how the machine was loaded then."""
    measured = [r for r in runs if any(k.startswith("switch:") and "wait_share" in v
                                       for k, v in (r.get("cpu") or {}).items())]
    if not measured:
        return []
    starved = [r for r in measured if starved_switches(r["cpu"])]   # at today's threshold, as the text says
    worst = max(((v["wait_share"], k.split(":", 1)[1], r) for r in measured for k, v in r["cpu"].items()
                 if k.startswith("switch:") and "wait_share" in v), key=lambda x: x[0])
    loaded = [r for r in measured if r.get("machine_cpu", {}).get("cores")]
    busy = [r["machine_cpu"]["busy_share"] for r in loaded]
    own = [sum(v["mean_core"] for v in r["cpu"].values()) / r["machine_cpu"]["cores"] for r in loaded]
    machine = (f"; the machine was {min(busy):.0%}-{max(busy):.0%} busy over the runs, the study's own switches "
               f"and agents used {min(own):.0%}-{max(own):.0%} of its cores (the rest: bulk flows, other processes)"
               if busy else "")
    where = f"{worst[1]} {worst[0]:.0%} ({worst[2]['mode']}, seed {worst[2]['seed']})"
    if not starved:
        return [f"no run CPU-starved: switch packet threads waited for a CPU at most {where}{machine}"]
    return [f"**CPU-starved emulation** in {len(starved)} of {len(measured)} runs ({_runs_per_mode(starved)}): "
            f"a switch's packet thread waited for a CPU "
            f"more than {STARVED_WAIT_SHARE:.0%} of the run (worst {where}){machine}. Its ports then deliver less "
            "than the emulated link rate: the times below include the emulation's CPU shortage, for every mode"]


# The hypervisor took more than this share of the VM's cores (steal in /proc/stat) during a run: the
# 2026-12-03 demos' DLCP iterations followed it run by run (1.28-1.34 s at ~1 %, 1.49-1.62 s at 9-10 %).
STEAL_FLAG_SHARE = 0.05


def steal_notes(runs: list[dict]) -> list[str]:
    """The Notes' line on CPU steal: runs during which the hypervisor took more than
    ``STEAL_FLAG_SHARE`` of the machine's cores, per mode; nothing when no run did."""
    stolen = [r for r in runs if (r.get("machine_cpu") or {}).get("steal_share", 0.0) > STEAL_FLAG_SHARE]
    if not stolen:
        return []
    worst = max(stolen, key=lambda r: r["machine_cpu"]["steal_share"])
    return [f"**CPU steal**: the hypervisor took more than {STEAL_FLAG_SHARE:.0%} of the machine's cores in "
            f"{len(stolen)} of {len(runs)} runs ({_runs_per_mode(stolen)}"
            f"; worst {worst['machine_cpu']['steal_share']:.0%}, {worst['mode']} seed {worst['seed']}): those "
            "runs had less CPU than the machine's cores, which slows the CPU-bound modes most"]


def _runs_per_mode(runs: list[dict]) -> str:
    """``dlcp 2, tcp-cubic 1``: how many of ``runs`` each mode had, in first-seen order."""
    by_mode: dict[str, int] = defaultdict(int)
    for r in runs:
        by_mode[r["mode"]] += 1
    return ", ".join(f"{m} {n}" for m, n in by_mode.items())


def cpu_table(runs: list[dict], modes: list[str]) -> list[str]:
    """Per mode: the busiest switch and agent (highest run), the longest switch CPU wait, the machine."""
    out = ["## CPU (share of one core, mean over a run; the highest run per mode)", "",
           "CPU wait: the share of the run a switch's packet thread was runnable but waiting for a CPU "
           f"(schedstat run_delay); above {STARVED_WAIT_SHARE:.0%} the run counts as CPU-starved. Machine: "
           "busy share of all cores, mean over the mode's runs (lowest-highest).", "",
           "| mode | busiest switch | its mean | its peak 1-s | longest CPU wait (switch) | starved runs | "
           "busiest agent | its mean | its CPU wait | machine busy |", "|---|---|---|---|---|---|---|---|---|---|"]
    for mode in modes:
        sw, ag = _busiest(runs, mode, "switch:"), _busiest(runs, mode, "agent:")
        mine = [r for r in runs if r["mode"] == mode]
        waits = [(v["wait_share"], k.split(":", 1)[1]) for r in mine for k, v in (r.get("cpu") or {}).items()
                 if k.startswith("switch:") and "wait_share" in v]
        wait = f"{max(waits)[0]:.0%} ({max(waits)[1]})" if waits else "-"
        starved = f"{sum(1 for r in mine if starved_switches(r.get('cpu') or {}))} of {len(mine)}" if waits else "-"
        agent_wait = max((v.get("wait_share", -1.0) for r in mine for k, v in (r.get("cpu") or {}).items()
                          if k == f"agent:{ag[0]}"), default=-1.0)
        busy = [r["machine_cpu"]["busy_share"] for r in mine if r.get("machine_cpu")]
        machine = (f"{sum(busy) / len(busy):.0%} ({min(busy):.0%}-{max(busy):.0%})" if busy else "-")
        out.append(f"| {mode} | {sw[0]} | {sw[1]:.0%} | {sw[2]:.0%} | {wait} | {starved} | {ag[0]} | {ag[1]:.0%} | "
                   f"{'-' if agent_wait < 0 else f'{agent_wait:.0%}'} | {machine} |")
    return out


def _sum_runs(runs: list[dict], mode: str, key: str) -> dict[str, int]:
    total: dict[str, int] = {}
    for r in runs:
        if r["mode"] == mode:
            for k, v in (r.get(key) or {}).items():
                total[k] = total.get(k, 0) + v
    return total


def _busiest(runs: list[dict], mode: str, prefix: str) -> tuple[str, float, float]:
    best = ("-", 0.0, 0.0)
    for r in runs:
        if r["mode"] != mode:
            continue
        for name, v in (r.get("cpu") or {}).items():
            if name.startswith(prefix) and v["mean_core"] > best[1]:
                best = (name.split(":", 1)[1], v["mean_core"], v["peak_core"])
    return best


def _cpu_model() -> str:
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or "unknown CPU"


def _ncpu() -> int:
    import os
    return os.cpu_count() or 0


def print_summary(run_dir: Path) -> str:
    """The report's tables (no plots) for the console."""
    text = (run_dir / "report.md").read_text()
    keep, on = [], False
    for line in text.splitlines():
        if line.startswith("## Job") or line.startswith("## Notes") or line.startswith("**"):
            on = True
        elif line.startswith("## CPU") or line.startswith("## Plots"):
            on = False
        if on or line.startswith("Goal") or line.startswith("Accuracy"):
            keep.append(line)
    return "\n".join(keep)
