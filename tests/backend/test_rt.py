"""Run-time helpers of generated code (no front end needed): csum16 folding, value sets,
lookahead, header stack shifts."""

from __future__ import annotations

import random

import pytest

from p4sim.backend import rt
from p4sim.runtime.hashes import csum16, pack_fields


def test_csum16_of_mod16_shifted_sum_equals_bmv2_csum16():
    rng = random.Random(7)
    for _ in range(5000):
        widths = [rng.choice([1, 3, 4, 8, 13, 16, 32, 48]) for _ in range(rng.randrange(1, 12))]
        fields = [(rng.choice([0, (1 << w) - 1, rng.getrandbits(w)]), w) for w in widths]
        shift = (sum(widths) + 15) // 16 * 16
        acc = 0
        for value, w in fields:          # what codegen emits: field << (offset % 16), summed
            shift -= w
            acc += value << (shift % 16)
        assert rt.csum16_int(acc) == csum16(pack_fields(fields))


def test_csum16_edge_cases():
    assert rt.csum16_int(0) == 0xFFFF                 # all-zero data
    assert rt.csum16_int(0xFFFF) == 0                 # sums to 0xFFFF, not 0
    assert rt.csum16_int(0xFFFF << 16 | 0xFFFF) == csum16(b"\xff\xff\xff\xff")


def test_value_set_matches_masked_members_and_rejects_overflow():
    vs = rt.ValueSet("p.vs", [8, 16], 2)
    vs.set([((0x10, 0xF0), (0x1234, 0xFFFF))])
    assert vs.matches((0x1F, 0x1234)) and not vs.matches((0x20, 0x1234))
    with pytest.raises(rt.ValueSetError, match="exceed its size"):
        vs.set([((1, 0xFF), (1, 0xFFFF))] * 3)
    with pytest.raises(rt.ValueSetError, match="does not fit"):
        vs.set([((0x100, 0xFF), (1, 0xFFFF))])


def test_lookahead_bits_and_too_short():
    data = bytes([0xAB, 0xCD, 0xEF])
    assert rt.lookahead_bits(data, 4, 8, 24, 1) == 0xBC
    with pytest.raises(rt.ParserReject) as err:
        rt.lookahead_bits(data, 16, 16, 24, 1)
    assert err.value.code == 1


class _H:
    def __init__(self, v: int = 0, valid: bool = False) -> None:
        self.v, self._v = v, valid


def test_stack_push_and_pop_front_shift_and_invalidate():
    s = rt.HeaderStack([_H(1, True), _H(2, True), _H(3, False)])
    s.n = 2
    rt.push_front(s, 1, _H)
    assert [(h.v, h._v) for h in s.h] == [(0, False), (1, True), (2, True)] and s.n == 3
    rt.pop_front(s, 2, _H)
    assert [(h.v, h._v) for h in s.h] == [(2, True), (0, False), (0, False)] and s.n == 1
    assert rt.stack_at(s, 7, _H)._v is False           # out of range reads a fresh invalid header


def test_packed_fields_equal_runtime_pack_fields():
    from p4sim.backend.externgen import ExternGen

    rng = random.Random(3)
    for _ in range(300):
        widths = [rng.choice([1, 3, 7, 8, 9, 16, 32, 48]) for _ in range(rng.randrange(1, 8))]
        values = [rng.getrandbits(w) for w in widths]
        code = ExternGen.packed_bytes([(str(v), w) for v, w in zip(values, widths, strict=True)])
        assert eval(code) == pack_fields(list(zip(values, widths, strict=True)))   # noqa: S307
    from p4sim.runtime.hashes import v1model_hash

    for algo in ("crc16", "crc32", "csum16", "xor16", "identity"):
        for base, max_ in ((0, 0), (5, 0), (0, 1 << 16), (3, 7), (10, 1 << 32)):
            fields = [(0x42, 8), (0x1234, 13), (1, 1)]
            assert rt.hash_packed(algo, base, pack_fields(fields), max_) == v1model_hash(algo, base, fields, max_)


def test_csum16_tail_term_equals_packing_a_runtime_width_last_field():
    """Fixed fields at their compile-time shifts plus ``csum16_tail`` of a last field whose width
    is known only at run time (IPv4 options: 0-320 bits, or 0 for an invalid header) equals
    csum16 over pack_fields of the whole list."""
    rng = random.Random(11)
    for _ in range(3000):
        widths = [rng.choice([1, 3, 4, 6, 8, 13, 16, 32]) for _ in range(rng.randrange(1, 13))]
        fields = [(rng.choice([0, (1 << w) - 1, rng.getrandbits(w)]), w) for w in widths]
        before = sum(widths)
        last_w = rng.choice([0, 8, 32, 64, 96, 320, rng.randrange(0, 321)])
        last_v = rng.getrandbits(400)            # wider than its width: masked, as pack_fields does
        shift = (before + 15) // 16 * 16
        acc = 0
        for value, w in fields:
            shift -= w
            acc += value << (shift % 16)
        acc += rt.csum16_tail(last_v, last_w, before)
        assert rt.csum16_int(acc) == csum16(pack_fields([*fields, (last_v, last_w)]))
