"""Table entries as wire bytes: the hot path of a large ``apply`` without protobuf objects.

protobuf 3.20.3 (pinned by p4runtime 1.4.1's generated code) is pure Python on Python 3.11, where
building, serializing and parsing ~10,000 ``TableEntry`` messages costs seconds. ``WireEntry`` holds
one table entry as its serialized bytes plus the two tuples reconciliation compares (``key``: table,
match, priority; ``akey``: the action), built straight from validated parts (``encode_entry``) or
cut out of a raw ``ReadResponse`` (``decode_read_response``). Anything else about the entry (match
fields for a description, rollback copies) comes from a protobuf message parsed on first use, so
every caller that reads protobuf attributes keeps working. Unit tests check the encoder byte for
byte and the decoder field for field against protobuf's own serialization and parsing.

Wire format (p4runtime.proto field numbers): TableEntry table_id=1 match=2 action=3 priority=4
is_default_action=8; FieldMatch field_id=1 exact=2 ternary=3 lpm=4 range=6 optional=7; TableAction
action=1; Action action_id=1 params=4; Param param_id=2 value=3; ReadResponse entities=1; Entity
table_entry=2.
"""

from __future__ import annotations

from collections.abc import Sequence

from p4.v1 import p4runtime_pb2

TableEntry = p4runtime_pb2.TableEntry

# FieldMatch kind -> its field number in FieldMatch, and back
KIND_FIELD = {"exact": 2, "ternary": 3, "lpm": 4, "range": 6, "optional": 7}
_FIELD_KIND = {v: k for k, v in KIND_FIELD.items()}


def canon(data: bytes) -> bytes:
    """P4Runtime's canonical form of a bytestring value (leading zero bytes dropped, zero is 0x00)."""
    stripped = data.lstrip(b"\0")
    return stripped or b"\0"


def varint(value: int) -> bytes:
    """Protobuf base-128 varint; negative values as 64-bit two's complement (int32/int64)."""
    if value < 0:
        value += 1 << 64
    if value < 0x80:
        return bytes((value,))
    out = bytearray()
    while value >= 0x80:
        out.append((value & 0x7F) | 0x80)
        value >>= 7
    out.append(value)
    return bytes(out)


def _ld(tag: bytes, payload: bytes) -> bytes:
    return tag + varint(len(payload)) + payload


class WireEntry:
    """One table entry: serialized bytes, comparison keys, and a protobuf view parsed on demand.

    Attribute reads it does not hold itself (``match``, ``action``, ``HasField``...) go to the
    parsed ``TableEntry``, so it can stand wherever a read-only ``TableEntry`` is expected.
    """

    __slots__ = ("table_id", "priority", "is_default_action", "key", "akey", "wire", "_proto")

    def __init__(self, table_id: int, priority: int, is_default: bool, key: tuple, akey: tuple,
                 wire: bytes, proto: TableEntry | None = None) -> None:
        self.table_id = table_id
        self.priority = priority
        self.is_default_action = is_default
        self.key = key
        self.akey = akey
        self.wire = wire
        self._proto = proto

    @property
    def proto(self) -> TableEntry:
        if self._proto is None:
            self._proto = TableEntry.FromString(self.wire)
        return self._proto

    def __getattr__(self, name: str) -> object:
        return getattr(self.proto, name)

    def SerializeToString(self, deterministic: bool = False) -> bytes:  # noqa: N802 (protobuf's name)
        del deterministic
        return self.wire

    def __eq__(self, other: object) -> bool:
        if isinstance(other, WireEntry):
            return self.wire == other.wire or self.proto == other.proto
        if isinstance(other, TableEntry):
            return self.proto == other
        return NotImplemented

    __hash__ = None  # type: ignore[assignment]   # mutable view, like protobuf messages

    def __repr__(self) -> str:
        return f"WireEntry({self.proto!r})"


def as_proto(entry: TableEntry | WireEntry) -> TableEntry:
    """The protobuf message of ``entry`` (itself when it already is one)."""
    return entry.proto if isinstance(entry, WireEntry) else entry


