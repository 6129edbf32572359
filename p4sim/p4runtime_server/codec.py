"""P4Runtime bytes <-> Python ints, with the spec's canonical-form and bitwidth checks.

Every value on the wire is a big-endian byte string. The spec's canonical form is the shortest
one (at least one byte, no leading zero byte); the legacy form padded to exactly the field's byte
width is accepted too (older clients send it); any other padding is refused, and a value must
fit the field's bitwidth. Reads always answer in canonical form. Matches are
decoded into a neutral form, one item per key field in P4Info order:

    ("exact", v) | ("lpm", v, prefix_len) | ("ternary", v, mask) | ("range", lo, hi)
    | ("optional", v) | None (don't care)

``p4sim.p4runtime_server.runtime_bridge`` turns that into the runtime's Exact/Lpm/... (Contract 1).
Don't-care fields must be omitted on the wire (an LPM /0, a ternary mask 0, a full range); the
server rejects them spelled out, as the spec requires, so reads give back what was written.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence

from p4.config.v1 import p4info_pb2
from p4.v1 import p4runtime_pb2

from p4sim.p4runtime_server.errors import invalid
from p4sim.p4runtime_server.p4info_index import ActionInfo, KeyInfo, P4InfoIndex, TableInfo

__all__ = ["decode_int", "encode_int", "decode_match", "decode_match_tuples", "field_tuple", "encode_match",
           "check_priority", "decode_action", "decode_action_parts", "encode_action", "Match", "hexstr"]

Match = tuple  # tuple of neutral field matches (see module docstring)

_MAX_PRIORITY = (1 << 31) - 1


def hexstr(data: bytes) -> str:
    """0x... of a byte string for messages, shortened so hostile sizes cannot bloat a status."""
    if len(data) > 16:
        return f"0x{data[:16].hex()}...({len(data)} bytes)"
    return f"0x{data.hex()}"


def decode_int(data: bytes, bitwidth: int, what: str) -> int:
    """The int a byte string carries; INVALID_ARGUMENT if empty, non-canonical or too wide."""
    if not data:
        raise invalid(f"{what}: empty byte string")
    if len(data) > 1 and data[0] == 0 and len(data) != (bitwidth + 7) // 8:
        # Canonical form, or the legacy form padded to exactly the field's byte width (P4Runtime
        # 1.0 clients, and p4runtime-shell with canonical_bytestrings off, send that).
        raise invalid(f"{what}: byte string {hexstr(data)} is not canonical (leading zero byte)")
    value = int.from_bytes(data, "big")
    if bitwidth and value >> bitwidth:
        raise invalid(f"{what}: value {hexstr(data)} does not fit in {bitwidth} bits")
    return value


def encode_int(value: int) -> bytes:
    """Canonical byte string of a non-negative int (0 -> b'\\x00')."""
    return value.to_bytes(max(1, (value.bit_length() + 7) // 8), "big")


def field_tuple(fm: p4runtime_pb2.FieldMatch) -> tuple:
    """(field id, kind, a, b) of a FieldMatch: exact/optional (value), lpm (value, prefix_len),
    ternary (value, mask), range (low, high); kind None when no match kind is set."""
    kind = fm.WhichOneof("field_match_type")
    if kind == "exact":
        return fm.field_id, kind, fm.exact.value, None
    if kind == "lpm":
        return fm.field_id, kind, fm.lpm.value, fm.lpm.prefix_len
    if kind == "ternary":
        return fm.field_id, kind, fm.ternary.value, fm.ternary.mask
    if kind == "range":
        return fm.field_id, kind, fm.range.low, fm.range.high
    if kind == "optional":
        return fm.field_id, kind, fm.optional.value, None
    return fm.field_id, kind, None, None


def _decode_field(key: KeyInfo, kind: str | None, a, b, table: str) -> tuple:
    what = f"table '{table}' field '{key.name}'"
    if kind != key.match_kind:
        raise invalid(f"{what}: {kind or 'unset'} match given, the field is {key.match_kind}")
    width = key.bitwidth
    if kind == "exact":
        return ("exact", decode_int(a, width, what))
    if kind == "optional":
        return ("optional", decode_int(a, width, what))
    if kind == "lpm":
        plen = b
        if plen <= 0 or plen > width:
            if plen == 0:
                raise invalid(f"{what}: an LPM /0 is a don't-care and must be omitted")
            raise invalid(f"{what}: prefix length {plen} out of range 1..{width}")
        value = decode_int(a, width, what)
        if value & ((1 << (width - plen)) - 1):
            raise invalid(f"{what}: LPM value {hexstr(a)} has bits set beyond /{plen}")
        return ("lpm", value, plen)
    if kind == "ternary":
        value = decode_int(a, width, what)
        mask = decode_int(b, width, what + " mask")
        if mask == 0:
            raise invalid(f"{what}: a ternary mask of 0 is a don't-care and must be omitted")
        if value & ~mask:
            raise invalid(f"{what}: ternary value {hexstr(a)} has bits outside mask {hexstr(b)}")
        return ("ternary", value, mask)
    if kind == "range":
        low = decode_int(a, width, what + " low")
        high = decode_int(b, width, what + " high")
        if low > high:
            raise invalid(f"{what}: range low {low} > high {high}")
        if low == 0 and high == (1 << width) - 1:
            raise invalid(f"{what}: a full range is a don't-care and must be omitted")
        return ("range", low, high)
    raise invalid(f"{what}: unsupported match kind {kind}")


def decode_match_tuples(keys: Sequence[KeyInfo], key_pos: dict[int, int], fields: Iterable[tuple],
                        name: str, what: str = "table") -> Match:
    """Neutral match tuple (key order) of (field id, kind, a, b) tuples (see ``field_tuple``)."""
    out: list[tuple | None] = [None] * len(keys)
    for field_id, kind, a, b in fields:
        pos = key_pos.get(field_id)
        if pos is None:
            raise invalid(f"{what} '{name}': unknown match field id {field_id}")
        if out[pos] is not None:
            raise invalid(f"{what} '{name}': match field id {field_id} given twice")
        out[pos] = _decode_field(keys[pos], kind, a, b, name)
    for key, value in zip(keys, out, strict=True):
        if value is None and key.match_kind == "exact":
            raise invalid(f"{what} '{name}': exact match field '{key.name}' is missing")
    return tuple(out)


def decode_match(table: TableInfo, field_matches: Iterable[p4runtime_pb2.FieldMatch]) -> Match:
    """Neutral match tuple (P4Info key order) of a TableEntry's FieldMatch list."""
    return decode_match_tuples(table.keys, table.key_pos, map(field_tuple, field_matches), table.name)


