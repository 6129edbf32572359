"""Match engine: each match kind, priorities, LPM, validation errors, size limits, defaults."""

from __future__ import annotations

import tracemalloc

import pytest

from p4sim.errors import UserError
from p4sim.runtime.tables import (
    ActionCall,
    ConstDefaultAction,
    ConstEntry,
    EntryExists,
    EntryNotFound,
    Exact,
    InvalidEntry,
    KeyField,
    Lpm,
    Optional_,
    Range,
    Table,
    TableEntry,
    TableError,
    TableFull,
    Ternary,
)

A = ActionCall("ingress.a", (1,))
B = ActionCall("ingress.b", (2,))
ACTIONS = ["ingress.a", "ingress.b", "NoAction"]


def table(keys, size=1024, **kw):
    return Table("ingress.t", keys, size, ACTIONS, ActionCall("NoAction"), **kw)


def test_exact_hit_and_miss():
    t = table([KeyField("h.x", "exact", 16), KeyField("h.y", "exact", 8)])
    t.insert(TableEntry((Exact(0x1234), Exact(7)), A))
    assert t.lookup((0x1234, 7)).action == A
    assert t.lookup((0x1234, 8)) is None
    assert len(t) == 1


def test_lpm_longest_prefix_wins_regardless_of_order():
    t = table([KeyField("dst", "lpm", 32)])
    t.insert(TableEntry((Lpm(0x0A000000, 8),), A))
    t.insert(TableEntry((Lpm(0x0A010000, 16),), B))
    t.insert(TableEntry((None,), ActionCall("NoAction")))
    assert t.lookup((0x0A010203,)).action == B
    assert t.lookup((0x0A020304,)).action == A
    assert t.lookup((0x0B000000,)).action.name == "NoAction"
    t.delete(TableEntry((Lpm(0x0A010000, 16),), None))
    assert t.lookup((0x0A010203,)).action == A


def test_lpm_with_exact_field():
    t = table([KeyField("vrf", "exact", 8), KeyField("dst", "lpm", 32)])
    t.insert(TableEntry((Exact(1), Lpm(0x0A000000, 8)), A))
    assert t.lookup((1, 0x0A000001)).action == A
    assert t.lookup((2, 0x0A000001)) is None


def test_ternary_priority_larger_wins():
    t = table([KeyField("x", "ternary", 16)])
    t.insert(TableEntry((Ternary(0x0100, 0xFF00),), A, priority=1))
    t.insert(TableEntry((Ternary(0x0101, 0xFFFF),), B, priority=10))
    assert t.lookup((0x0101,)).action == B
    assert t.lookup((0x01FF,)).action == A
    t.insert(TableEntry((None,), ActionCall("NoAction"), priority=100))
    assert t.lookup((0x0101,)).action.name == "NoAction"


def test_equal_priority_first_inserted_wins():
    t = table([KeyField("x", "ternary", 8)])
    t.insert(TableEntry((Ternary(0, 0),), A, priority=5))
    t.insert(TableEntry((Ternary(1, 1),), B, priority=5))
    assert t.lookup((1,)).action == A


def test_range_and_optional():
    t = table([KeyField("p", "range", 16), KeyField("o", "optional", 8)])
    t.insert(TableEntry((Range(100, 200), Optional_(6)), A, priority=2))
    t.insert(TableEntry((Range(150, 300), None), B, priority=1))
    assert t.lookup((150, 6)).action == A
    assert t.lookup((150, 17)).action == B
    assert t.lookup((99, 6)) is None
    assert t.lookup((300, 1)).action == B
    assert t.lookup((301, 1)) is None


def test_memo_invalidated_on_insert():
    t = table([KeyField("x", "ternary", 8)])
    assert t.lookup((3,)) is None
    t.insert(TableEntry((Ternary(3, 0xFF),), A, priority=1))
    assert t.lookup((3,)).action == A


