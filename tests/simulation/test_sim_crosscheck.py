"""The Mininet cross-check's inputs and rules (simulation/crosscheck.py), no ns-3 needed.

Why this exists: the cross-check compares ns-3 with the Mininet runs on record; its reading of
those records must give the figures docs/experiments.md published from them (else the comparison
is against something else), its rebuild of the scenarios must carry the same jobs on the same
hosts, and bad input must be a one-line error that writes nothing. The ns-3 runs themselves are
the documented command (minutes). Budget: < 5 s.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from simulation import crosscheck as cc


def _iters(name: str) -> dict:
    d = cc.RECORDS[name]
    return cc.iteration_times([json.loads(x) for x in (d / "iterations.jsonl").read_text().splitlines()],
                              "iter_time_s")


def test_records_give_the_published_iteration_means() -> None:
    """docs/experiments.md: tcp-bulk demo 01:35 DLCP 1.659 / TCP cubic 2.748 s (25 iterations each);
    ecmp-collision 19:18 PS 2.038 / 2.012 s, ring 1.445 / 1.122 s (15 each)."""
    mean = {k: round(sum(v) / len(v), 3) for k, v in _iters("tcp-bulk").items()}
    assert mean == {("dlcp", "ps"): 1.659, ("tcp-cubic", "ps"): 2.748}
    got = _iters("ecmp-collision")
    assert {k: (len(v), round(sum(v) / len(v), 3)) for k, v in got.items()} == {
        ("dlcp", "ps"): (15, 2.038), ("tcp-cubic", "ps"): (15, 2.012),
        ("dlcp", "ring"): (15, 1.445), ("tcp-cubic", "ring"): (15, 1.122)}


def test_drops_per_run_by_queue_and_magnitude_group() -> None:
    runs = [json.loads(x) for x in (cc.RECORDS["tcp-bulk"] / "runs.jsonl").read_text().splitlines()]
    dlcp = cc.drops_per_run([r for r in runs if r["mode"] == "dlcp"])
    assert dlcp["total"] == pytest.approx(206.8) and dlcp["q4"] == pytest.approx(200.8)   # docs: 207 sel. drops/run
    assert dlcp["total"] == pytest.approx(sum(dlcp[g] for g, _ in cc.MAG_GROUPS if g in dlcp))
    assert dlcp["total"] == pytest.approx(sum(v for k, v in dlcp.items() if k.startswith("q")))
    assert cc.drops_per_run([r for r in runs if r["mode"] == "tcp-cubic"]) == {"tail": pytest.approx(552.0)}


def test_direction_has_a_tie_band() -> None:
    assert cc.direction(2.079, 3.514) == "DLCP lower"
    assert cc.direction(1.445, 1.122) == "DLCP higher"
    assert cc.direction(2.038, 2.012) == "tie"
    assert cc.direction(1.0, 0.0) == "n/a"


def test_scenarios_carry_the_mininet_jobs() -> None:
    preset, jobs, bulk, iterations = cc.scenario("tcp-bulk")
    assert (preset, iterations) == ("mininet-tcp-bulk", 6)
    (ps,) = jobs
    assert ps.hosts == [0, 1, 3, 4]                         # server h1 <- h2, h4, h5 (Mininet names)
    assert sum(ps.workload.group_bytes) == 190_410 * 4      # digits-wide: 530 packets per worker
    assert ps.workload.layer_class == [7, 6, 5, 3, 2, 1]    # TagPolicy.layer_class of the six tensors
    assert sum(ps.workload.forward_s) + sum(ps.workload.backward_s) == pytest.approx(0.304656)   # compute_s on record
    assert [(s, d) for s, d, _, _ in bulk] == [(5, 0), (2, 4)]
    _, jobs, bulk, _ = cc.scenario("ecmp-collision")
    assert [(j.name, j.collective, j.hosts) for j in jobs] == [("ps", "ps", [4, 0, 1]), ("ring", "ring", [2, 6, 3, 7])]
    assert 127_000 * 4 < sum(jobs[1].workload.group_bytes) < 129_000 * 4   # resnet50 x 0.005: ~128k elements
    assert not bulk
    with pytest.raises(KeyError, match="unknown scenario"):
        cc.scenario("incast")


@pytest.mark.parametrize("argv, message", [
    (["--scenario", "incast"], "crosscheck: --scenario: unknown 'incast'"),
    (["--scenario", "tcp-bulk", "--mininet-tcp-bulk", "/nonexistent"], "crosscheck: --mininet-tcp-bulk: /nonexistent/runs.jsonl not found"),
    (["--extract", "/nonexistent", "x"], "crosscheck: --extract: /nonexistent holds no runs.jsonl"),
])
def test_bad_input_is_one_line_and_writes_nothing(argv: list[str], message: str, tmp_path: Path, capsys) -> None:
    out = tmp_path / "out"
    assert cc.main([*argv, "--out", str(out)]) == 2
    err = capsys.readouterr().err
    assert err.startswith(message) and err.count("\n") == 1
    assert not out.exists()
