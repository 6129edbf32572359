"""The report generator on synthetic records (it tests the report code, not the network)."""

import json

import pytest

from mininet_topos.report import PLOTS, iteration_times, percentile, summarise, write_report


def _records():
    recs = []
    for mode, base in (("dlcp", 0.1), ("baseline", 0.2)):
        for it in range(10):
            for worker, extra in (("h1", 0.0), ("h2", 0.05 * it)):
                recs.append({"mode": mode, "iteration": it, "worker": worker, "comm_time_s": base + extra,
                             "bytes": 1000, "retransmissions": 1 if mode == "baseline" else 0,
                             "lost_fraction": 0.02 if mode == "dlcp" else 0.0, "accuracy": 0.5 + it / 40})
    return recs


def test_iteration_time_is_the_slowest_worker():
    times = iteration_times(_records())
    assert times["dlcp"][9] == pytest.approx(0.1 + 0.45)
    assert len(times["baseline"]) == 10


def test_nearest_rank_percentile():
    assert percentile([1, 2, 3, 4], 50) == 2
    assert percentile([1, 2, 3, 4], 99) == 4
    assert percentile([5], 1) == 5


def test_summary_counts_drops_and_retransmissions():
    stats = [{"mode": "dlcp", "selective_drops": {"q1/m0": 7, "q1/m1": 3}, "critical_drops": 0}]
    by_mode = {s.mode: s for s in summarise(_records(), stats)}
    assert by_mode["dlcp"].selective_drops == 10
    assert by_mode["baseline"].retransmissions == 20
    assert by_mode["dlcp"].final_accuracy == pytest.approx(0.5 + 9 / 40)


def test_write_report_makes_markdown_and_all_plots(tmp_path):
    (tmp_path / "iterations.jsonl").write_text("\n".join(json.dumps(r) for r in _records()))
    (tmp_path / "switch_stats.jsonl").write_text(json.dumps({"mode": "dlcp", "selective_drops": {"q1/m0": 4}}))
    report = write_report(tmp_path, {"topo": "leaf-spine", "seed": 1})
    text = report.read_text()
    assert "DLCP p99 / baseline p99" in text and "| dlcp" in text
    for name in PLOTS:
        data = (tmp_path / name).read_bytes()
        assert data[:8] == b"\x89PNG\r\n\x1a\n" and len(data) > 1000


def test_missing_records_is_a_clear_error(tmp_path):
    with pytest.raises(ValueError, match="no iteration records"):
        write_report(tmp_path, {})