@pytest.mark.parametrize("keys,match,fragment", [
    ([KeyField("x", "exact", 8)], (Exact(256),), "does not fit in bit<8>"),
    ([KeyField("x", "ternary", 8)], (Ternary(0x11, 0x10),), "bits outside mask"),
    ([KeyField("x", "lpm", 32)], (Lpm(0x0A000001, 8),), "beyond the prefix"),
    ([KeyField("x", "lpm", 32)], (Lpm(0, 33),), "prefix length 33"),
    ([KeyField("x", "range", 8)], (Range(5, 4),), "low 5 > high 4"),
    ([KeyField("x", "exact", 8)], (Exact(1), Exact(2)), "match has 2 fields"),
    ([KeyField("x", "exact", 8)], (None,), "needs Exact"),
])
def test_invalid_entries_name_table_and_field(keys, match, fragment):
    t = table(keys)
    with pytest.raises(InvalidEntry) as err:
        t.insert(TableEntry(match, A, priority=1))
    assert fragment in str(err.value)
    assert "ingress.t" in str(err.value)
    assert isinstance(err.value, TableError) and isinstance(err.value, UserError)
    assert len(t) == 0


def test_unknown_action_rejected():
    t = table([KeyField("x", "exact", 8)])
    with pytest.raises(InvalidEntry, match="not one of"):
        t.insert(TableEntry((Exact(1),), ActionCall("egress.zzz")))


def test_duplicate_modify_delete_and_find():
    t = table([KeyField("x", "exact", 8)])
    t.insert(TableEntry((Exact(1),), A))
    with pytest.raises(EntryExists):
        t.insert(TableEntry((Exact(1),), B))
    t.modify(TableEntry((Exact(1),), B))
    assert t.lookup((1,)).action == B
    assert t.find((Exact(1),), 0).action == B
    t.delete(TableEntry((Exact(1),), None))
    assert t.lookup((1,)) is None
    with pytest.raises(EntryNotFound):
        t.delete(TableEntry((Exact(1),), None))
    with pytest.raises(EntryNotFound):
        t.modify(TableEntry((Exact(1),), A))


def test_ternary_identity_includes_priority():
    t = table([KeyField("x", "ternary", 8)])
    t.insert(TableEntry((Ternary(1, 0xFF),), A, priority=1))
    t.insert(TableEntry((Ternary(1, 0xFF),), B, priority=2))
    assert len(t) == 2
    assert t.lookup((1,)).action == B


def test_table_full():
    t = table([KeyField("x", "exact", 8)], size=2)
    t.insert(TableEntry((Exact(1),), A))
    t.insert(TableEntry((Exact(2),), A))
    with pytest.raises(TableFull):
        t.insert(TableEntry((Exact(3),), A))


def test_default_action_const_and_reset():
    t = table([KeyField("x", "exact", 8)])
    t.set_default(A)
    assert t.default_action == A
    t.reset_default()
    assert t.default_action == ActionCall("NoAction")
    c = table([KeyField("x", "exact", 8)], default_is_const=True)
    with pytest.raises(ConstDefaultAction):
        c.set_default(A)


def test_const_entries_survive_clear_and_refuse_changes():
    t = table([KeyField("x", "exact", 8)])
    t.insert(TableEntry((Exact(1),), A, is_const=True))
    t.insert(TableEntry((Exact(2),), B))
    t.clear()
    assert [e.match for e in t] == [(Exact(1),)]
    assert t.lookup((1,)).action == A and t.lookup((2,)) is None
    with pytest.raises(ConstEntry):
        t.delete(TableEntry((Exact(1),), None))


def test_keyless_table():
    t = table([])
    assert t.lookup(()) is None


def test_action_profile_table_entries():
    t = Table("ingress.ecmp", [KeyField("x", "exact", 8)], 16, ACTIONS, None, implementation="ingress.sel")
    t.insert(TableEntry((Exact(1),), None, group_id=5))
    assert t.lookup((1,)).group_id == 5
    with pytest.raises(InvalidEntry):
        t.insert(TableEntry((Exact(2),), A))


def test_100k_exact_entries_memory_under_100mb():
    tracemalloc.start()
    t = table([KeyField("x", "exact", 32)], size=200_000)
    for i in range(100_000):
        t.insert(TableEntry((Exact(i),), ActionCall("ingress.a", (i & 0x1FF,))))
    _, peak = tracemalloc.get_traced_memory()
    tracemalloc.stop()
    assert len(t) == 100_000
    assert t.lookup((99_999,)).action.args == (99_999 & 0x1FF,)
    assert peak < 100 * 1024 * 1024


