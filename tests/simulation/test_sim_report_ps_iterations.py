"""report.md's per-iteration table of a PS job: the background on the PS's host link per iteration.

Why this exists: a TCP baseline's iterations over a long run are not alike (session 18: DCTCP's iteration 5 of
the goal command met 35 MB of background into the PS and was 6x slower), and the table is what lets a reader
of report.md see which iterations met such flows. These records are written by hand so that every row's
figures are known: a flow that ended before an iteration's first gradient start is not in flight then, one
still open is counted whole, a flow that does not touch the PS is never counted.
"""

from __future__ import annotations

from simulation.job import JobResult
from simulation.job_report import ps_host, ps_iterations, write


def rec(i: int, kind: str, src: str, dst: str, nbytes: int, start_ms: float, fct_ms: float | None,
        iteration: int = -1) -> dict:
    return {"mode": "dctcp", "id": i, "kind": kind, "src": src, "dst": dst, "bytes": nbytes, "layer_class": 0,
            "iteration": iteration, "start_s": start_ms / 1e3, "completed": fct_ms is not None,
            "fct_s": fct_ms / 1e3 if fct_ms is not None else None, "dlcp": False}


TRANSFERS = [
    rec(0, "gradient", "h1", "h0", 10_000, 0.0, 0.1, 0),
    rec(1, "gradient", "h2", "h0", 10_000, 0.0, 0.3, 0),
    rec(2, "background", "h3", "h0", 5_000_000, 0.5, 0.4),    # into the PS, ends at 0.9 ms: before iteration 1
    rec(3, "background", "h4", "h0", 2_000_000, 0.8, 0.5),    # into the PS, ends at 1.3 ms: in flight at 1.0
    rec(4, "background", "h5", "h0", 7_000_000, 0.9, None),   # into the PS, never completed: in flight, whole
    rec(5, "background", "h6", "h7", 9_000_000, 0.95, None),  # not the PS's link
    rec(6, "gradient", "h1", "h0", 10_000, 1.0, 0.5, 1),
    rec(7, "gradient", "h2", "h0", 10_000, 1.2, 1.5, 1),
    rec(8, "background", "h0", "h8", 1_000_000, 1.1, 0.2),    # out of the PS during iteration 1, completed
    rec(9, "background", "h9", "h0", 1_000_000, 1.15, None),  # into the PS during iteration 1, open
]


def test_rows_count_the_background_on_the_ps_link_per_iteration():
    assert ps_host(TRANSFERS) == "h0"
    first, second = ps_iterations(TRANSFERS)
    assert (first["iteration"], first["into_ps_flows"], first["into_ps_mb"]) == (0, 0, 0.0)
    assert (first["ps_background_completed"], first["ps_background_started"]) == (2, 3)      # ids 2, 3 done; 4 open
    assert (first["mean_us"], first["completed"], first["gradients"]) == (200.0, 2, 2)
    assert (second["iteration"], second["first_start_ms"], second["start_spread_ms"]) == (1, 1.0, 0.2)
    assert (second["into_ps_flows"], second["into_ps_mb"]) == (2, 9.0)                        # ids 3 and 4
    assert (second["ps_background_completed"], second["ps_background_started"]) == (1, 2)     # ids 8, 9
    assert second["mean_us"] == 1000.0


def test_no_table_without_a_single_ps():
    ring = [rec(0, "gradient", "h1", "h2", 10_000, 0.0, 0.1, 0), rec(1, "gradient", "h2", "h1", 10_000, 0.0, 0.1, 0)]
    assert ps_host(ring) is None and ps_iterations(ring) == []


def test_report_md_has_the_table(tmp_path):
    run = JobResult("dctcp", TRANSFERS, [], {}, 2.7e-3, 1000, 1.0, 1.0, 0.1, 100.0, True, {"load": 0.6})
    text = write(tmp_path, [run], "# test").read_text()
    assert "Per iteration, dctcp load 0.6 (PS h0)" in text
    assert "| 1 | 2/2 | 1.0 | 0.2 | 1000.0 |" in text and "| 2 / 9.0 | 1 of 2 |" in text
