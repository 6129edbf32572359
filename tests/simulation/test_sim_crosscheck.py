"""The Mininet cross-check's inputs and rules (simulation/crosscheck.py), no ns-3 needed.

Why this exists: the cross-check compares ns-3 with the Mininet runs on record; its reading of
those records must give the figures docs/experiments-history.md published from them (else the comparison
is against something else), its rebuild of the scenarios must carry the same jobs on the same
hosts, and bad input must be a one-line error that writes nothing. Every dlcp-sim report quotes the
recorded cross-check (simulation/data/crosscheck.json) with its date and commit. The ns-3 runs
themselves are the documented command (minutes). Budget: < 5 s.
"""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path

import pytest
import yaml

from simulation import cli
from simulation import crosscheck as cc


def _iters(name: str) -> dict:
    d = cc.RECORDS[name]
    return cc.iteration_times([json.loads(x) for x in (d / "iterations.jsonl").read_text().splitlines()],
                              "iter_time_s")


def test_records_give_the_published_iteration_means() -> None:
    """The Mininet reports of the records: tcp-bulk (session 15, docs/results/crosscheck-s15/; 6 seeds x 6
    iterations, 30 each) DLCP 1.414 / TCP cubic 2.204 s; ecmp-collision (session 16, docs/results/crosscheck-s16/:
    three studies of 8 seeds x 4 iterations merged) per study PS 1.449 / 1.478, 1.209 / 1.407, 1.177 / 1.302 s and
    ring 1.110 / 1.078, 0.814 / 1.028, 0.770 / 0.910 s; session 15's ecmp-collision record (8 seeds) PS 1.445 /
    1.474 s, ring 1.018 / 0.995 s: the slowest worker's time per iteration >= 1, as the reports'."""
    got = _iters("tcp-bulk")
    assert {k: (len(v), round(sum(v) / len(v), 3)) for k, v in got.items()} == {
        ("dlcp", "ps"): (30, 1.414), ("tcp-cubic", "ps"): (30, 2.204)}
    recs = [json.loads(x) for x in (cc.RECORDS["ecmp-collision"] / "iterations.jsonl").read_text().splitlines()]
    for first, (ps_d, ps_t, ring_d, ring_t) in ((1, (1.449, 1.478, 1.110, 1.078)), (9, (1.209, 1.407, 0.814, 1.028)),
                                                (17, (1.177, 1.302, 0.770, 0.910))):
        got = cc.iteration_times([r for r in recs if first <= r["seed"] < first + 8], "iter_time_s")
        assert {k: (len(v), round(sum(v) / len(v), 3)) for k, v in got.items()} == {
            ("dlcp", "ps"): (24, ps_d), ("tcp-cubic", "ps"): (24, ps_t),
            ("dlcp", "ring"): (24, ring_d), ("tcp-cubic", "ring"): (24, ring_t)}
    s15 = [json.loads(x) for x in (cc.DATA / "ecmp-collision-20261203-212102" / "iterations.jsonl").read_text()
           .splitlines()]
    assert {k: (len(v), round(sum(v) / len(v), 3)) for k, v in cc.iteration_times(s15, "iter_time_s").items()} == {
        ("dlcp", "ps"): (24, 1.445), ("tcp-cubic", "ps"): (24, 1.474),
        ("dlcp", "ring"): (24, 1.018), ("tcp-cubic", "ring"): (24, 0.995)}


def test_the_record_knows_every_tcp_runs_placement_and_each_first_run_of_a_seed_started_its_ring_late() -> None:
    """Session 16's ecmp-collision record: every TCP cubic run's ECMP placement (2-6 ring-PS collisions; the
    rebuild as is has 8), and the lone rings of 14 runs: the first run of a seed new to the machine (seeds 9-24;
    host_agent's ProfileWorkload then computes its torch gradients, ~/.cache/dlcp/torch-grads-<seed>.npz, in every
    ring agent before its first iteration). 16 placements of runs whose jobs overlapped are replayed in ns-3."""
    from simulation import ecmp_placement as ep
    d = cc.RECORDS["ecmp-collision"]
    runs = [json.loads(x) for x in (d / "runs.jsonl").read_text().splitlines()]
    recs = [json.loads(x) for x in (d / "iterations.jsonl").read_text().splitlines()]
    assert sorted(ep.collisions(r["placement"]) for r in runs if r["mode"] == "tcp-cubic") == [2] * 3 + [4] * 14 + [6] * 7
    assert all(r["placement"] is None for r in runs if r["mode"] == "dlcp")
    alone = _lone_rings(recs)
    assert alone == [("dlcp", s) for s in (9, 13, 15, 17, 19, 21, 23)] + [("tcp-cubic", s) for s in range(10, 25, 2)
                                                                          if s != 12]
    assert len(cc.record_placements(d)) == 16


