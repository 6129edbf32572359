"""Human values -> P4Runtime canonical bytestrings, with width checks; and back for display.

Accepted spellings: ints, decimal/``0x``/``0b`` strings, IPv4 ``10.0.0.1``, MAC ``00:11:22:33:44:55``;
per match kind: lpm ``10.0.0.0/8`` or ``(value, prefix_len)``, ternary ``v &&& m`` or
``(value, mask)``, range ``lo..hi`` or ``(lo, hi)``. Encoding is P4Runtime's canonical form: the
shortest big-endian bytestring (zero is one ``\\x00`` byte). A value wider than its field, an lpm
value with bits past the prefix or a ternary value with bits outside its mask is an error naming
``where`` (e.g. ``table DlcpIngress.nexthops field nexthop_id``), never silently truncated.
"""

from __future__ import annotations

import ipaddress
import re

from p4.v1 import p4runtime_pb2

from controller.errors import ValueError_

_MAC_RE = re.compile(r"^[0-9a-fA-F]{1,2}([:-][0-9a-fA-F]{1,2}){5}$")
_IPV4_RE = re.compile(r"^\d{1,3}(\.\d{1,3}){3}$")


def _ipv4(text: str) -> int:
    """A dotted quad (already matched by ``_IPV4_RE``) as an int; ipaddress's rules (no octet above
    255, no leading zeros) without its cost on large route lists."""
    number = 0
    for octet in text.split("."):
        value = int(octet)
        if value > 255 or (octet[0] == "0" and len(octet) > 1):
            return int(ipaddress.IPv4Address(text))   # ipaddress raises its own error
        number = (number << 8) | value
    return number


def parse_int(value: object, bitwidth: int, where: str) -> int:
    """One value as an int that fits ``bitwidth`` bits; ``where`` names the field in errors."""
    if isinstance(value, bool):
        number = int(value)
    elif isinstance(value, int):
        number = value
    elif isinstance(value, bytes):
        number = int.from_bytes(value, "big")
    elif isinstance(value, str):
        text = value.strip()
        try:
            if _IPV4_RE.match(text):
                number = _ipv4(text)
            elif _MAC_RE.match(text):
                number = int(text.replace(":", "").replace("-", ""), 16)
            else:
                number = int(text, 0)
        except ValueError:
            raise ValueError_(f"{where}: cannot parse value '{value}'") from None
    else:
        raise ValueError_(f"{where}: cannot use {type(value).__name__} value {value!r}")
    if number < 0:
        raise ValueError_(f"{where}: negative value {value}")
    if number >> bitwidth:
        raise ValueError_(f"{where}: value {value} does not fit in {bitwidth} bits "
                          f"(max {(1 << bitwidth) - 1})")
    return number