# -- keys of protobuf messages (what WireEntry precomputes) ---------------------------------------
def _field_key(fm: p4runtime_pb2.FieldMatch) -> tuple:
    kind = fm.WhichOneof("field_match_type")
    if kind == "exact":
        return (fm.field_id, kind, canon(fm.exact.value))
    if kind == "lpm":
        return (fm.field_id, kind, canon(fm.lpm.value), fm.lpm.prefix_len)
    if kind == "ternary":
        return (fm.field_id, kind, canon(fm.ternary.value), canon(fm.ternary.mask))
    if kind == "range":
        return (fm.field_id, kind, canon(fm.range.low), canon(fm.range.high))
    if kind == "optional":
        return (fm.field_id, kind, canon(fm.optional.value))
    return (fm.field_id, kind, fm.SerializeToString(deterministic=True))


def entry_key(entry: TableEntry | WireEntry) -> tuple:
    """What identifies an entry on a switch: table, match (canonical bytes, any order), priority."""
    if isinstance(entry, WireEntry):
        return entry.key
    return (entry.table_id, tuple(sorted(_field_key(fm) for fm in entry.match)), entry.priority)


def action_key(entry: TableEntry | WireEntry) -> tuple:
    """What an entry does, comparable across canonical and width-padded encodings."""
    if isinstance(entry, WireEntry):
        return entry.akey
    if not entry.HasField("action"):
        return ()
    which = entry.action.WhichOneof("type")
    if which != "action":
        return (which, entry.action.SerializeToString(deterministic=True))
    act = entry.action.action
    return (act.action_id, tuple(sorted((p.param_id, canon(p.value)) for p in act.params)))


# -- encoder -------------------------------------------------------------------------------------
def encode_entry(table_id: int, match: Sequence[tuple], priority: int, is_default: bool,
                 action_id: int | None, params: Sequence[tuple[int, bytes]]) -> WireEntry:
    """A WireEntry from validated parts, bytes equal to protobuf's serialization of the same entry.

    ``match``: ``(field_id, kind, *values)`` in key order, values as ``entry_key`` has them
    (``lpm``: value, prefix_len; ``ternary``: value, mask; ``range``: low, high; else value);
    ``action_id`` None for no action; ``params``: ``(param_id, value)`` in order.
    """
    parts = [b"\x08" + varint(table_id)] if table_id else []
    for fid, kind, *values in match:
        if kind == "lpm":
            body = _ld(b"\x0a", values[0]) + (b"\x10" + varint(values[1]) if values[1] else b"")
        elif kind in ("ternary", "range"):
            body = _ld(b"\x0a", values[0]) + _ld(b"\x12", values[1])
        else:   # exact, optional
            body = _ld(b"\x0a", values[0])
        fm = (b"\x08" + varint(fid) if fid else b"") + _ld(bytes((KIND_FIELD[kind] << 3 | 2,)), body)
        parts.append(_ld(b"\x12", fm))
    if action_id is not None:
        act = [b"\x08" + varint(action_id)] if action_id else []
        for pid, value in params:
            act.append(_ld(b"\x22", (b"\x10" + varint(pid) if pid else b"") + _ld(b"\x1a", value)))
        parts.append(_ld(b"\x1a", _ld(b"\x0a", b"".join(act))))
        akey = (action_id, tuple(sorted((pid, canon(v)) for pid, v in params)))
    else:
        akey = ()
    if priority:
        parts.append(b"\x20" + varint(priority))
    if is_default:
        parts.append(b"\x40\x01")
    key = (table_id, tuple(sorted((fid, kind, *(canon(v) if isinstance(v, bytes) else v for v in values))
                                  for fid, kind, *values in match)), priority)
    return WireEntry(table_id, priority, is_default, key, akey, b"".join(parts))


# -- decoder -------------------------------------------------------------------------------------
class _Unusual(Exception):
    """A field the fast reader does not model: the entry is parsed by protobuf instead."""


def _read_varint(buf: bytes, pos: int) -> tuple[int, int]:
    byte = buf[pos]
    if byte < 0x80:
        return byte, pos + 1
    value, shift = 0, 0
    while True:
        byte = buf[pos]
        pos += 1
        value |= (byte & 0x7F) << shift
        if byte < 0x80:
            return value, pos
        shift += 7


def _fields(buf: bytes, start: int, end: int):
    """(field number, wire type, value) of each field in buf[start:end]; value is an int for
    varints and a (start, end) pair for length-delimited fields."""
    pos = start
    while pos < end:
        tag, pos = _read_varint(buf, pos)
        wtype = tag & 7
        if wtype == 0:
            value, pos = _read_varint(buf, pos)
            yield tag >> 3, 0, value
        elif wtype == 2:
            size, pos = _read_varint(buf, pos)
            yield tag >> 3, 2, (pos, pos + size)
            pos += size
        else:
            raise _Unusual


