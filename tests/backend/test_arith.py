"""Exact P4 bit-width arithmetic in generated code, checked on packets through V1ModelPath.

Expected values are worked out by hand from the P4_16 spec (section 8: wrap-around modulo 2^W,
saturating |+| |-|, arithmetic right shift for int<W>, ++ concatenation, slices, casts).
"""

from __future__ import annotations

import pytest

from .helpers import needs_frontend, path_for, simple_program

pytestmark = needs_frontend

HEADER = """
    bit<8> a; bit<8> b;
    bit<8> add; bit<8> sub; bit<8> sadd; bit<8> ssub; bit<8> shl; bit<8> shr;
    int<8> sa; int<8> sshr; bit<16> cat; bit<4> hi; bit<4> lo; bit<8> mul; bit<8> neg; bit<8> cmp;
    int<8> ss; bit<8> notb; bit<8> big_shift; bit<8> widen;
"""

INGRESS = """
    apply {
        hdr.h.add = hdr.h.a + hdr.h.b;
        hdr.h.sub = hdr.h.a - hdr.h.b;
        hdr.h.sadd = hdr.h.a |+| hdr.h.b;
        hdr.h.ssub = hdr.h.a |-| hdr.h.b;
        hdr.h.shl = hdr.h.a << 3;
        hdr.h.shr = hdr.h.a >> 3;
        hdr.h.sa = (int<8>)hdr.h.a |+| (int<8>)hdr.h.b;
        hdr.h.sshr = ((int<8>)hdr.h.a) >> 2;
        hdr.h.cat = hdr.h.a ++ hdr.h.b;
        hdr.h.hi = hdr.h.a[7:4];
        hdr.h.lo = hdr.h.b[3:0];
        hdr.h.mul = hdr.h.a * hdr.h.b;
        hdr.h.neg = -hdr.h.a;
        hdr.h.cmp = (hdr.h.a > hdr.h.b) ? 8w1 : 8w2;
        hdr.h.ss = (int<8>)hdr.h.a |-| (int<8>)hdr.h.b;
        hdr.h.notb = ~hdr.h.b;
        hdr.h.big_shift = hdr.h.a << hdr.h.b;
        hdr.h.widen = (bit<8>)(((bit<16>)hdr.h.a + (bit<16>)hdr.h.b) >> 1);
        sm.egress_spec = 1;
    }
"""


@pytest.fixture(scope="module")
def path(tmp_path_factory):
    return path_for(simple_program(tmp_path_factory.mktemp("arith"), HEADER, INGRESS))


def run(path, a: int, b: int) -> dict[str, int]:
    out = path.process(bytes([a, b]) + bytes(21), 0)
    assert len(out) == 1 and out[0][0] == 1
    d = out[0][1]
    assert len(d) == 23
    return {"add": d[2], "sub": d[3], "sadd": d[4], "ssub": d[5], "shl": d[6], "shr": d[7], "sa": d[8],
            "sshr": d[9], "cat": int.from_bytes(d[10:12], "big"), "hi": d[12] >> 4, "lo": d[12] & 15,
            "mul": d[13], "neg": d[14], "cmp": d[15], "ss": d[16], "notb": d[17], "big_shift": d[18],
            "widen": d[19]}


def test_unsigned_wraps_and_saturates(path):
    r = run(path, 0xF0, 0x20)
    assert r["add"] == 0x10            # 0x110 mod 2^8
    assert r["sub"] == 0xD0
    assert r["sadd"] == 0xFF           # saturates at 2^8-1
    assert r["ssub"] == 0xD0
    assert r["shl"] == 0x80            # 0x780 mod 2^8
    assert r["shr"] == 0x1E
    assert r["mul"] == 0x00            # 0x1E00 mod 2^8
    assert r["neg"] == 0x10            # 2^8 - 0xF0
    assert r["cmp"] == 1
    assert r["notb"] == 0xDF
    assert r["big_shift"] == 0         # shift by >= width gives 0
    assert r["widen"] == 0x88          # (0xF0 + 0x20) / 2 computed in 16 bits


def test_signed_saturation_and_arithmetic_shift(path):
    r = run(path, 0xF0, 0x20)          # as int<8>: -16 and 32
    assert r["sa"] == 0x10             # -16 + 32 = 16
    assert r["sshr"] == 0xFC           # -16 >> 2 = -4 (sign extends)
    assert r["ss"] == 0xD0             # -16 - 32 = -48
    r = run(path, 0x70, 0x20)          # 112 + 32 saturates at 127
    assert r["sa"] == 0x7F
    r = run(path, 0x90, 0x70)          # -112 - 112 saturates at -128
    assert r["ss"] == 0x80


def test_concat_slices_and_ternary(path):
    r = run(path, 0xAB, 0xCD)
    assert r["cat"] == 0xABCD
    assert r["hi"] == 0xA and r["lo"] == 0xD
    assert r["cmp"] == 2
    assert r["ssub"] == 0              # 0xAB - 0xCD saturates at 0
    assert r["big_shift"] == 0
