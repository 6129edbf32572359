"""An index of a P4Info message by id, with what the server needs to check every request.

P4Runtime names every object by a numeric id; the runtime (Contract 1-3) names them by their fully
qualified P4Info name. This index answers "what is id N?" in one dict look-up and keeps the facts
request validation needs (key bitwidths and match kinds, action parameters, scopes, sizes). Unknown
ids raise INVALID_ARGUMENT naming the id and the kind of object expected.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from p4.config.v1 import p4info_pb2

from p4sim.p4runtime_server.errors import invalid

__all__ = ["P4InfoIndex", "TableInfo", "KeyInfo", "ActionInfo", "ParamInfo", "ObjectInfo",
           "PacketMetadataInfo", "MATCH_KINDS", "check_compatible"]

MATCH_KINDS = {
    p4info_pb2.MatchField.EXACT: "exact",
    p4info_pb2.MatchField.LPM: "lpm",
    p4info_pb2.MatchField.TERNARY: "ternary",
    p4info_pb2.MatchField.RANGE: "range",
    p4info_pb2.MatchField.OPTIONAL: "optional",
}


@dataclass(frozen=True)
class KeyInfo:
    id: int
    name: str
    match_kind: str
    bitwidth: int


@dataclass(frozen=True)
class ParamInfo:
    id: int
    name: str
    bitwidth: int


@dataclass
class ActionInfo:
    id: int
    name: str
    params: list[ParamInfo]
    param_pos: dict[int, int] = field(default_factory=dict)   # param id -> position in args


@dataclass
class TableInfo:
    id: int
    name: str
    keys: list[KeyInfo]
    key_pos: dict[int, int]               # field id -> position in the match tuple
    action_scopes: dict[int, int]         # action id -> ActionRef.Scope
    size: int
    implementation_id: int
    const_default_action_id: int
    is_const: bool
    direct_counter_id: int = 0
    direct_meter_id: int = 0
    with_selector: bool = False

    needs_priority: bool = field(init=False)
    kinds: list[str] = field(init=False)

    def __post_init__(self) -> None:
        # Tables with a ternary, range or optional key order their entries by priority.
        self.needs_priority = any(k.match_kind in ("ternary", "range", "optional") for k in self.keys)
        self.kinds = [k.match_kind for k in self.keys]


@dataclass(frozen=True)
class ObjectInfo:
    """Counters, meters, registers, action profiles, value sets, digests: id, name, and a size."""

    id: int
    name: str
    size: int = 0
    bitwidth: int = 0            # registers: cell width
    table_id: int = 0            # direct counters/meters: their table
    with_selector: bool = False  # action profiles
    max_group_size: int = 0
    match: tuple[KeyInfo, ...] = ()          # value sets
    field_widths: tuple[int, ...] = ()       # digests: struct member widths (one entry = bitstring)
    is_struct: bool = False                  # digests: data is a P4 struct


@dataclass(frozen=True)
class PacketMetadataInfo:
    id: int
    name: str
    bitwidth: int


def _bitwidth_of(spec: object, type_info: p4info_pb2.P4TypeInfo) -> tuple[tuple[int, ...], bool]:
    """Widths of a P4DataTypeSpec: (w,) for a bitstring, member widths for a struct/header."""
    kind = spec.WhichOneof("type_spec")
    if kind == "bitstring":
        bs = spec.bitstring
        which = bs.WhichOneof("type_spec")
        return ((getattr(bs, which).bitwidth if which else 0),), False
    if kind == "bool":
        return (1,), False
    if kind in ("struct", "header"):
        table = type_info.structs if kind == "struct" else type_info.headers
        decl = table.get(getattr(spec, kind).name)
        if decl is None:
            return (), True
        widths: list[int] = []
        for member in decl.members:
            inner = member.type_spec
            if kind == "header":
                widths.append(inner.bitwidth)
            else:
                widths.extend(_bitwidth_of(inner, type_info)[0])
        return tuple(widths), True
    return (), False


class P4InfoIndex:
    """Look-ups by id into one P4Info; built once per pipeline config."""

    def __init__(self, p4info: p4info_pb2.P4Info) -> None:
        self.p4info = p4info
        self.actions: dict[int, ActionInfo] = {}
        for a in p4info.actions:
            params = [ParamInfo(p.id, p.name, p.bitwidth) for p in a.params]
            self.actions[a.preamble.id] = ActionInfo(
                a.preamble.id, a.preamble.name, params, {p.id: i for i, p in enumerate(params)})
        self.action_by_name = {a.name: a for a in self.actions.values()}
        self.action_profiles = {
            p.preamble.id: ObjectInfo(p.preamble.id, p.preamble.name, p.size,
                                      with_selector=p.with_selector, max_group_size=p.max_group_size)
            for p in p4info.action_profiles}
        self.counters = {c.preamble.id: ObjectInfo(c.preamble.id, c.preamble.name, c.size)
                         for c in p4info.counters}
        self.meters = {m.preamble.id: ObjectInfo(m.preamble.id, m.preamble.name, m.size)
                       for m in p4info.meters}
        self.direct_counters = {c.preamble.id: ObjectInfo(c.preamble.id, c.preamble.name,
                                                          table_id=c.direct_table_id)
                                for c in p4info.direct_counters}
        self.direct_meters = {m.preamble.id: ObjectInfo(m.preamble.id, m.preamble.name,
                                                        table_id=m.direct_table_id)
                              for m in p4info.direct_meters}
        self.registers = {}
        for r in p4info.registers:
            # a struct cell (TNA ``Register<pair, _>``) travels as one bitstring, its fields
            # packed first field high as the runtime keeps it: the width is their sum
            widths, _ = _bitwidth_of(r.type_spec, p4info.type_info)
            self.registers[r.preamble.id] = ObjectInfo(r.preamble.id, r.preamble.name, r.size,
                                                       bitwidth=sum(widths))
        self.digests = {}
        for d in p4info.digests:
            widths, is_struct = _bitwidth_of(d.type_spec, p4info.type_info)
            self.digests[d.preamble.id] = ObjectInfo(d.preamble.id, d.preamble.name,
                                                     field_widths=widths, is_struct=is_struct)
        self.digest_by_name = {d.name: d for d in self.digests.values()}
        self.value_sets = {}
        for v in p4info.value_sets:
            keys = tuple(KeyInfo(m.id, m.name, MATCH_KINDS.get(m.match_type, "exact"), m.bitwidth)
                         for m in v.match)
            self.value_sets[v.preamble.id] = ObjectInfo(v.preamble.id, v.preamble.name, v.size,
                                                        match=keys)
        self.tables: dict[int, TableInfo] = {}
        for t in p4info.tables:
            keys = []
            for m in t.match_fields:
                kind = MATCH_KINDS.get(m.match_type)
                if kind is None:
                    raise invalid(f"table '{t.preamble.name}' field '{m.name}': unsupported match kind")
                keys.append(KeyInfo(m.id, m.name, kind, m.bitwidth))
            info = TableInfo(
                id=t.preamble.id, name=t.preamble.name, keys=keys,
                key_pos={k.id: i for i, k in enumerate(keys)},
                action_scopes={r.id: r.scope for r in t.action_refs},
                size=t.size, implementation_id=t.implementation_id,
                const_default_action_id=t.const_default_action_id, is_const=t.is_const_table)
            for res in t.direct_resource_ids:
                if res in self.direct_counters:
                    info.direct_counter_id = res
                elif res in self.direct_meters:
                    info.direct_meter_id = res
            if info.implementation_id in self.action_profiles:
                info.with_selector = self.action_profiles[info.implementation_id].with_selector
            self.tables[info.id] = info
        self.table_by_name = {t.name: t for t in self.tables.values()}
        self.packet_in: list[PacketMetadataInfo] | None = None
        self.packet_out: list[PacketMetadataInfo] | None = None
        for cpm in p4info.controller_packet_metadata:
            fields = [PacketMetadataInfo(m.id, m.name, m.bitwidth) for m in cpm.metadata]
            if cpm.preamble.name == "packet_in":
                self.packet_in = fields
            elif cpm.preamble.name == "packet_out":
                self.packet_out = fields

    # --- look-ups that raise the spec's error for an unknown id -------------------------------
    def table(self, table_id: int) -> TableInfo:
        info = self.tables.get(table_id)
        if info is None:
            raise invalid(f"unknown table id {table_id}")
        return info

    def action(self, action_id: int) -> ActionInfo:
        info = self.actions.get(action_id)
        if info is None:
            raise invalid(f"unknown action id {action_id}")
        return info

    def lookup(self, kind: str, object_id: int) -> ObjectInfo:
        """kind is one of counters, meters, direct_counters, direct_meters, registers,
        action_profiles, value_sets, digests."""
        info = getattr(self, kind).get(object_id)
        if info is None:
            raise invalid(f"unknown {kind[:-1].replace('_', ' ')} id {object_id}")
        return info


def check_compatible(given: p4info_pb2.P4Info, compiled: p4info_pb2.P4Info) -> None:
    """Refuse a P4Info that names objects differently from the compiled program's own P4Info.

    Documentation and annotations may differ (p4c and p4sim phrase them differently); ids, names,
    match kinds, bitwidths and parameters may not, or entries would land in the wrong place.
    """
    def tables(p: p4info_pb2.P4Info) -> dict[int, tuple]:
        return {t.preamble.id: (t.preamble.name,
                                tuple((m.id, m.name, m.bitwidth, m.match_type) for m in t.match_fields),
                                tuple(sorted(r.id for r in t.action_refs)), t.implementation_id)
                for t in p.tables}

    def actions(p: p4info_pb2.P4Info) -> dict[int, tuple]:
        return {a.preamble.id: (a.preamble.name, tuple((x.id, x.name, x.bitwidth) for x in a.params))
                for a in p.actions}

    def simple(items) -> dict[int, str]:
        return {o.preamble.id: o.preamble.name for o in items}

    checks = [("table", tables), ("action", actions)]
    for kind in ("action_profiles", "counters", "direct_counters", "meters", "direct_meters",
                 "registers", "digests", "value_sets", "controller_packet_metadata"):
        checks.append((kind, lambda p, k=kind: simple(getattr(p, k))))
    for what, extract in checks:
        a, b = extract(given), extract(compiled)
        if a == b:
            continue
        for object_id in sorted(set(a) | set(b)):
            if a.get(object_id) != b.get(object_id):
                mine, theirs = a.get(object_id), b.get(object_id)
                label = mine or theirs
                name = label[0] if isinstance(label, tuple) else label
                if mine is None:
                    how = "is missing from the P4Info"
                elif theirs is None:
                    how = "is unknown to the compiled program"
                else:
                    how = "differs from the compiled program's"
                raise invalid(f"P4Info does not match the device config: {what} id {object_id} "
                              f"('{name}') {how}")
