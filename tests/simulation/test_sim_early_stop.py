"""Early stop of `dlcp-sim` by a signal: what closed is written, and is what an unstopped run gives (issue 13).

Why this exists: a paper-144 DCTCP run costs ~800-1,000 CPU s per iteration, so its iterations are only ever
recorded by ending the run early. SIGTERM or SIGINT to dlcp-sim must reach every run's own process (--parallel
2 here: two spawned children), end each after its current slice and write the records of everything closed,
with a report and stdout that say the run was stopped, not complete; a second signal must end everything at
once. The test sends real signals to real processes: a scale-16 PS job at load 0.6 (DLCP and DCTCP at once) is
stopped once both have closed two iterations; a second run of the same command ending at the stop's simulated
time (--max-sim-ms) must give the same records (the runs are deterministic). The last test sends SIGINT twice
to the whole process group (Ctrl-C): the first must not abort the runs, the second must, writing nothing.
Budget: about 3-5 min (six ns-3 imports, two at a time).
"""

from __future__ import annotations

import json
import os
import re
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
ITERATIONS = 40
COMMAND = ["--preset", "scale-16", "--workload", "ps-train", "--modes", "dlcp,dctcp", "--scale", "0.0005",
           "--groups", "4", "--iterations", str(ITERATIONS), "--loads", "0.6", "--background-ms", "1",
           "--parallel", "2", "--crosscheck", "none"]
PROGRESS = re.compile(r"^\s+(\w[\w-]*): sim\s+([\d.]+) ms, iterations (\d+)/")


class Sim:
    """dlcp-sim in its own process group, its stderr collected line by line as it comes."""

    def __init__(self, out: Path, *args: str) -> None:
        self.proc = subprocess.Popen([sys.executable, "-m", "simulation.cli", *COMMAND, "--out", str(out), *args],
                                     cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                                     start_new_session=True)
        self.err: list[str] = []
        self.out: list[str] = []
        self.readers = [threading.Thread(target=lambda: self.err.extend(self.proc.stderr), daemon=True),
                        threading.Thread(target=lambda: self.out.extend(self.proc.stdout), daemon=True)]
        for reader in self.readers:
            reader.start()

    def closed(self) -> dict[str, int]:
        """Iterations closed per mode, from the latest progress lines."""
        seen: dict[str, int] = {}
        for line in list(self.err):
            m = PROGRESS.match(line)
            if m:
                seen[m[1]] = int(m[3])
        return seen

    def wait_until(self, cond, what: str, timeout: float = 900) -> None:
        end = time.monotonic() + timeout
        while not cond():
            if self.proc.poll() is not None:
                pytest.fail(f"dlcp-sim ended (rc {self.proc.returncode}) before {what}: {''.join(self.err)[-2000:]}")
            if time.monotonic() > end:
                self.proc.kill()
                pytest.fail(f"no {what} within {timeout} s: {''.join(self.err)[-2000:]}")
            time.sleep(0.2)

    def finish(self, timeout: float = 900) -> tuple[int, str]:
        self.proc.wait(timeout=timeout)
        for reader in self.readers:
            reader.join(timeout=10)
        return self.proc.returncode, "".join(self.out)

    def runs(self) -> list[int]:
        """Pids of the ns-3 runs' processes (the spawned children)."""
        kids = []                               # each spawned by one of dlcp-sim's threads
        for task in Path(f"/proc/{self.proc.pid}/task").iterdir():
            try:
                kids += (task / "children").read_text().split()
            except FileNotFoundError:
                pass
        found = []
        for k in kids:
            try:
                if b"spawn_main" in Path(f"/proc/{k}/cmdline").read_bytes():
                    found.append(int(k))
            except FileNotFoundError:
                pass
        return found


def records(out: Path, name: str) -> list[dict]:
    return [json.loads(line) for line in (out / name).read_text().splitlines()]


