"""Fluid schedules from each push's own start time (simulation.ideal --release), issue 13.

Why this exists: after iteration 0 a PS job's pushes are spread over ~200 us (each worker starts its
backward pass when its own pulls arrived), so the schedules that bound DLCP's steady-state mean FCT
must start each flow at its release time, and preemptive SRPT differs from smallest-first one at a
time. These are small cases worked by hand (1 byte per ns: a 1000-byte flow takes 1 us), and the
report's lag of a run's completions behind the whole-sender schedule.
"""

from __future__ import annotations

import json
from pathlib import Path

from simulation import ideal

LINK = 8e9
US = 1e-6


def _push(i: int, sender: str, start_us: float, size: int, fct_us: float | None = None) -> ideal.Push:
    return ideal.Push(i, sender, 1, start_us * US, size, None if fct_us is None else fct_us * US)


def _mean_us(pushes: list[ideal.Push], done: dict[int, float]) -> float:
    return sum(done[p.id] - p.start_s for p in pushes) / len(pushes) / US


def test_srpt_preempts_a_long_flow_for_a_short_one_released_later() -> None:
    pushes = [_push(0, "a", 0, 3000), _push(1, "b", 1, 1000)]
    # preemptive: a 0-1 us, b 1-2 (FCT 1), a 2-4 (FCT 4); one at a time without pre-emption: a 0-3, b 3-4
    assert abs(_mean_us(pushes, ideal.srpt_release(pushes, LINK)) - 2.5) < 1e-6
    assert abs(_mean_us(pushes, ideal.units_release(pushes, 1, LINK, False, True)) - 3.0) < 1e-6
    done = ideal.srpt_release(pushes, LINK)
    assert abs(done[1] - 2 * US) < 1e-12 and abs(done[0] - 4 * US) < 1e-12


def test_whole_senders_and_sharing_from_release_times() -> None:
    # sender a: two 1000-byte pushes at 0; sender b: one at 0.5 us. One sender at a time, earliest
    # first: a's end at 1 and 2 us, b's at 3 (FCT 2.5). Pushes two at once: a0 and a1 share 0-2 us
    # (both end at 2), b waits for a slot and runs 2-3 alone.
    pushes = [_push(0, "a", 0, 1000), _push(1, "a", 0, 1000), _push(2, "b", 0.5, 1000)]
    assert abs(_mean_us(pushes, ideal.units_release(pushes, 1, LINK, True)) - (1 + 2 + 2.5) / 3) < 1e-6
    assert abs(_mean_us(pushes, ideal.units_release(pushes, 2, LINK, False)) - (2 + 2 + 2.5) / 3) < 1e-6
    # two senders at once: a0 alone 0-0.5 us, then beside b at half the link (a0 ends at 1.5 us); a1
    # and b share 1.5-2.5 (b ends), a1 alone to 3.0
    two = ideal.units_release(pushes, 2, LINK, True)
    assert [round(two[i] / US, 6) for i in range(3)] == [1.5, 3.0, 2.5]


def test_release_report_of_a_result_directory(tmp_path: Path) -> None:
    rows = []
    for w in range(1, 31):
        for g, (layer, size) in enumerate(((1, 10924), (3, 11028), (5, 16012), (7, 13140))):
            rows.append({"id": 4 * w + g, "mode": "dlcp", "kind": "gradient", "src": f"h{w}", "dst": "h0",
                         "bytes": size, "layer_class": layer, "iteration": 1, "loss_bound": 0.1,
                         "start_s": 2e-6 * w, "fct_s": 400e-6})
    (tmp_path / "transfers.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))
    pushes = ideal.load_pushes(tmp_path, [1])
    assert len(pushes) == 120 and {p.sender for p in pushes} == {f"h{w}" for w in range(1, 31)}
    text = ideal.release_report(pushes, 100e9, [1, 28])
    assert "| **measured** | 400.0 |" in text and "| 100% |" in text
    srpt = _mean_us(pushes, ideal.srpt_release(pushes, 100e9))
    senders = _mean_us(pushes, ideal.units_release(pushes, 28, 100e9, True))
    assert srpt < senders < 400
    assert ideal.main([str(tmp_path), "--iteration", "1", "--release", "--k", "1,28"]) == 0
    assert ideal.main([str(tmp_path), "--iteration", "1", "--release", "--k", "0"]) == 2
