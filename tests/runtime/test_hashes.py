"""BMv2 hash algorithms against published check values, field packing, v1model base/max."""

from __future__ import annotations

import pytest

from p4sim.errors import UserError
from p4sim.runtime import hashes
from p4sim.runtime.checksums import compute_checksum, update_checksum, verify_checksum

CHECK = b"123456789"
# An IPv4 header (checksum field zeroed) whose correct checksum is 0xB861.
IPV4 = bytes.fromhex("450000730000400040110000c0a80001c0a800c7")


@pytest.fixture(autouse=True)
def _defaults():
    hashes.reset_crc_parameters()
    yield
    hashes.reset_crc_parameters()


def test_crc_check_values():
    assert hashes.compute("crc16", CHECK) == 0xBB3D          # CRC-16/ARC
    assert hashes.compute("crc32", CHECK) == 0xCBF43926      # CRC-32
    assert hashes.compute("crc16_custom", CHECK) == 0xBB3D   # defaults = crc16
    assert hashes.compute("crc32_custom", CHECK) == 0xCBF43926


def test_crc_custom_parameters():
    # CRC-16/CCITT-FALSE: poly 0x1021, init 0xFFFF, no reflection -> 0x29B1
    hashes.set_crc_parameters("crc16_custom", 0x1021, 0xFFFF, 0, False, False)
    assert hashes.compute("crc16_custom", CHECK) == 0x29B1
    # CRC-32C (Castagnoli): poly 0x1EDC6F41 reflected -> 0xE3069283
    hashes.set_crc_parameters("crc32_custom", 0x1EDC6F41, 0xFFFFFFFF, 0xFFFFFFFF, True, True)
    assert hashes.compute("crc32_custom", CHECK) == 0xE3069283
    with pytest.raises(hashes.HashError):
        hashes.set_crc_parameters("crc16_custom", 0x18005, 0, 0, True, True)


def test_csum16_ipv4_header():
    assert hashes.compute("csum16", IPV4) == 0xB861
    with_sum = IPV4[:10] + b"\xb8\x61" + IPV4[12:]
    assert hashes.compute("csum16", with_sum) == 0


def test_csum16_odd_length_pads_right():
    assert hashes.compute("csum16", b"\x01") == (~0x0100) & 0xFFFF


def test_xor16_and_identity():
    assert hashes.compute("xor16", bytes.fromhex("1234abcd")) == 0x1234 ^ 0xABCD
    assert hashes.compute("xor16", bytes.fromhex("1234ab")) == 0x1234 ^ 0xAB00
    assert hashes.compute("identity", bytes.fromhex("0a0b")) == 0x0A0B
    assert hashes.compute("identity", bytes(range(1, 11))) == 0x0102030405060708


def test_random_and_unknown_rejected():
    with pytest.raises(hashes.HashError, match="BMv2"):
        hashes.compute("random", b"")
    with pytest.raises(UserError, match="unknown hash algorithm"):
        hashes.check_algorithm("md5")


def test_pack_fields_bit_contiguous_msb_first():
    assert hashes.pack_fields([(0xABC, 12)]) == bytes.fromhex("abc0")
    assert hashes.pack_fields([(1, 1), (0, 3), (0xF, 4)]) == bytes.fromhex("8f")
    assert hashes.pack_fields([(0x1FF, 9), (0x7F, 7)]) == bytes.fromhex("ffff")
    assert hashes.pack_fields([(0x0A000001, 32), (6, 8)]) == bytes.fromhex("0a00000106")
    assert hashes.pack_fields([(0x1FF, 8)]) == b"\xff"  # value truncated to its width


def test_v1model_hash_base_max():
    fields = [(0x0A000001, 32)]
    h = hashes.compute("crc32", bytes.fromhex("0a000001"))
    assert hashes.v1model_hash("crc32", 0, fields, 4) == h % 4
    assert hashes.v1model_hash("crc32", 100, fields, 16) == 100 + h % 16
    assert hashes.v1model_hash("crc32", 7, fields, 0) == 7          # max 0 acts as 1
    assert hashes.v1model_hash("identity", 0, [(0xABCD, 16)], 1 << 16) == 0xABCD


def test_checksum_helpers():
    words = [(int.from_bytes(IPV4[i:i + 2], "big"), 16) for i in range(0, 20, 2)]
    assert compute_checksum("csum16", words) == 0xB861
    assert update_checksum(True, words, 0, "csum16") == 0xB861
    assert update_checksum(False, words, 0x1234, "csum16") == 0x1234
    fields_wo = words[:5] + words[6:]
    assert verify_checksum(True, fields_wo, 0xB861, "csum16")
    assert not verify_checksum(True, fields_wo, 0xB862, "csum16")
    assert verify_checksum(False, fields_wo, 0xDEAD, "csum16")
    assert compute_checksum("csum16", [(0x4500, 16)], payload=b"\x00\x01") == (~0x4501) & 0xFFFF


def test_csum16_matches_word_by_word_sum():
    import random

    rng = random.Random(3)
    samples = [b"", b"\x00\x00", b"\xff\xff", b"\xff\xff\xff\xff", b"\x00\x01\xff\xfe"]
    samples += [bytes(rng.getrandbits(8) for _ in range(rng.randrange(1, 64))) for _ in range(300)]
    for data in samples:
        padded = data + b"\x00" * (len(data) % 2)
        total = 0
        for i in range(0, len(padded), 2):
            total += int.from_bytes(padded[i:i + 2], "big")
            total = (total & 0xFFFF) + (total >> 16)
        assert hashes.compute("csum16", data) == (~total) & 0xFFFF, data.hex()


def test_fast_paths_equal_the_general_algorithms():
    """compute()'s fixed-algorithm table and crc16's precomputed form give what the general CRC
    engine gives (a copy of the default configuration takes the general path), and the csum16
    checksum of a field list equals csum16 of the packed bytes, for odd and even bit counts,
    zero-width (invalid header) fields and all-zero data."""
    import random
    import zlib

    rng = random.Random(7)
    crc16_general = hashes.CrcConfig(**vars(hashes.CRC16_DEFAULT))
    assert crc16_general is not hashes.CRC16_DEFAULT
    for _ in range(300):
        data = bytes(rng.getrandbits(8) for _ in range(rng.randrange(0, 48)))
        assert hashes.compute("crc16", data) == hashes.crc(crc16_general, data)
        assert hashes.compute("crc32", data) == zlib.crc32(data)
    widths = (0, 1, 3, 4, 6, 7, 8, 13, 16, 32, 48)
    cases = [[], [(0, 16)] * 3, [(0xFFFF, 16)], [(1, 4), (0, 0)]]
    cases += [[(rng.getrandbits(48), rng.choice(widths)) for _ in range(rng.randrange(0, 14))] for _ in range(500)]
    for fields in cases:
        expected = hashes.csum16(hashes.pack_fields(fields))
        assert compute_checksum("csum16", fields) == expected, fields
        assert compute_checksum("csum16", fields, width=8) == expected & 0xFF
        assert verify_checksum(True, fields, expected, "csum16")
