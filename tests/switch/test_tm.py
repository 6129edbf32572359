"""Traffic manager semantics with explicit clocks: strict priority, tail drops, rates, metadata."""

from __future__ import annotations

from dataclasses import dataclass

import pytest

from p4sim.switch.tm import PORT_CATCH_UP_NS, TrafficManager, TrafficManagerError

MS = 1_000_000  # ns


@dataclass
class Pkt:
    name: str
    length: int = 1000


def drain(tm: TrafficManager, start_ns: int, step_ns: int, steps: int) -> list:
    out = []
    for i in range(steps):
        out.extend(tm.dequeue_ready(start_ns + i * step_ns))
    return out


def test_strict_priority_overtakes_under_port_rate():
    tm = TrafficManager(priority_queues=8)
    tm.set_port_rate(1, 8_000_000)           # 1000-byte packets: 1 ms each
    t0 = 10 * MS
    for i in range(5):
        assert tm.enqueue(1, 0, Pkt(f"lo{i}"), t0)
    first = tm.dequeue_ready(t0)             # link idle: lo0 leaves, link busy for 1 ms
    assert [d.packet.name for d in first] == ["lo0"]
    for i in range(3):
        assert tm.enqueue(1, 7, Pkt(f"hi{i}"), t0 + 100_000)
    order = [d.packet.name for d in drain(tm, t0 + MS, MS, 10)]
    assert order == ["hi0", "hi1", "hi2", "lo1", "lo2", "lo3", "lo4"]
    assert tm.size == 0


def test_port_rate_paces_departures():
    tm = TrafficManager(priority_queues=8)
    tm.set_port_rate(2, 8_000_000)
    for i in range(3):
        tm.enqueue(2, 0, Pkt(str(i)), 0)
    assert len(tm.dequeue_ready(0)) == 1
    assert tm.dequeue_ready(MS - 1) == []
    assert tm.next_event_ns() == MS
    assert len(tm.dequeue_ready(MS)) == 1


def test_late_wake_up_sends_what_the_link_would_have_sent_up_to_the_catch_up_bound():
    """A loop that wakes late (a starved switch process) must not lose link time: every packet the
    link would have finished meanwhile leaves at once, up to PORT_CATCH_UP_NS of backlog."""
    tm = TrafficManager(priority_queues=1)
    tm.set_port_rate(1, 8_000_000)                   # 1000-byte packets: 1 ms each
    for i in range(100):
        tm.enqueue(1, 0, Pkt(str(i)), 0)
    assert len(tm.dequeue_ready(0)) == 1             # link busy until 1 ms
    late = 15 * MS                                   # the loop wakes 14 ms late
    assert late - MS < PORT_CATCH_UP_NS
    assert len(tm.dequeue_ready(late)) == 15         # starts at 1, 2, ..., 15 ms: all overdue
    assert tm.next_event_ns() == late + MS
    much_later = late + MS + 3 * PORT_CATCH_UP_NS    # a stall far beyond the bound
    burst = tm.dequeue_ready(much_later)
    assert len(burst) == PORT_CATCH_UP_NS // MS + 1  # the bound's worth, plus the one starting now
    assert tm.next_event_ns() == much_later + MS


def test_without_rate_everything_leaves_in_priority_order():
    tm = TrafficManager(priority_queues=4)
    tm.enqueue(1, 1, Pkt("a"), 0)
    tm.enqueue(1, 3, Pkt("b"), 0)
    tm.enqueue(1, 0, Pkt("c"), 0)
    tm.enqueue(1, 3, Pkt("d"), 0)
    assert [d.packet.name for d in tm.dequeue_ready(5)] == ["b", "d", "a", "c"]


def test_tail_drop_counted_per_queue():
    tm = TrafficManager(priority_queues=8, queue_depth=4)
    results = [tm.enqueue(3, 2, Pkt(str(i)), 0) for i in range(10)]
    assert results == [True] * 4 + [False] * 6
    q = tm.snapshot()["ports"]["3"]["queues"][2]
    assert (q["depth"], q["tail_drops"], q["enqueued"]) == (4, 6, 4)
    assert tm.enqueue(3, 1, Pkt("other queue"), 0)   # depth is per queue


def test_priority_out_of_range_dropped_and_counted():
    tm = TrafficManager(priority_queues=2)
    assert not tm.enqueue(1, 2, Pkt("x"), 0)
    assert not tm.enqueue(1, 7, Pkt("y"), 0)
    assert tm.enqueue(1, 1, Pkt("z"), 0)
    assert tm.priority_drops == 2
    assert tm.size == 1


