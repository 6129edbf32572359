"""BMv2's hash algorithms, bit for bit, and the v1model ``hash()`` base/max semantics.

A program hashed on p4sim must pick the same ECMP path, register slot or selector member as on
simple_switch, so every algorithm here follows BMv2's ``src/bm_sim/calculations.cpp``:

* ``crc16``: CRC-16/ARC (poly 0x8005, init 0, input and output reflected, xorout 0);
* ``crc32``: CRC-32/ISO-HDLC (poly 0x04C11DB7, init and xorout 0xFFFFFFFF, reflected);
* ``crc16_custom`` / ``crc32_custom``: a configurable CRC (poly, init, xorout, data and
  remainder reflection) whose defaults equal the non-custom ones (``set_crc_parameters``);
* ``identity``: the first (up to) 8 bytes of the input, big-endian;
* ``csum16``: the Internet checksum (ones' complement of the ones' complement sum of 16-bit
  big-endian words, an odd tail padded with a zero byte);
* ``xor16``: XOR of 16-bit big-endian words, an odd tail padded with a zero byte.

Field lists are serialised as BMv2's ``BufBuilder`` does: fields packed back to back, most
significant bit first, with no padding between them, and the whole buffer zero-padded at the end
to a whole number of bytes. ``HashAlgorithm.random`` is not a BMv2 hash and is rejected.
"""

from __future__ import annotations

import zlib
from dataclasses import dataclass
from functools import lru_cache

from p4sim.errors import UserError

ALGORITHMS = ("crc32", "crc32_custom", "crc16", "crc16_custom", "identity", "csum16", "xor16")


class HashError(UserError):
    """An unknown or unsupported hash algorithm, or a bad custom CRC configuration."""


@dataclass(frozen=True)
class CrcConfig:
    width: int
    polynomial: int
    initial_remainder: int
    final_xor_value: int
    data_reflected: bool
    remainder_reflected: bool


CRC16_DEFAULT = CrcConfig(16, 0x8005, 0x0000, 0x0000, True, True)
CRC32_DEFAULT = CrcConfig(32, 0x04C11DB7, 0xFFFFFFFF, 0xFFFFFFFF, True, True)

# Per-process custom CRC configuration, as BMv2's CustomCrcMgr holds it per calculation.
_custom: dict[str, CrcConfig] = {"crc16_custom": CRC16_DEFAULT, "crc32_custom": CRC32_DEFAULT}


def set_crc_parameters(algorithm: str, polynomial: int, initial_remainder: int, final_xor_value: int,
                       data_reflected: bool, remainder_reflected: bool) -> None:
    """Configure ``crc16_custom`` or ``crc32_custom`` (BMv2 ``set_crc16_parameters``...)."""
    if algorithm not in _custom:
        raise HashError(f"hash algorithm {algorithm!r} is not configurable "
                        f"(crc16_custom, crc32_custom are)")
    width = _custom[algorithm].width
    limit = (1 << width) - 1
    for what, v in (("polynomial", polynomial), ("initial remainder", initial_remainder),
                    ("final xor value", final_xor_value)):
        if not 0 <= v <= limit:
            raise HashError(f"{algorithm}: {what} {v:#x} does not fit in {width} bits")
    _custom[algorithm] = CrcConfig(width, polynomial, initial_remainder, final_xor_value,
                                   bool(data_reflected), bool(remainder_reflected))


def reset_crc_parameters() -> None:
    """Restore the BMv2 defaults of the custom CRCs."""
    _custom["crc16_custom"] = CRC16_DEFAULT
    _custom["crc32_custom"] = CRC32_DEFAULT


def _reflect(value: int, nbits: int) -> int:
    out = 0
    for _ in range(nbits):
        out = (out << 1) | (value & 1)
        value >>= 1
    return out


_REFLECT8 = tuple(_reflect(b, 8) for b in range(256))


@lru_cache(maxsize=16)
def _crc_table(width: int, polynomial: int) -> tuple[int, ...]:
    top = 1 << (width - 1)
    mask = (1 << width) - 1
    table = []
    for dividend in range(256):
        rem = dividend << (width - 8)
        for _ in range(8):
            rem = ((rem << 1) ^ polynomial) if rem & top else (rem << 1)
        table.append(rem & mask)
    return tuple(table)


@lru_cache(maxsize=16)
def _crc_table_reflected(width: int, polynomial: int) -> tuple[int, ...]:
    rpoly = _reflect(polynomial, width)
    table = []
    for dividend in range(256):
        rem = dividend
        for _ in range(8):
            rem = (rem >> 1) ^ rpoly if rem & 1 else rem >> 1
        table.append(rem)
    return tuple(table)


