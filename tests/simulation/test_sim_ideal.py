"""Fluid schedules at the PS's link (simulation.ideal), issue 13.

Why this exists: docs/simulation.md ("Where the mean FCT goes") sets the mean-FCT goal against what
schedules at the PS's link can give; these are the closed forms the fluid model must reproduce
(n equal flows: one at a time (n + 1) / 2 flow times on average, all at once n; whole senders) and a
real paper-144 record's schedules in their order (SRPT lowest, sharing highest).
"""

from __future__ import annotations

import json
from pathlib import Path

from simulation import ideal

LINK = 8e9                       # 1 byte per ns: a 1000-byte flow takes 1 us


def test_equal_flows_one_at_a_time_all_at_once_and_k_at_once() -> None:
    n = 10
    flows = [(f"h{i}", 1, 1000) for i in range(n)]
    assert abs(ideal.srpt_mean_s(flows, LINK) - (n + 1) / 2 * 1e-6) < 1e-12
    assert abs(ideal.sharing_mean_s(flows, LINK) - n * 1e-6) < 1e-12
    # two at a time: pairs finish together at 2, 4, ... 10 us
    assert abs(ideal.class_order_mean_s(flows, [1], 2, LINK) - 6e-6) < 1e-12


def test_whole_senders_send_their_flows_smallest_first() -> None:
    # two senders, each a 1000- and a 3000-byte flow; one sender at a time: 1, 4, 5, 8 us
    flows = [("a", 1, 3000), ("a", 3, 1000), ("b", 1, 3000), ("b", 3, 1000)]
    assert abs(ideal.per_sender_mean_s(flows, 1, LINK) - 4.5e-6) < 1e-12
    # by class, class 3 (the small ones) first: 1, 2, 5, 8 us; class 1 first: 3, 6, 7, 8 us
    assert abs(ideal.class_order_mean_s(flows, [3, 1], 1, LINK) - 4.0e-6) < 1e-12
    assert abs(ideal.class_order_mean_s(flows, [1, 3], 1, LINK) - 6.0e-6) < 1e-12
    assert abs(ideal.srpt_mean_s(flows, LINK) - 4.0e-6) < 1e-12


def test_report_of_a_result_directory(tmp_path: Path) -> None:
    rows = []
    for w in range(1, 41):
        for layer, size in ((1, 10924), (3, 11028), (5, 16012), (7, 13140)):
            rows.append({"mode": "dlcp", "kind": "gradient", "src": f"h{w}", "dst": "h0", "bytes": size,
                         "layer_class": layer, "iteration": 0, "loss_bound": 0.1})
    rows.append({"mode": "dlcp", "kind": "background", "src": "h1", "dst": "h2", "bytes": 10 ** 6,
                 "layer_class": 0, "iteration": -1})
    (tmp_path / "transfers.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))
    flows = ideal.load_flows(tmp_path, 0)
    assert len(flows) == 160
    means = {name: ideal.class_order_mean_s(flows, order, 1, 100e9) for name, order in
             (("up", [1, 3, 5, 7]), ("down", [7, 5, 3, 1]))}
    srpt, share = ideal.srpt_mean_s(flows, 100e9), ideal.sharing_mean_s(flows, 100e9)
    senders = [ideal.per_sender_mean_s(flows, k, 100e9) for k in (1, 12, 28)]
    assert srpt < means["up"] < senders[0] < senders[1] < senders[2] < share
    assert means["up"] < means["down"]
    assert ideal.main([str(tmp_path), "--k", "1,28"]) == 0
    assert ideal.main([str(tmp_path / "missing")]) == 2
