"""CPU wait (schedstat run_delay) on real processes, the "starved" flag, the calibration's choice and
the report's CPU section; no Mininet: busy processes pinned to one core make the contention real."""

import json
import os
import subprocess
import sys
import time

import pytest

from mininet_topos.cpu import STARVED_WAIT_SHARE, CpuSampler, starved_switches, thread_schedstat
from mininet_topos.study import calibration_decision, cpu_verdict
from mininet_topos.study_report import write_study_report
from tests.mininet.test_study_logic import _synthetic

BUSY = "import time\nend = time.monotonic() + 30\nwhile time.monotonic() < end: pass\n"

pytestmark = pytest.mark.skipif(thread_schedstat(os.getpid()) is None,
                                reason="this kernel keeps no /proc/<pid>/task/<tid>/schedstat")


def _pinned(code: str, cpu: int) -> subprocess.Popen:
    return subprocess.Popen([sys.executable, "-c", code], preexec_fn=lambda: os.sched_setaffinity(0, {cpu}))


@pytest.fixture(scope="module")
def sampled():
    """Two busy processes sharing one core (each waits about half the time) and a sleeping one."""
    cpu = min(os.sched_getaffinity(0))
    procs = {"switch:busy1": _pinned(BUSY, cpu), "switch:busy2": _pinned(BUSY, cpu),
             "switch:idle": subprocess.Popen(["sleep", "30"])}
    try:
        time.sleep(0.3)
        sampler = CpuSampler(0.5)
        for name, p in procs.items():
            sampler.add(name, p.pid)
        sampler.start()
        time.sleep(3.0)
        return sampler.stop(), sampler.machine()
    finally:
        for p in procs.values():
            p.kill()
            p.wait()


def test_run_delay_grows_for_processes_that_share_a_core(sampled):
    cpu, _ = sampled
    for name in ("switch:busy1", "switch:busy2"):
        v = cpu[name]
        assert v["wait_share"] > 0.3, v                  # runnable about half the time, not running
        assert v["thread_wait_s"] > 0.9 and v["thread_run_s"] > 0.1, v
        assert v["mean_core"] < 0.7, v                   # below the CPU-bound limit, yet starved
        assert v["peak_wait_share"] >= v["wait_share"] * 0.8, v
    assert cpu["switch:idle"]["wait_share"] < 0.02 and cpu["switch:idle"]["mean_core"] < 0.02
    assert starved_switches(cpu) == ["busy1", "busy2"]


def test_machine_share_counts_the_busy_core(sampled):
    _, machine = sampled
    assert machine["cores"] == os.cpu_count()
    assert machine["busy_share"] >= 0.9 / machine["cores"]   # at least our one busy core
    assert machine["runnable_mean"] >= 2


def _run(cpu, machine=None):
    return {"mode": "dlcp", "seed": 1, "cpu": cpu, "cpu_bound_switches": [],
            "starved_switches": starved_switches(cpu), "machine_cpu": machine or {}}


def test_calibration_scales_down_a_starved_run_within_the_budget_only(sampled):
    cpu, machine = sampled
    run = _run(cpu, machine)
    assert "CPU-starved (waited > 30%): busy1, busy2" in cpu_verdict(run)
    slower, note = calibration_decision(run, 20.0, 0, 2, estimate_s=300, budget_s=600)
    assert slower == 12.0 and "scaled the links down to 12 Mbit/s" in note
    slower, note = calibration_decision(run, 20.0, 0, 2, estimate_s=900, budget_s=600)
    assert slower is None and "over its budget of 10 min; kept 20 Mbit/s" in note
    slower, note = calibration_decision(run, 7.2, 2, 2, estimate_s=300, budget_s=None)
    assert slower is None and "still CPU-bound or CPU-starved after 2" in note
    calm = _run({"switch:idle": cpu["switch:idle"]})
    assert calibration_decision(calm, 20.0, 0, 2, estimate_s=300, budget_s=None) == (None, None)