def test_queue_metadata_matches_port_occupancy():
    tm = TrafficManager(priority_queues=8)
    tm.set_port_rate(1, 8_000_000)
    t0 = 5 * MS
    for i, prio in enumerate([0, 0, 5, 5, 0]):
        tm.enqueue(1, prio, Pkt(str(i)), t0 + i * 1000)
    # enq_qdepth: port occupancy (all priorities) before the packet was added, as BMv2
    got = drain(tm, t0 + 10_000, MS, 6)
    assert [d.packet.name for d in got] == ["2", "3", "0", "1", "4"]
    assert [d.enq_qdepth for d in got] == [2, 3, 0, 1, 4]
    assert [d.deq_qdepth for d in got] == [4, 3, 2, 1, 0]
    assert [d.qid for d in got] == [5, 5, 0, 0, 0]
    assert got[0].enq_timestamp == (t0 + 2000) // 1000
    assert got[1].deq_timedelta == (10_000 + MS - 3000) // 1000


def test_queue_rate_is_per_queue_not_shared():
    """BMv2 set_queue_rate: two queues at 1000 pps together send 2000 pps."""
    tm = TrafficManager(priority_queues=8)
    tm.set_queue_rate(1000, 1)
    for i in range(4):
        tm.enqueue(1, 0, Pkt(f"lo{i}"), 0)
        tm.enqueue(1, 7, Pkt(f"hi{i}"), 0)
    sent = drain(tm, 0, MS, 2)      # t=0 and t=1ms
    assert sorted(d.packet.name for d in sent) == ["hi0", "hi1", "lo0", "lo1"]


def test_queue_rate_strict_priority_among_due_queues():
    tm = TrafficManager(priority_queues=8)
    tm.set_queue_rate(1000, 1, 0)           # only queue 0 is paced
    for i in range(3):
        tm.enqueue(1, 0, Pkt(f"lo{i}"), 0)
    tm.enqueue(1, 4, Pkt("hi"), 0)
    assert [d.packet.name for d in tm.dequeue_ready(0)] == ["hi", "lo0"]
    assert tm.next_event_ns() == MS
    assert [d.packet.name for d in tm.dequeue_ready(MS)] == ["lo1"]


def test_settings_apply_to_future_ports_and_validate():
    tm = TrafficManager(priority_queues=4)
    tm.set_queue_depth(2)
    tm.set_queue_rate(500)
    snap_q = tm._port(9).queues[3]
    assert (snap_q.depth, snap_q.rate_pps) == (2, 500)
    tm.set_queue_depth(7, 9, 1)
    assert [q.depth for q in tm.ports[9].queues] == [2, 7, 2, 2]
    with pytest.raises(TrafficManagerError, match="priority 4"):
        tm.set_queue_depth(3, 9, 4)
    with pytest.raises(TrafficManagerError, match="at least 1"):
        tm.set_queue_depth(0)
    with pytest.raises(TrafficManagerError, match="negative"):
        tm.set_port_rate(1, -5)


def test_clear_drops_queued_packets():
    tm = TrafficManager(priority_queues=8)
    tm.enqueue(1, 0, Pkt("a"), 0)
    tm.clear()
    assert tm.size == 0 and tm.dequeue_ready(10) == [] and tm.next_event_ns() is None


def test_cut_through_only_when_nothing_would_wait():
    tm = TrafficManager(priority_queues=4)
    assert not tm.cut_through(1, 0, 100, 0)          # unknown port: go through enqueue once
    tm.enqueue(1, 0, Pkt("a"), 0)
    assert not tm.cut_through(1, 3, 100, 0)          # port not empty
    tm.dequeue_ready(0)
    assert tm.cut_through(1, 3, 100, 0)
    assert not tm.cut_through(1, 4, 100, 0)          # priority out of range: enqueue drops and counts
    tm.set_queue_rate(10, 1, 2)
    assert not tm.cut_through(1, 2, 100, 0)          # paced queue
    tm.set_port_rate(1, 1000)
    assert not tm.cut_through(1, 3, 100, 0)          # shared link
    q3 = tm.snapshot()["ports"]["1"]["queues"][3]
    assert (q3["enqueued"], q3["dequeued"]) == (1, 1)


def test_default_is_one_queue_as_simple_switch():
    """simple_switch without --priority-queues has one queue per port and drops priority >= 1
    (issue 17: STF runs passed on p4sim and lost packets on BMv2)."""
    tm = TrafficManager()
    assert tm.snapshot()["priority_queues"] == 1
    assert tm.enqueue(1, 0, Pkt("low"), 0) is True
    assert tm.enqueue(1, 1, Pkt("high"), 0) is False
    assert tm.snapshot()["priority_drops"] == 1
