"""The shortcuts a large ``apply`` takes give the same answers as the slow, general code.

Entries built as wire bytes equal the protobuf-built ones; dotted quads and route prefixes parsed
without ``ipaddress`` agree with it (values and errors); a plan's first diff lines equal the
first of all its lines; a GC pause restores the collector's state, also when nested.
"""

from __future__ import annotations

import gc
import ipaddress
import random

import pytest

from controller import desired, netconfig, reconcile, wire
from controller import dlcp_tables as api
from controller.encoding import _ipv4
from controller.errors import ValueError_
from controller.gc_pause import BULK_OBJECTS, paused
from controller.netconfig import _prefix_text


def test_wire_built_entries_equal_protobuf_built(index):
    cases = [(api.route, (index, "10.1.0.0/16"), {"nexthop": 3}),
             (api.route, (index, "10.2.0.0/24"), {"group": 1}),
             (api.nexthop, (index, 7, 3, "02:00:00:00:01:00", "00:00:00:00:00:01"), {}),
             (api.ecmp_group, (index, 2, 4, True), {}),
             (api.ecmp_member, (index, 2, 1, 5), {}),
             (api.priority_rule, (index, {"layer_class": (3, 0x7)}, 2, 10), {}),
             (api.threshold, (index, 1, 15, 100, 50), {})]
    for fn, args, kwargs in cases:
        fast = fn(*args, **kwargs, wire=True)
        slow = fn(*args, **kwargs)
        assert isinstance(fast, wire.WireEntry)
        assert fast.wire == slow.SerializeToString()
        assert reconcile.entry_key(fast) == reconcile.entry_key(slow)
        assert reconcile.action_key(fast) == reconcile.action_key(slow)
        assert index.describe(fast) == index.describe(slow)
    with pytest.raises(ValueError_, match="does not fit in 9 bits"):
        api.nexthop(index, 1, 600, 0, 0, wire=True)


def test_dotted_quads_and_prefixes_agree_with_ipaddress():
    rng = random.Random(3)
    quads = ["0.0.0.0", "255.255.255.255", "01.2.3.4", "256.1.1.1", "1.2.3.00", "10.0.0.0"]
    quads += [".".join(str(rng.choice([0, 9, 10, 99, 255, rng.randint(0, 300)])) for _ in range(4))
              for _ in range(3000)]
    for text in quads:
        try:
            expected = int(ipaddress.IPv4Address(text))
        except ValueError as err:
            with pytest.raises(ValueError) as caught:
                _ipv4(text)
            assert str(caught.value) == str(err)
        else:
            assert _ipv4(text) == expected
    prefixes = ["20.0.0.0/24", "0.0.0.0/0", "10.0.0.1/24", "10.0.0.0/33", "10.0.0.0/08", "10.0.0.0",
                "01.0.0.0/8", "10.0.0.0/ 8", "1.2.3.4/-1"]
    for _ in range(3000):
        length = rng.randint(0, 32)
        number = rng.getrandbits(32)
        if rng.random() < 0.7:
            number &= ~((1 << (32 - length)) - 1) & 0xFFFFFFFF
        prefixes.append(f"{ipaddress.IPv4Address(number)}/{length}")
    for text in prefixes:
        try:
            expected = str(ipaddress.IPv4Network(text, strict=True))
        except ValueError as err:
            with pytest.raises(ValueError) as caught:
                _prefix_text(text)
            assert str(caught.value) == str(err)
        else:
            assert _prefix_text(text) == expected


def test_plan_lines_limit_is_a_prefix_of_all_lines(index, net_yaml):
    want = desired.build_switch(netconfig.load(net_yaml), index, "s1")
    stale = [api.nexthop(index, 9, 9, 0, 0), api.route(index, "10.9.0.0/16", nexthop=9)]
    plan = reconcile.diff("s1", {reconcile.entry_key(e): e for e in stale}, want, index, {})
    every = plan.lines(index)
    assert plan.size() == len(every) > 5
    for limit in (0, 1, 2, 5, len(every), len(every) + 3):
        assert plan.lines(index, limit) == every[:limit]


def test_gc_pause_restores_the_collector_state():
    assert gc.isenabled()
    gc.unfreeze()                        # an in-process p4sim server of an earlier test may have frozen some
    frozen = 0
    with paused():
        assert not gc.isenabled()
        junk = [[i] for i in range(5000)]
        with paused():
            assert not gc.isenabled()
        assert not gc.isenabled()     # only the outermost pause re-enables
        del junk
    assert gc.isenabled()
    assert gc.get_freeze_count() == frozen   # nothing left exempt from collection
    young_passes = gc.get_stats()[0]["collections"]
    with paused():                       # a bulk pause: what it allocated goes to the oldest generation
        junk = [[i] for i in range(BULK_OBJECTS + 1000)]
    more = [[i] for i in range(300)]     # allocations after it (fewer than the young threshold)
    assert gc.isenabled() and gc.get_freeze_count() == frozen
    assert gc.get_stats()[0]["collections"] == young_passes   # no deferred young pass over the pause's objects
    assert gc.get_count()[0] < 350
    del junk, more
    gc.disable()
    try:
        with paused():
            pass
        assert not gc.isenabled()     # a collector that was off stays off
    finally:
        gc.enable()
    gc.freeze()                          # someone else's freeze (a p4sim server's) is never thawed
    try:
        with paused():
            junk = [[i] for i in range(BULK_OBJECTS + 1000)]
        assert gc.get_freeze_count() > 0 and gc.isenabled()
    finally:
        gc.unfreeze()
        del junk