def decode_value_set_member(keys: Sequence[KeyInfo], field_matches, name: str) -> Match:
    """A ValueSetMember's match (a value set is matched like a table key without priority)."""
    return decode_match_tuples(keys, {k.id: i for i, k in enumerate(keys)}, map(field_tuple, field_matches),
                               name, "value set")


def encode_match(keys: Sequence[KeyInfo], match: Match, out=None) -> list[p4runtime_pb2.FieldMatch]:
    """FieldMatch list of a neutral match (don't-care fields omitted).

    With ``out`` (a repeated FieldMatch field) the matches are built in place, which avoids a
    copy per message with the pure-Python protobuf runtime.
    """
    made = []
    for key, field in zip(keys, match, strict=True):
        if field is None:
            continue
        kind = field[0]
        if kind == "lpm" and field[2] == 0 or kind == "ternary" and field[2] == 0 or \
                kind == "range" and field[1] == 0 and field[2] == (1 << key.bitwidth) - 1:
            continue
        fm = out.add(field_id=key.id) if out is not None else p4runtime_pb2.FieldMatch(field_id=key.id)
        if kind == "exact":
            fm.exact.value = encode_int(field[1])
        elif kind == "optional":
            fm.optional.value = encode_int(field[1])
        elif kind == "lpm":
            fm.lpm.value = encode_int(field[1])
            fm.lpm.prefix_len = field[2]
        elif kind == "ternary":
            fm.ternary.value = encode_int(field[1])
            fm.ternary.mask = encode_int(field[2])
        else:
            fm.range.low = encode_int(field[1])
            fm.range.high = encode_int(field[2])
        made.append(fm)
    return made