def test_only_iterations_beside_the_other_job_compare_like_with_like() -> None:
    """Mininet's agents take seconds to start, so in the records' ecmp-collision study the ring began after the PS
    had ended in 8 of 16 runs (every other run: DLCP seeds 1, 3, 5, 7 and TCP cubic seeds 2, 4, 6, 8; each run's
    iteration times from its agents' files, ``iteration_starts``). Beside the PS: 10 ring iterations per mode of 24."""
    recs = [json.loads(x) for x in (cc.DATA / "ecmp-collision-20261203-212102" / "iterations.jsonl").read_text()
            .splitlines()]
    alone = _lone_rings(recs)
    assert alone == [("dlcp", s) for s in (1, 3, 5, 7)] + [("tcp-cubic", s) for s in (2, 4, 6, 8)]
    got = cc.iteration_times(recs, "iter_time_s", beside=True)
    assert {k: (len(v), round(sum(v) / len(v), 3)) for k, v in got.items()} == {
        ("dlcp", "ps"): (12, 1.544), ("tcp-cubic", "ps"): (11, 1.61),
        ("dlcp", "ring"): (10, 1.215), ("tcp-cubic", "ring"): (10, 1.283)}
    assert cc.iteration_times(recs, "iter_time_s") == _iters_of(recs)      # without ``beside``: every iteration


def _lone_rings(recs: list[dict]) -> list[tuple[str, int]]:
    """(mode, seed) of the runs whose ring began after the PS had ended."""
    span: dict[tuple, list[float]] = {}
    for r in recs:
        a, b = r["start_s"], r["start_s"] + r["iter_time_s"]
        w = span.setdefault((r["mode"], r["seed"], r["job"]), [a, b])
        w[0], w[1] = min(w[0], a), max(w[1], b)
    return sorted((m, s) for (m, s, j), (a, _) in span.items() if j == "ring" and a > span[(m, s, "ps")][1])


def _iters_of(recs: list[dict]) -> dict:
    return cc.iteration_times([{k: v for k, v in r.items() if k != "start_s"} for r in recs], "iter_time_s")


def test_ns3_iterations_run_back_to_back_from_zero() -> None:
    recs = [{"mode": "dlcp", "job": j, "worker": w, "iteration": i, "iter_s": t}
            for j, w, ts in (("ps", "h0", (1.0, 1.0, 1.0)), ("ring", "h2", (0.5, 0.5, 0.5, None)))
            for i, t in enumerate(ts)]
    timed = {(r["job"], r["iteration"]): r["start_s"] for r in cc.back_to_back(recs, "iter_s")}
    assert timed == {("ps", 0): 0.0, ("ps", 1): 1.0, ("ps", 2): 2.0,
                     ("ring", 0): 0.0, ("ring", 1): 0.5, ("ring", 2): 1.0, ("ring", 3): 1.5}
    got = cc.iteration_times([r | {"t": r["iter_s"]} for r in cc.back_to_back(recs, "iter_s")], "t", beside=True)
    assert got == {("dlcp", "ps"): [1.0], ("dlcp", "ring"): [0.5, 0.5]}   # the PS's iteration 2 is after the ring's end