def crc(config: CrcConfig, data: bytes) -> int:
    """Table-driven CRC giving exactly what BMv2's ``crc_custom`` computes."""
    if config is CRC32_DEFAULT or config == CRC32_DEFAULT:
        return zlib.crc32(data)
    if config is CRC16_DEFAULT:
        return _crc16_arc(data)
    width = config.width
    if config.data_reflected and config.remainder_reflected:
        # the reflected (LSB-first) form of the same CRC: one table lookup per byte, no reflects
        table = _crc_table_reflected(width, config.polynomial)
        rem = _reflect(config.initial_remainder, width)
        for byte in data:
            rem = (rem >> 8) ^ table[(rem ^ byte) & 0xFF]
        return rem ^ config.final_xor_value
    mask = (1 << width) - 1
    shift = width - 8
    table = _crc_table(width, config.polynomial)
    rem = config.initial_remainder
    if config.data_reflected:
        for byte in data:
            rem = (table[_REFLECT8[byte] ^ (rem >> shift)] ^ (rem << 8)) & mask
    else:
        for byte in data:
            rem = (table[byte ^ (rem >> shift)] ^ (rem << 8)) & mask
    if config.remainder_reflected:
        rem = _reflect(rem, width)
    return rem ^ config.final_xor_value


_CRC16_ARC_TABLE = _crc_table_reflected(16, 0x8005)


def _crc16_arc(data: bytes) -> int:
    """CRC-16/ARC (``crc16``, BMv2's default): the reflected table form with init 0 and xorout 0,
    so neither needs reflecting per call (the switch hashes every sprayed or ECMP packet)."""
    table = _CRC16_ARC_TABLE
    rem = 0
    for byte in data:
        rem = (rem >> 8) ^ table[(rem ^ byte) & 0xFF]
    return rem


def csum16(data: bytes) -> int:
    """The Internet checksum (RFC 1071) of ``data``, as a 16-bit big-endian value.

    The ones' complement sum of 16-bit words is congruent to the whole buffer read as one
    big-endian number modulo 0xFFFF (2**16 == 1 mod 0xFFFF), and is 0 only for all-zero data.
    """
    if len(data) % 2:
        data = data + b"\x00"
    return csum16_int(int.from_bytes(data, "big"))


def csum16_int(value: int) -> int:
    """The ones' complement checksum (v1model ``csum16``) of a bit string held as an int whose
    width is a multiple of 16 -- or of any int congruent to it modulo 0xFFFF that is zero only
    when the bit string is; equal to ``csum16`` over the same bytes.

    Since 2**16 == 1 (mod 0xFFFF), the end-around-carry sum of the 16-bit words is the value
    modulo 0xFFFF, except that a non-zero multiple of 0xFFFF sums to 0xFFFF, not 0.
    """
    r = value % 0xFFFF
    if r == 0 and value:
        r = 0xFFFF
    return ~r & 0xFFFF


def xor16(data: bytes) -> int:
    if len(data) % 2:
        data = data + b"\x00"
    out = 0
    for i in range(0, len(data), 2):
        out ^= (data[i] << 8) | data[i + 1]
    return out


def identity(data: bytes) -> int:
    return int.from_bytes(data[:8], "big") if data else 0


def compute(algorithm: str, data: bytes) -> int:
    """Hash ``data`` with a v1model ``HashAlgorithm`` the way BMv2 does."""
    fast = _FIXED.get(algorithm)
    if fast is not None:            # the fixed algorithms: one dict lookup per packet, no chain of tests
        return fast(data)
    if algorithm == "crc32":
        return crc(CRC32_DEFAULT, data)
    if algorithm == "crc16":
        return crc(CRC16_DEFAULT, data)
    if algorithm in _custom:
        return crc(_custom[algorithm], data)
    if algorithm == "identity":
        return identity(data)
    if algorithm == "csum16":
        return csum16(data)
    if algorithm == "xor16":
        return xor16(data)
    if algorithm == "random":
        raise HashError("hash algorithm 'random' is not supported: BMv2 registers no such hash")
    raise HashError(f"unknown hash algorithm {algorithm!r} (known: {', '.join(ALGORITHMS)})")


# The algorithms whose parameters never change (the custom CRCs are looked up per call: the control
# plane may reconfigure them).
_FIXED = {"crc32": zlib.crc32, "crc16": _crc16_arc, "csum16": csum16, "identity": identity, "xor16": xor16}


def check_algorithm(algorithm: str) -> None:
    """Raise ``HashError`` unless BMv2 could load a program using ``algorithm``."""
    if algorithm not in ALGORITHMS:
        compute(algorithm, b"")


def pack_int(fields: list[tuple[int, int]]) -> tuple[int, int]:
    """(value, bitwidth) fields back to back, MSB first, as one integer and its width in bits
    (values masked to their widths, zero-width fields left out)."""
    acc = 0
    nbits = 0
    for value, width in fields:
        if width <= 0:
            continue
        acc = (acc << width) | (value & ((1 << width) - 1))
        nbits += width
    return acc, nbits


def pack_fields(fields: list[tuple[int, int]]) -> bytes:
    """Serialise (value, bitwidth) fields back to back, MSB first, zero-padded to whole bytes."""
    acc, nbits = pack_int(fields)
    pad = (-nbits) % 8
    return (acc << pad).to_bytes((nbits + pad) // 8, "big")


def v1model_hash(algorithm: str, base: int, fields: list[tuple[int, int]], max_: int) -> int:
    """v1model ``hash(out, algo, base, data, max)``: ``base + h % max``; ``max == 0`` acts as 1.

    The caller truncates the result to the width of ``out``.
    """
    h = compute(algorithm, pack_fields(fields))
    return base + h % (max_ if max_ else 1)