def check_priority(table: TableInfo, priority: int) -> None:
    """Priority is required (> 0) for ternary/range/optional tables and forbidden otherwise."""
    if table.needs_priority:
        if priority <= 0 or priority > _MAX_PRIORITY:
            raise invalid(f"table '{table.name}': priority {priority} out of range 1..{_MAX_PRIORITY} "
                          f"(required for ternary, range and optional matches)")
    elif priority != 0:
        raise invalid(f"table '{table.name}': priority {priority} given, but the table has only "
                      f"exact/lpm keys (must be 0)")


def decode_action_args(action: ActionInfo, params: Iterable) -> tuple:
    """Argument tuple (P4Info order) of Action.Param messages or (param id, value) pairs."""
    args: list[int | None] = [None] * len(action.params)
    for p in params:
        param_id, value = (p.param_id, p.value) if hasattr(p, "param_id") else p
        pos = action.param_pos.get(param_id)
        if pos is None:
            raise invalid(f"action '{action.name}': unknown parameter id {param_id}")
        if args[pos] is not None:
            raise invalid(f"action '{action.name}': parameter id {param_id} given twice")
        info = action.params[pos]
        args[pos] = decode_int(value, info.bitwidth, f"action '{action.name}' parameter '{info.name}'")
    for info, value in zip(action.params, args, strict=True):
        if value is None:
            raise invalid(f"action '{action.name}': parameter '{info.name}' is missing")
    return tuple(args)


def decode_action_parts(index: P4InfoIndex, table: TableInfo | None, action_id: int, params: Iterable,
                        as_default: bool = False) -> tuple[str, tuple]:
    """(fully qualified action name, args) of an action id and its params, checked against the table."""
    action = index.action(action_id)
    if table is not None:
        scope = table.action_scopes.get(action.id)
        if scope is None:
            raise invalid(f"table '{table.name}': action '{action.name}' is not one of its actions")
        if as_default and scope == p4info_pb2.ActionRef.TABLE_ONLY:
            raise invalid(f"table '{table.name}': action '{action.name}' is @tableonly, "
                          f"it cannot be the default action")
        if not as_default and scope == p4info_pb2.ActionRef.DEFAULT_ONLY:
            raise invalid(f"table '{table.name}': action '{action.name}' is @defaultonly, "
                          f"it cannot be used in an entry")
    return action.name, decode_action_args(action, params)


def decode_action(index: P4InfoIndex, table: TableInfo | None, msg: p4runtime_pb2.Action,
                  as_default: bool = False) -> tuple[str, tuple]:
    """(fully qualified action name, args) of an Action message, checked against the table."""
    return decode_action_parts(index, table, msg.action_id, msg.params, as_default)


def encode_action(index: P4InfoIndex, name: str, args: Sequence[int],
                  out: p4runtime_pb2.Action | None = None) -> p4runtime_pb2.Action:
    """Action message of a runtime action call (filled into ``out`` when given)."""
    action = index.action_by_name.get(name)
    if action is None:
        raise invalid(f"action '{name}' is not in the P4Info")
    msg = out if out is not None else p4runtime_pb2.Action()
    msg.action_id = action.id
    for info, value in zip(action.params, args, strict=False):
        msg.params.add(param_id=info.id, value=encode_int(value))
    return msg


def pack_bits(fields: Sequence[tuple[int, int]]) -> bytes:
    """Big-endian bit packing of (value, bitwidth) fields, padded at the end to a whole byte."""
    acc, total = 0, 0
    for value, width in fields:
        acc = (acc << width) | (value & ((1 << width) - 1))
        total += width
    pad = (-total) % 8
    return (acc << pad).to_bytes((total + pad) // 8, "big")


def unpack_bits(data: bytes, widths: Sequence[int]) -> list[int]:
    """Inverse of pack_bits over the first sum(widths) bits of data."""
    total = sum(widths)
    nbytes = (total + 7) // 8
    acc = int.from_bytes(data[:nbytes], "big") >> (nbytes * 8 - total)
    out = []
    for width in reversed(widths):
        out.append(acc & ((1 << width) - 1))
        acc >>= width
    return out[::-1]