def _study(tmp_path: Path, ends: dict[tuple[str, int], float]) -> tuple[Path, list[dict], list[dict]]:
    """A Mininet study directory as mininet_topos.study writes it: per run its agents' JSON lines, last written
    at ``ends`` (unix s); two PS workers h1, h2 (1 s iterations) and a ring rank h3 (0.5 s)."""
    runs, iters = [], []
    for (mode, seed), end in ends.items():
        d = tmp_path / f"seed{seed}-{mode}"
        d.mkdir()
        runs.append({"mode": mode, "seed": seed, "dir": f"/elsewhere/{d.name}"})
        for worker, job, t in (("h1", "ps", 1.0), ("h2", "ps", 1.0), ("h3", "ring", 0.5)):
            f = d / f"{worker}.jsonl"
            f.write_text("{}\n")
            os.utime(f, (end, end - (0.5 if worker == "h2" else 0.0)))
            iters += [{"scenario": "ecmp-collision", "job": job, "mode": mode, "seed": seed, "worker": worker,
                       "iteration": i, "iter_time_s": t} for i in range(3)]
    (tmp_path / "runs.jsonl").write_text("".join(json.dumps(r) + "\n" for r in runs))
    (tmp_path / "iterations.jsonl").write_text("".join(json.dumps(r) + "\n" for r in iters))
    return tmp_path, runs, iters


def test_iteration_starts_come_from_the_agents_files(tmp_path: Path) -> None:
    """An agent writes a line at each iteration's end: its file's last write ends its last iteration."""
    src, runs, iters = _study(tmp_path, {("dlcp", 1): 1000.0})
    cc.iteration_starts(src, runs, iters)
    got = {(r["worker"], r["iteration"]): r["start_s"] for r in iters}
    # h1 ends at 1000 after 3 x 1 s (began 997), h2 at 999.5 (996.5, the run's first), h3 at 1000 after 1.5 s
    assert got == {("h1", 0): 0.5, ("h1", 1): 1.5, ("h1", 2): 2.5, ("h2", 0): 0.0, ("h2", 1): 1.0, ("h2", 2): 2.0,
                   ("h3", 0): 2.0, ("h3", 1): 2.5, ("h3", 2): 3.0}
    (src / "seed1-dlcp" / "h3.jsonl").unlink()                  # a worker's file gone: no times for the run
    iters = [{k: v for k, v in r.items() if k != "start_s"} for r in iters]
    cc.iteration_starts(src, runs, iters)
    assert all("start_s" not in r for r in iters)


def test_extract_keeps_the_tcp_runs_placements(tmp_path: Path) -> None:
    """Each TCP cubic run's ECMP placement from the connections sampled while the study ran: a run owns those
    first seen after the previous run's end and by its own (the agents' files' last write)."""
    from simulation import ecmp_placement as ep
    src, _, _ = _study(tmp_path, {("dlcp", 1): 1000.0, ("tcp-cubic", 1): 1010.0, ("tcp-cubic", 2): 1020.0})
    ip = {h: f"10.0.{1 if int(h[1:]) <= 4 else 2}.{(int(h[1:]) - 1) % 4 + 1}" for h in
          ("h1", "h2", "h3", "h4", "h5", "h7", "h8")}
    (src / "net-tcp-cubic.yaml").write_text(yaml.safe_dump({"hosts": {h: {"ip": a} for h, a in ip.items()}}))
    pairs = [("h1", "h5"), ("h2", "h5"), ("h3", "h7"), ("h7", "h4"), ("h4", "h8"), ("h8", "h3")]   # who connects
    conns = [{"t": t, "local": f"{ip[a]}:{port + k}", "remote": f"{ip[b]}:9290"}
             for t, port in ((1005.0, 40000), (1015.0, 50000)) for k, (a, b) in enumerate(pairs)]
    (src / "conns.jsonl").write_text("".join(json.dumps(c) + "\n" for c in conns))
    assert cc.main(["--extract", str(src), str(tmp_path / "x"), "--tcp-conns", str(src / "conns.jsonl")]) == 0
    runs = {(r["mode"], r["seed"]): r for r in map(json.loads, (tmp_path / "x" / "runs.jsonl").read_text().splitlines())}
    assert runs[("dlcp", 1)]["placement"] is None
    for seed, port in ((1, 40000), (2, 50000)):
        sport = {f"{a}>{b}": port + k for k, (a, b) in enumerate(pairs)}
        want = {}
        for f in ep.FLOWS:
            a, b = f.split(">")
            fwd = sport.get(f)                                  # a connected to b: a's port, b's 9290; else b's
            s, d = (fwd, 9290) if fwd else (9290, sport[f"{b}>{a}"])
            want[f] = ep.member(ep.ip_int(ip[a]), ep.ip_int(ip[b]), s, d)
        assert runs[("tcp-cubic", seed)]["placement"] == want
    placements = [runs[("tcp-cubic", s)]["placement"] for s in (1, 2)]   # both runs' jobs overlap (_study)
    assert cc.record_placements(tmp_path / "x") == [p for i, p in enumerate(placements) if p not in placements[:i]]