def test_sigterm_stops_every_run_and_writes_what_closed_as_an_unstopped_run_does(ns3_installed, tmp_path) -> None:
    stopped_dir, ref_dir = tmp_path / "stopped", tmp_path / "ref"
    sim = Sim(stopped_dir, "--max-sim-ms", "10")          # slices of 50 us
    sim.wait_until(lambda: len(sim.closed()) == 2 and min(sim.closed().values()) >= 2,
                   "two closed iterations in both runs")
    sim.proc.send_signal(signal.SIGTERM)                   # to dlcp-sim alone, not its children
    rc, out = sim.finish()
    assert rc == 0, "".join(sim.err)[-3000:]
    assert "dlcp-sim: SIGTERM: each running mode stops after its current slice" in "".join(sim.err)
    stops = {m[1]: float(m[2]) for m in re.finditer(
        r"dlcp-sim: (\w[\w-]*) load 0.6: stopped early by SIGTERM at ([\d.]+) ms simulated", out)}
    assert set(stops) == {"dlcp", "dctcp"}, out
    report = (stopped_dir / "report.md").read_text()
    assert "**Not a complete run.**" in report
    for mode, ms in stops.items():
        assert f"{mode} load 0.6: stopped early by SIGTERM at {ms:.3f} ms simulated" in report
    runs = {r["mode"]: r for r in json.loads((stopped_dir / "runs.json").read_text())}
    for mode, ms in stops.items():
        assert runs[mode]["finished"] is False
        assert runs[mode]["extra"]["stopped_early"] == {"signal": "SIGTERM", "sim_ms": pytest.approx(ms, abs=1e-3)}
    its = records(stopped_dir, "iterations.jsonl")
    transfers = records(stopped_dir, "transfers.jsonl")
    for mode in stops:
        closed = {r["iteration"] for r in its if r["mode"] == mode and r["iter_s"] is not None}
        assert 2 <= len(closed) < ITERATIONS, (mode, closed)

    # the same command, unstopped, ending at the later stop's simulated time
    end = max(stops.values())
    ref = Sim(ref_dir, "--max-sim-ms", f"{end:.3f}")
    rc, out = ref.finish()
    assert rc == 0 and "stopped early" not in out, "".join(ref.err)[-3000:]
    ref_its, ref_transfers = records(ref_dir, "iterations.jsonl"), records(ref_dir, "transfers.jsonl")
    for mode, ms in stops.items():
        mine = [r for r in its if r["mode"] == mode]
        theirs = {(r["worker"], r["iteration"]): r for r in ref_its if r["mode"] == mode}
        closed = [r for r in mine if r["iter_s"] is not None]
        assert closed and all(theirs[(r["worker"], r["iteration"])] == r for r in closed), mode
        done = [t for t in transfers if t["mode"] == mode and t["completed"]]
        ref_by_id = {t["id"]: t for t in ref_transfers if t["mode"] == mode}
        assert done and all(ref_by_id[t["id"]] == t for t in done), mode
        if ms == end:                  # stopped where the reference ended: every record is the same
            assert mine == [r for r in ref_its if r["mode"] == mode], mode
            assert [t for t in transfers if t["mode"] == mode] == list(ref_by_id.values()), mode


def test_a_second_sigint_to_the_group_aborts_at_once_and_writes_nothing(ns3_installed, tmp_path) -> None:
    sim = Sim(tmp_path / "aborted", "--max-sim-ms", "2000", "--iterations", "10000")   # 10-ms slices
    sim.wait_until(lambda: len(sim.runs()) == 2, "both runs started")
    children = sim.runs()
    time.sleep(5)
    os.killpg(sim.proc.pid, signal.SIGINT)                 # Ctrl-C: dlcp-sim and both runs get it
    time.sleep(3)
    assert sim.proc.poll() is None and all(Path(f"/proc/{c}").exists() for c in children), \
        "the first SIGINT aborted: " + "".join(sim.err)[-2000:]
    assert "dlcp-sim: SIGINT: each running mode stops after its current slice" in "".join(sim.err)
    t0 = time.monotonic()
    os.killpg(sim.proc.pid, signal.SIGINT)
    rc, _ = sim.finish(timeout=30)
    assert time.monotonic() - t0 < 10
    assert rc == 128 + signal.SIGINT, (rc, "".join(sim.err)[-2000:])
    assert "second SIGINT: runs killed, nothing written" in "".join(sim.err)
    assert not (tmp_path / "aborted").exists()
    time.sleep(0.5)
    for c in children:                                     # gone, or a zombie of a dead parent being reaped
        stat = Path(f"/proc/{c}/stat")
        assert not stat.exists() or stat.read_text().split(") ")[1].startswith("Z"), c
