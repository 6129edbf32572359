"""Traffic-manager scenarios run against any switch harness (virtual ports or real veths).

A harness offers ``send(port, frames)``, ``collect(port, n, timeout) -> list[bytes]``,
``ctl(cmd, **args)`` (the ``p4sim ctl`` calls) and ``settle()``. Each scenario first sends a
large "blocker" packet that holds a slow link for ~100 ms, so every later packet is queued before
anything else leaves: the expected order and queue depths are then exact, not timing-dependent.
"""

from __future__ import annotations

from tests.switch.programs import probe_frame, read_probe

LINK_BPS = 80_000          # 1000-byte blocker: 100 ms; 100-byte probe: 10 ms
BLOCKER_SEQ = 1_000_000


def _blocker() -> bytes:
    return probe_frame(BLOCKER_SEQ, prio=0, size=1000)


def _probes(frames: list[bytes]) -> list[dict]:
    return [p for p in (read_probe(f) for f in frames) if p is not None]


def high_priority_overtakes(h) -> None:
    h.ctl("set_port_rate", port=2, bits=LINK_BPS)
    low = [probe_frame(i, prio=0) for i in range(6)]
    high = [probe_frame(100 + i, prio=7) for i in range(3)]
    h.send(1, [_blocker()] + low + high)
    got = _probes(h.collect(2, 10, timeout=5.0))
    assert [p["seq"] for p in got] == [BLOCKER_SEQ, 100, 101, 102, 0, 1, 2, 3, 4, 5]
    assert all(p["egress_port"] == 2 for p in got)


def qid_seen_by_program(h) -> None:
    """``@alias("queueing_metadata.qid")`` user metadata carries the queue that served the packet."""
    h.send(1, [probe_frame(i, prio=i % 8) for i in range(8)])
    got = _probes(h.collect(2, 8, timeout=3.0))
    assert sorted((p["seq"], p["qid"]) for p in got) == [(i, i) for i in range(8)]


def qdepth_metadata_matches_queue(h) -> None:
    h.ctl("set_port_rate", port=2, bits=LINK_BPS)
    n = 8
    h.send(1, [_blocker()] + [probe_frame(i) for i in range(n)])
    got = _probes(h.collect(2, n + 1, timeout=5.0))
    assert [p["seq"] for p in got] == [BLOCKER_SEQ] + list(range(n))
    probes = got[1:]
    # all n were queued behind the blocker: enq_qdepth counts those ahead, deq_qdepth those behind
    assert [p["enq_qdepth"] for p in probes] == list(range(n))
    assert [p["deq_qdepth"] for p in probes] == list(range(n - 1, -1, -1))
    # departure = enq_timestamp + deq_timedelta (us). The link never sends early: probe i leaves no
    # sooner than the blocker's 100 ms plus i probes of 10 ms after the blocker left (however late
    # the packet loop wakes, which is why this is a lower bound and not an equality).
    stamps = [p["enq_timestamp"] for p in probes]
    assert stamps == sorted(stamps)
    blocker_left = got[0]["enq_timestamp"] + got[0]["deq_timedelta"]
    departures = [p["enq_timestamp"] + p["deq_timedelta"] for p in probes]
    assert departures == sorted(departures)
    for i, left in enumerate(departures):
        assert left >= blocker_left + 100_000 + i * 10_000 - 2, (i, left - blocker_left)


def tail_drops_counted(h) -> None:
    h.ctl("set_port_rate", port=2, bits=LINK_BPS)
    h.ctl("set_queue_depth", depth=5, port=2, prio=0)
    h.send(1, [_blocker()] + [probe_frame(i) for i in range(20)])
    got = _probes(h.collect(2, 21, timeout=2.0))
    assert [p["seq"] for p in got] == [BLOCKER_SEQ, 0, 1, 2, 3, 4]
    q0 = h.ctl("show_queues")["ports"]["2"]["queues"][0]
    assert q0["tail_drops"] == 15
    assert q0["limit"] == 5


def out_of_range_priority_dropped(h) -> None:
    """Needs a switch with 4 priority queues: DSCP priorities 4..7 are >= N and dropped."""
    frames = [probe_frame(i, prio=i % 8) for i in range(16)]
    h.send(1, frames)
    got = _probes(h.collect(2, 16, timeout=1.0))
    assert sorted(p["seq"] for p in got) == [i for i in range(16) if i % 8 < 4]
    assert h.ctl("show_queues")["priority_drops"] == 8