def test_each_mininet_tcp_run_is_compared_with_ns3_at_its_placement(tmp_path: Path) -> None:
    """Per Mininet TCP cubic run: DLCP (every run) against that run beside the other job, and ns-3's DLCP run
    against its TCP cubic run at the same ECMP placement; a run whose jobs never overlapped has nothing to say."""
    p1, p2 = ({f: b for f in ep_flows()} for b in (0, 1))

    def job(mode: str, seed: int, ring_s: float, ring_start: float) -> list[dict]:
        return ([{"job": "ps", "mode": mode, "seed": seed, "worker": "h1", "iteration": i, "iter_time_s": 1.0,
                  "start_s": float(i)} for i in range(3)]
                + [{"job": "ring", "mode": mode, "seed": seed, "worker": "h3", "iteration": i, "iter_time_s": ring_s,
                    "start_s": ring_start + i * ring_s} for i in range(3)])
    recs = job("dlcp", 1, 0.6, 0.0) + job("tcp-cubic", 1, 0.5, 0.0) + job("tcp-cubic", 2, 0.5, 5.0)
    (tmp_path / "iterations.jsonl").write_text("".join(json.dumps(r) + "\n" for r in recs))
    (tmp_path / "runs.jsonl").write_text("".join(json.dumps(r) + "\n" for r in (
        {"mode": "dlcp", "seed": 1, "placement": None}, {"mode": "tcp-cubic", "seed": 1, "placement": p1},
        {"mode": "tcp-cubic", "seed": 2, "placement": p2})))
    assert cc.record_placements(tmp_path) == [p1]                    # seed 2's jobs never overlapped

    def sim(mode: str, ring_s: float) -> cc.SavedRun:
        return cc.SavedRun(mode, {}, [{"mode": mode, "job": j, "worker": w, "iteration": i, "iter_s": t}
                                      for j, w, t in (("ps", "h0", 1.0), ("ring", "h2", ring_s)) for i in range(3)])
    rows = cc.compare_placements([sim("dlcp", 0.4)], [(p2, sim("tcp-cubic", 0.8)), (p1, sim("tcp-cubic", 0.3))],
                                 tmp_path)
    assert [(r["seed"], r["collisions"]) for r in rows] == [(1, 8), (2, 8)]
    ring = rows[0]["ring"]
    assert (ring["mininet"], ring["mininet_direction"]) == ([0.6, 0.5], "DLCP higher")     # ring iterations 1-2
    assert (ring["ns3"], ring["ns3_direction"], ring["agree"]) == ([0.4, 0.3], "DLCP higher", True)
    assert rows[0]["ps"]["mininet"] == [1.0, 1.0] and rows[0]["ps"]["agree"] is False    # Mininet tie, ns-3 none
    assert rows[1]["ring"] is None and rows[1]["ps"] is None                # seed 2's ring began after the PS ended


def ep_flows() -> tuple[str, ...]:
    from simulation.ecmp_placement import FLOWS
    return FLOWS