def _reference_lookup(entries, keys, key):
    """Brute force: every entry checked field by field; highest priority, then first inserted."""
    best = None
    for e in entries:
        ok = True
        for kf, m, k in zip(keys, e.match, key, strict=True):
            full = (1 << kf.bitwidth) - 1
            if m is None:
                continue
            if isinstance(m, Exact) or isinstance(m, Optional_):
                ok = k == m.value
            elif isinstance(m, Ternary):
                ok = k & m.mask == m.value
            elif isinstance(m, Lpm):
                mask = (((1 << m.prefix_len) - 1) << (kf.bitwidth - m.prefix_len)) & full
                ok = k & mask == m.value
            elif isinstance(m, Range):
                ok = m.low <= k <= m.high
            if not ok:
                break
        if ok and (best is None or e.priority > best.priority):
            best = e
    return best


def test_scan_matches_brute_force_reference():
    import random

    rng = random.Random(7)
    keys = [KeyField("a", "ternary", 4), KeyField("b", "exact", 3), KeyField("c", "range", 10),
            KeyField("d", "lpm", 12), KeyField("e", "optional", 2)]
    t = table(keys, size=10_000)
    entries = []
    for _ in range(300):
        am = rng.getrandbits(4)
        lo = rng.randrange(1024)
        plen = rng.randrange(13)
        dmask = ((1 << plen) - 1) << (12 - plen)
        match = (Ternary(rng.getrandbits(4) & am, am) if rng.random() < 0.8 else None,
                 Exact(rng.randrange(8)),
                 Range(lo, rng.randrange(lo, 1024)) if rng.random() < 0.7 else None,
                 Lpm(rng.getrandbits(12) & dmask, plen),
                 Optional_(rng.randrange(4)) if rng.random() < 0.5 else None)
        e = TableEntry(match, A, priority=rng.randrange(1, 50))
        try:
            t.insert(e)
        except EntryExists:
            continue
        entries.append(e)
    for _ in range(2000):
        key = (rng.getrandbits(4), rng.randrange(8), rng.randrange(1024), rng.getrandbits(12), rng.randrange(4))
        assert t.lookup(key) is _reference_lookup(entries, keys, key)


@pytest.mark.parametrize("keys", [
    [KeyField("d", "lpm", 16)],
    [KeyField("v", "exact", 2), KeyField("d", "lpm", 16)],
])
def test_lpm_matches_brute_force_reference(keys):
    import random

    rng = random.Random(11)
    t = table(keys, size=10_000)
    entries = []
    for _ in range(400):
        plen = rng.randrange(17)
        mask = ((1 << plen) - 1) << (16 - plen)
        m = (Lpm(rng.getrandbits(16) & mask, plen),)
        if len(keys) == 2:
            m = (Exact(rng.randrange(4)),) + m
        # longest prefix wins: give the reference the prefix length as the priority
        e = TableEntry(m, A, priority=plen)
        try:
            t.insert(e)
        except EntryExists:
            continue
        entries.append(e)
    for _ in range(3000):
        key = (rng.getrandbits(16),) if len(keys) == 1 else (rng.randrange(4), rng.getrandbits(16))
        assert t.lookup(key) is _reference_lookup(entries, keys, key)
    for e in entries[::2]:
        t.delete(e)
    rest = entries[1::2]
    for _ in range(1000):
        key = (rng.getrandbits(16),) if len(keys) == 1 else (rng.randrange(4), rng.getrandbits(16))
        assert t.lookup(key) is _reference_lookup(rest, keys, key)


def test_scan_table_modify_and_delete_update_lookups():
    t = table([KeyField("x", "ternary", 8)])
    t.insert(TableEntry((Ternary(0x10, 0xF0),), A, priority=5))
    t.insert(TableEntry((Ternary(0x11, 0xFF),), A, priority=9))
    assert t.lookup((0x11,)).priority == 9           # memoised
    t.modify(TableEntry((Ternary(0x11, 0xFF),), B, priority=9))
    assert t.lookup((0x11,)).action == B
    with pytest.raises(EntryNotFound):
        t.modify(TableEntry((Ternary(0x11, 0xFF),), B, priority=8))   # priority is part of the key
    t.delete(TableEntry((Ternary(0x11, 0xFF),), None, priority=9))
    assert t.lookup((0x11,)).priority == 5
    assert t.find((Ternary(0x10, 0xF0),), 5).action == A
    assert t.find((Ternary(0x10, 0xF0),), 6) is None