def encode(number: int, bitwidth: int) -> bytes:
    """Canonical P4Runtime bytestring of ``number`` (already checked to fit ``bitwidth``)."""
    del bitwidth  # canonical form depends only on the value
    return number.to_bytes(max(1, (number.bit_length() + 7) // 8), "big")


def encode_value(value: object, bitwidth: int, where: str) -> bytes:
    """``parse_int`` then ``encode``."""
    return encode(parse_int(value, bitwidth, where), bitwidth)


def decode(data: bytes) -> int:
    return int.from_bytes(data, "big")


def _pair(value: object, sep: str) -> tuple[object, object] | None:
    if isinstance(value, (tuple, list)) and len(value) == 2:
        return value[0], value[1]
    if isinstance(value, str) and sep in value:
        left, right = value.split(sep, 1)
        return left.strip(), right.strip()
    return None


def field_match(kind: str, field_id: int, value: object, bitwidth: int,
                where: str) -> p4runtime_pb2.FieldMatch | None:
    """A ``FieldMatch`` for one key field, or None when the value is a wildcard (omitted)."""
    fm = p4runtime_pb2.FieldMatch(field_id=field_id)
    return fm if fill_field_match(fm, kind, value, bitwidth, where) else None


def fill_field_match(fm: p4runtime_pb2.FieldMatch, kind: str, value: object, bitwidth: int,
                     where: str) -> bool:
    """Fill ``fm`` (field_id already set) in place; False when the value is a wildcard (omit it)."""
    part = match_part(kind, value, bitwidth, where)
    if part is None:
        return False
    kind, first, *rest = part
    if kind == "exact":
        fm.exact.value = first
    elif kind == "optional":
        fm.optional.value = first
    elif kind == "lpm":
        fm.lpm.value = first
        fm.lpm.prefix_len = rest[0]
    elif kind == "ternary":
        fm.ternary.value = first
        fm.ternary.mask = rest[0]
    else:
        fm.range.low = first
        fm.range.high = rest[0]
    return True


def match_part(kind: str, value: object, bitwidth: int, where: str) -> tuple | None:
    """One key field as ``(kind, *canonical values)`` (lpm: value, prefix_len; ternary: value, mask;
    range: low, high); None when the value is a wildcard (the field is omitted)."""
    if kind == "exact":
        if value is None:
            raise ValueError_(f"{where}: an exact field cannot be a wildcard")
        return (kind, encode_value(value, bitwidth, where))
    if kind == "optional":
        if value is None:
            return None
        return (kind, encode_value(value, bitwidth, where))
    if value is None or value == "*":
        return None
    if kind == "lpm":
        pair = _pair(value, "/")
        number, plen = (pair if pair else (value, bitwidth))
        number = parse_int(number, bitwidth, where)
        try:
            plen = int(plen)
        except (TypeError, ValueError):
            raise ValueError_(f"{where}: bad prefix length '{plen}'") from None
        if not 0 <= plen <= bitwidth:
            raise ValueError_(f"{where}: prefix length {plen} outside 0..{bitwidth}")
        host_bits = number & ((1 << (bitwidth - plen)) - 1)
        if host_bits:
            raise ValueError_(f"{where}: value {value} has bits set past the /{plen} prefix")
        if plen == 0:
            return None
        return (kind, encode(number, bitwidth), plen)
    if kind == "ternary":
        pair = _pair(value, "&&&")
        number, mask = pair if pair else (value, (1 << bitwidth) - 1)
        number = parse_int(number, bitwidth, where)
        mask = parse_int(mask, bitwidth, where)
        if number & ~mask:
            raise ValueError_(f"{where}: value {number:#x} has bits outside mask {mask:#x}")
        if mask == 0:
            return None
        return (kind, encode(number, bitwidth), encode(mask, bitwidth))
    if kind == "range":
        pair = _pair(value, "..")
        low, high = pair if pair else (value, value)
        low, high = parse_int(low, bitwidth, where), parse_int(high, bitwidth, where)
        if low > high:
            raise ValueError_(f"{where}: empty range {low}..{high}")
        if low == 0 and high == (1 << bitwidth) - 1:
            return None
        return (kind, encode(low, bitwidth), encode(high, bitwidth))
    raise ValueError_(f"{where}: unsupported match kind '{kind}'")


def format_value(number: int, bitwidth: int, name: str = "") -> str:
    """A readable spelling: MACs for 48-bit values, dotted quads for 32-bit addresses, else decimal."""
    if bitwidth == 48:
        raw = number.to_bytes(6, "big")
        return ":".join(f"{b:02x}" for b in raw)
    if bitwidth == 32 and any(k in name for k in ("ipv4", "addr", "dst", "src", "ip")):
        return str(ipaddress.IPv4Address(number))
    return str(number)


def format_match(kind: str, fm: p4runtime_pb2.FieldMatch | None, bitwidth: int, name: str = "") -> str:
    """Readable text of one FieldMatch (``*`` for an omitted wildcard)."""
    if fm is None:
        return "*"
    which = fm.WhichOneof("field_match_type")
    if which == "exact":
        return format_value(decode(fm.exact.value), bitwidth, name)
    if which == "lpm":
        return f"{format_value(decode(fm.lpm.value), bitwidth, name)}/{fm.lpm.prefix_len}"
    if which == "ternary":
        value, mask = decode(fm.ternary.value), decode(fm.ternary.mask)
        if mask == (1 << bitwidth) - 1:
            return format_value(value, bitwidth, name)
        return f"{value:#x}&&&{mask:#x}"
    if which == "range":
        return f"{decode(fm.range.low)}..{decode(fm.range.high)}"
    if which == "optional":
        return format_value(decode(fm.optional.value), bitwidth, name)
    return "?"