def test_drops_per_run_by_queue_and_magnitude_group() -> None:
    runs = [json.loads(x) for x in (cc.RECORDS["tcp-bulk"] / "runs.jsonl").read_text().splitlines()]
    dlcp = cc.drops_per_run([r for r in runs if r["mode"] == "dlcp"])
    assert round(dlcp["total"]) == 154 and dlcp["q4"] == pytest.approx(151.667, abs=1e-3)   # report: 154 sel. drops/run
    assert round(dlcp["tail"]) == 158                                                          # report: 158 tail drops/run
    assert dlcp["total"] == pytest.approx(sum(dlcp[g] for g, _ in cc.MAG_GROUPS if g in dlcp))
    assert dlcp["total"] == pytest.approx(sum(v for k, v in dlcp.items() if k.startswith("q")))
    assert cc.drops_per_run([r for r in runs if r["mode"] == "tcp-cubic"]) == {"tail": pytest.approx(528.333, abs=1e-3)}


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
    # host_agent's PS plan (PsPlan): W1, b1, W2 in six slices, b2, W3, b3, each with its layer's class
    # (TagPolicy.layer_class of the six layers: 7, 6, 5, 3, 2, 1)
    assert ps.workload.layer_class == [7, 6, 5, 5, 5, 5, 5, 5, 3, 2, 1]
    assert sum(ps.workload.forward_s) + sum(ps.workload.backward_s) == pytest.approx(0.304656)   # compute_s on record
    six = cc.digits_wide(6, sliced=False)                   # one push per layer, as the records until session 15
    assert six.layer_class == [7, 6, 5, 3, 2, 1] and six.group_bytes[2] == 160_000 * 4
    assert (six.forward_s[2], six.backward_s[2]) == (ps.workload.forward_s[7], ps.workload.backward_s[7])
    assert [(s, d) for s, d, _, _ in bulk] == [(5, 0), (2, 4)]
    _, jobs, bulk, _ = cc.scenario("ecmp-collision")
    assert [(j.name, j.collective, j.hosts) for j in jobs] == [("ps", "ps", [4, 0, 1]), ("ring", "ring", [2, 6, 3, 7])]
    assert 127_000 * 4 < sum(jobs[1].workload.group_bytes) < 129_000 * 4   # resnet50 x 0.005: ~128k elements
    # the DLCP ring worker's tags: one bucket in flight, each inherits the front bucket's class (ring.py)
    assert jobs[1].workload.layer_class == [7, 7, 7, 7]
    assert not bulk
    with pytest.raises(KeyError, match="unknown scenario"):
        cc.scenario("incast")