def _signed32(value: int) -> int:
    value &= (1 << 64) - 1
    return value - (1 << 64) if value >> 63 else value


def _field_match(buf: bytes, start: int, end: int) -> tuple:
    fid, kind, values = 0, None, ()
    for num, wtype, val in _fields(buf, start, end):
        if num == 1 and wtype == 0:
            fid = val & 0xFFFFFFFF
        elif num in _FIELD_KIND and wtype == 2 and kind is None:
            kind = _FIELD_KIND[num]
            first, second = b"", 0 if kind == "lpm" else b""
            for n2, w2, v2 in _fields(buf, *val):
                if n2 == 1 and w2 == 2:
                    first = buf[v2[0]:v2[1]]
                elif n2 == 2 and kind == "lpm" and w2 == 0:
                    second = _signed32(v2)
                elif n2 == 2 and kind in ("ternary", "range") and w2 == 2:
                    second = buf[v2[0]:v2[1]]
                else:
                    raise _Unusual
            values = (canon(first),) if kind in ("exact", "optional") else (
                (canon(first), second) if kind == "lpm" else (canon(first), canon(second)))
        else:
            raise _Unusual
    if kind is None:
        raise _Unusual
    return (fid, kind, *values)


def _action(buf: bytes, start: int, end: int) -> tuple:
    """action_key of a TableAction holding a direct Action."""
    found = None
    for num, wtype, val in _fields(buf, start, end):
        if num != 1 or wtype != 2 or found is not None:
            raise _Unusual
        found = val
    if found is None:
        raise _Unusual
    action_id, params = 0, []
    for num, wtype, val in _fields(buf, *found):
        if num == 1 and wtype == 0:
            action_id = val & 0xFFFFFFFF
        elif num == 4 and wtype == 2:
            pid, value = 0, b""
            for n2, w2, v2 in _fields(buf, *val):
                if n2 == 2 and w2 == 0:
                    pid = v2 & 0xFFFFFFFF
                elif n2 == 3 and w2 == 2:
                    value = buf[v2[0]:v2[1]]
                else:
                    raise _Unusual
            params.append((pid, canon(value)))
        else:
            raise _Unusual
    return (action_id, tuple(sorted(params)))


def decode_entry(data: bytes) -> WireEntry:
    """A WireEntry of one serialized TableEntry (keys as ``entry_key``/``action_key`` compute)."""
    try:
        table_id, priority, is_default, match, akey, seen_action = 0, 0, False, [], (), False
        for num, wtype, val in _fields(data, 0, len(data)):
            if num == 1 and wtype == 0:
                table_id = val & 0xFFFFFFFF
            elif num == 2 and wtype == 2:
                match.append(_field_match(data, *val))
            elif num == 3 and wtype == 2 and not seen_action:
                akey, seen_action = _action(data, *val), True
            elif num == 4 and wtype == 0:
                priority = _signed32(val)
            elif num == 8 and wtype == 0:
                is_default = bool(val)
            else:
                raise _Unusual
    except (_Unusual, IndexError):
        proto = TableEntry.FromString(data)
        return WireEntry(proto.table_id, proto.priority, proto.is_default_action, entry_key(proto),
                         action_key(proto), data, proto)
    return WireEntry(table_id, priority, is_default, (table_id, tuple(sorted(match)), priority),
                     akey, data)


def decode_read_response(data: bytes) -> list[WireEntry]:
    """The table entries of one serialized ReadResponse (other entity kinds are skipped)."""
    out = []
    try:
        for num, wtype, val in _fields(data, 0, len(data)):
            if num != 1 or wtype != 2:
                continue
            for n2, w2, inner in _fields(data, *val):
                if n2 == 2 and w2 == 2:
                    out.append(decode_entry(data[inner[0]:inner[1]]))
    except (_Unusual, IndexError):
        resp = p4runtime_pb2.ReadResponse.FromString(data)
        return [decode_entry(e.table_entry.SerializeToString())
                for e in resp.entities if e.WhichOneof("entity") == "table_entry"]
    return out