def test_report_flags_starved_runs_and_shows_the_cpu_wait(tmp_path, sampled):
    cpu, machine = sampled
    _, runs, _ = _synthetic(tmp_path)
    for r in runs:                              # the dlcp runs with the measured contention, the others calm
        r["cpu"] = cpu if r["mode"] == "dlcp" else {"switch:idle": cpu["switch:idle"]}
        r["starved_switches"], r["machine_cpu"] = starved_switches(r["cpu"]), machine
    (tmp_path / "runs.jsonl").write_text("".join(json.dumps(r) + "\n" for r in runs))
    text = write_study_report(tmp_path).read_text()
    assert "**CPU-starved emulation** in 3 of 9 runs (dlcp 3)" in text
    assert f"more than {STARVED_WAIT_SHARE:.0%} of the run" in text
    rows = {line.split("|")[1].strip(): [c.strip() for c in line.split("|")[1:-1]]
            for line in text.split("## CPU")[1].splitlines() if line.startswith("| ") and "---" not in line}
    assert rows["dlcp"][5] == "3 of 3" and rows["tcp-cubic"][5] == "0 of 3"
    assert rows["dlcp"][4].endswith("(busy1)") or rows["dlcp"][4].endswith("(busy2)")
    assert json.loads((tmp_path / "summary.json").read_text())["jobs"]["ps"]["dlcp"]["starved_runs"] == 3


def test_report_of_runs_without_wait_figures_says_nothing_about_starvation(tmp_path):
    _synthetic(tmp_path)                        # older runs.jsonl: mean_core/peak_core only
    text = write_study_report(tmp_path).read_text()
    assert "starved" not in text.split("## CPU")[0]
    row = next(line for line in text.split("## CPU")[1].splitlines() if line.startswith("| dlcp"))
    assert row.split("|")[5].strip() == "-"


def test_study_time_estimate_keeps_the_fixed_part_and_scales_the_iterations(tmp_path):
    """From a calibration run's directory as the agents write it (tcp-bulk: server h1, workers h2, h4, h5)."""
    from mininet_topos.study import OTHER_MODES_MARGIN, Study, StudyConfig
    for host, slow in (("h2", 0.0), ("h4", 0.5), ("h5", 0.0)):
        (tmp_path / f"{host}.jsonl").write_text("".join(
            json.dumps({"event": "iteration", "iteration": i, "iter_seconds": 2.0 + slow}) + "\n" for i in range(3)))
    study = Study(StudyConfig(scenario="tcp-bulk", modes=("dlcp", "tcp-cubic"), seeds=5, iterations=12))
    run = {"dir": str(tmp_path), "mode": "dlcp", "seed": 1, "seconds": 19.5}
    fixed, per_it = 19.5 - 3 * 2.5, 2.5                   # the slowest worker's time per iteration
    assert study.estimate_study_s(run) == pytest.approx(5 * (2 * fixed + (1 + OTHER_MODES_MARGIN) * 12 * per_it))
    assert study.estimate_study_s(run, 0.6) == pytest.approx(
        5 * (2 * fixed + (1 + OTHER_MODES_MARGIN) * 12 * per_it / 0.6))


def test_a_study_that_keeps_its_speed_when_starved_still_slows_for_a_cpu_bound_switch():
    """make demo's setting: starvation alone keeps the speed (and says why), a CPU-bound switch does not."""
    starved = {"mode": "dlcp", "seed": 1, "cpu": {"switch:leaf1": {"mean_core": 0.3, "wait_share": 0.55}},
               "cpu_bound_switches": [], "starved_switches": ["leaf1"]}
    slower, note = calibration_decision(starved, 20.0, 0, 2, estimate_s=60, budget_s=None, keep_if_starved="the demo")
    assert slower is None and note.startswith("CPU-starved, kept 20 Mbit/s: the demo;")
    hot = {**starved, "cpu_bound_switches": ["leaf1"]}
    assert calibration_decision(hot, 20.0, 0, 2, estimate_s=60, budget_s=None, keep_if_starved="the demo")[0] == 12.0
    from mininet_topos.demo import DEMO_RUNS
    assert DEMO_RUNS[0][1].keep_speed_if_starved and DEMO_RUNS[0][1].calibrate