def test_the_ps_job_pushes_the_hidden_layer_in_the_slices_and_order_of_a_worker() -> None:
    """A worker sends W2's slices in send() order, 110, 110, 110, 64, 32, 16 packets (overlap.py,
    PS_TAPER_PACKETS): the job's backward pass pushes groups in reverse, so they are listed reversed, and
    the layer's compute sits on the group pushed first (its forward waits for every slice)."""
    from host_agent.overlap import PsPlan
    ps = cc.digits_wide(6)
    packets = [-(-b // 1448) for b in ps.group_bytes]
    assert packets == [71, 2, 16, 32, 64, 110, 110, 110, 2, 12, 1]
    pushed = [packets[g] for g in reversed(range(len(packets))) if ps.layer_class[g] == 5]
    plan = PsPlan.build([(64, 400), (400,), (400, 400), (400,), (400, 10), (10,)], cc.PS_MTU)
    assert pushed == [-(-(b - a) // 362) for lay, a, b in plan.tensors if lay == 2] == [110, 110, 110, 64, 32, 16]
    assert [ps.backward_s[g] > 0 for g in range(2, 8)] == [False] * 5 + [True]
    assert [ps.forward_s[g] > 0 for g in range(2, 8)] == [False] * 5 + [True]


@pytest.mark.parametrize("argv, message", [
    (["--scenario", "incast"], "crosscheck: --scenario: unknown 'incast'"),
    (["--scenario", "tcp-bulk", "--mininet-tcp-bulk", "/nonexistent"], "crosscheck: --mininet-tcp-bulk: /nonexistent/runs.jsonl not found"),
    (["--extract", "/nonexistent", "x"], "crosscheck: --extract: /nonexistent holds no runs.jsonl"),
    (["--switch-rate-share", "0"], "crosscheck: --switch-rate-share: '0': expected one or two (DLCP, TCP cubic)"),
    (["--switch-rate-share", "0.5,x"], "crosscheck: --switch-rate-share: '0.5,x': expected one or two"),
    (["--switch-rate-share", "0.4,0.6,0.7"], "crosscheck: --switch-rate-share: '0.4,0.6,0.7': expected"),
    (["--tcp-conns", "/nonexistent"], "crosscheck: --tcp-conns: only with --extract"),
    (["--extract", str(cc.DATA / "tcp-bulk-20261203-211506"), "x", "--tcp-conns", "/nonexistent"],
     "crosscheck: --tcp-conns: /nonexistent not found"),
    (["--extract", str(cc.DATA / "tcp-bulk-20261203-211506"), "x", "--tcp-conns", __file__],
     f"crosscheck: --tcp-conns: {cc.DATA / 'tcp-bulk-20261203-211506'} holds no net-tcp-cubic.yaml"),
])
def test_bad_input_is_one_line_and_writes_nothing(argv: list[str], message: str, tmp_path: Path, capsys) -> None:
    out = tmp_path / "out"
    assert cc.main([*argv, "--out", str(out)]) == 2
    err = capsys.readouterr().err
    assert err.startswith(message) and err.count("\n") == 1
    assert not out.exists()


def test_every_report_quotes_the_recorded_crosscheck_with_its_date_and_commit(tmp_path: Path) -> None:
    recs = [cc.load_recorded(p) for p in cc.RECORDED]
    assert [r.get("switch_rate_share", 1.0) for r in recs] == [1.0, 0.5, {"dlcp": 0.8, "tcp-cubic": 0.87}]
    section = cc.report_section(list(cc.RECORDED))                       # as is, and the measured drain
    assert section.startswith("## Cross-check with Mininet")
    assert section.count("\n### ") == 3 and "### Switch ports at 0.5 x their link rate" in section
    assert "### Switch ports at 0.8 x their link rate in the dlcp runs and 0.87 x their link rate in the tcp-cubic" in section
    rows = [line for line in section.splitlines() if line.startswith("| ") and not line.startswith("| scenario")]
    assert len(rows) == sum(r["directions"] for rec in recs for r in rec["results"]) > 0
    assert sum(" yes |" in row for row in rows) == sum(r["directions_agree"] for rec in recs for r in rec["results"])
    for rec in recs:
        assert f"run {rec['date']} at commit {rec['commit']}" in section
        for res in rec["results"]:
            assert (f"`{res['scenario']}` (Mininet record" in section
                    and f"agree {res['directions_agree']} of {res['directions']}" in section)
    report = tmp_path / "report.md"                  # what dlcp-sim does after writing its report
    report.write_text("# a run\n")
    cli._append_crosscheck(report, list(cc.RECORDED))
    assert report.read_text() == "# a run\n\n" + section
    cli._append_crosscheck(report, None)             # --crosscheck none: left out
    assert report.read_text() == "# a run\n\n" + section


@pytest.mark.parametrize("content, message", [
    (None, "cannot read the cross-check record"),
    ("{\n  oops", ":2: not JSON"),
    ("[]", "not a cross-check record (no 'results' list"),           # the format before 2026-12-02 07:00
    ('{"results": [], "commit": "abc"}', "field 'date' missing"),
    ('{"results": [{"scenario": "x"}], "date": "d", "commit": "c"}', "results[0]: field 'comparisons' missing"),
])
def test_dlcp_sim_refuses_a_bad_crosscheck_record_before_running(content: str | None, message: str,
                                                                 tmp_path: Path, capsys) -> None:
    rec = tmp_path / "crosscheck.json"
    if content is not None:
        rec.write_text(content)
    out = tmp_path / "out"
    assert cli.main(["--crosscheck", str(rec), "--out", str(out)]) == 2
    err = capsys.readouterr().err
    assert err.startswith(f"dlcp-sim: --crosscheck: {rec}") and message in err and err.count("\n") == 1, err
    assert not out.exists()


def test_a_record_older_than_the_model_says_so() -> None:
    """The recorded runs name their commit; commits since then that touched the ns-3 model or the
    cross-check are counted (none from HEAD itself; unknown where git does not know the commit)."""
    assert cc.changes_since("HEAD") == 0
    assert cc.changes_since("0000000 (+ local changes in simulation/)") is None
    first = subprocess.run(["git", "-C", str(Path(cc.__file__).parent), "rev-list", "--max-parents=0", "HEAD"],
                           capture_output=True, text=True, check=False).stdout.split()
    if first:                                      # a shallow clone has no history to count
        assert cc.changes_since(first[0]) > 0
