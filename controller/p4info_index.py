"""A P4Info index: every name the controller uses resolved to its id, and entries built by name.

Names are accepted fully qualified (``DlcpIngress.nexthops``) or by their P4Info alias
(``nexthops``). An unknown name raises ``NameNotFound`` with "did you mean X?". Values are checked
against bitwidths (``controller.encoding``), so nothing malformed ever reaches a switch.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from pathlib import Path

from google.protobuf import text_format
from p4.config.v1 import p4info_pb2
from p4.v1 import p4runtime_pb2

from controller import encoding, wire
from controller.barefoot_p4info import register_barefoot_messages
from controller.errors import ControllerError, NameNotFound, ValueError_

MATCH_KINDS = {
    p4info_pb2.MatchField.EXACT: "exact",
    p4info_pb2.MatchField.LPM: "lpm",
    p4info_pb2.MatchField.TERNARY: "ternary",
    p4info_pb2.MatchField.RANGE: "range",
    p4info_pb2.MatchField.OPTIONAL: "optional",
}

# P4Info repeated fields holding entities with a preamble, by the kind word used in errors.
_KINDS = {
    "table": "tables",
    "action": "actions",
    "counter": "counters",
    "direct_counter": "direct_counters",
    "meter": "meters",
    "direct_meter": "direct_meters",
    "register": "registers",
    "value_set": "value_sets",
    "action_profile": "action_profiles",
    "controller_packet_metadata": "controller_packet_metadata",
}


def load_p4info(path: str | Path) -> p4info_pb2.P4Info:
    """Read a P4Info file, text format (``.txt``/``.txtpb``) or binary; UserError when unreadable."""
    path = Path(path)
    try:
        data = path.read_bytes()
    except OSError as err:
        raise ControllerError(f"{path}: cannot read P4Info: {err.strerror}") from None
    p4info = p4info_pb2.P4Info()
    register_barefoot_messages()        # a Tofino program's P4Info carries barefoot.* extern infos
    try:
        text_format.Parse(data.decode("utf-8"), p4info)
    except (UnicodeDecodeError, text_format.ParseError) as text_err:
        try:
            p4info.ParseFromString(data)
        except Exception:  # noqa: BLE001 - protobuf raises several types on garbage
            raise ControllerError(f"{path}: not a P4Info (text or binary): {text_err}") from None
    return p4info


class P4InfoIndex:
    """Names -> P4Info objects for one program; builds TableEntry/ValueSetEntry protos by name."""

    def __init__(self, p4info: p4info_pb2.P4Info) -> None:
        self.p4info = p4info
        self._by_name: dict[str, dict[str, object]] = {}
        self._by_id: dict[int, object] = {}
        self._action_id_cache: dict[int, frozenset[int]] = {}
        self._table_meta_cache: dict[str, tuple] = {}
        self._action_meta_cache: dict[tuple, tuple] = {}
        for kind, attr in _KINDS.items():
            names: dict[str, object] = {}
            for obj in getattr(p4info, attr):
                names[obj.preamble.name] = obj
                if obj.preamble.alias:
                    names.setdefault(obj.preamble.alias, obj)
                self._by_id[obj.preamble.id] = obj
            self._by_name[kind] = names

    @classmethod
    def from_file(cls, path: str | Path) -> P4InfoIndex:
        return cls(load_p4info(path))

    # -- lookups ---------------------------------------------------------------------------
    def get(self, kind: str, name: str, where: str = "") -> object:
        names = self._by_name[kind]
        obj = names.get(name)
        if obj is None:
            full = [n for n in names if "." in n] or list(names)
            raise NameNotFound(kind.replace("_", " "), name, full + list(names), where)
        return obj

    def table(self, name: str) -> p4info_pb2.Table:
        return self.get("table", name)

    def action(self, name: str) -> p4info_pb2.Action:
        return self.get("action", name)

    def counter(self, name: str) -> p4info_pb2.Counter:
        return self.get("counter", name)

    def direct_counter(self, name: str) -> p4info_pb2.DirectCounter:
        return self.get("direct_counter", name)

    def register(self, name: str) -> p4info_pb2.Register:
        return self.get("register", name)

    def value_set(self, name: str) -> p4info_pb2.ValueSet:
        return self.get("value_set", name)

    def by_id(self, entity_id: int) -> object | None:
        return self._by_id.get(entity_id)

    def name_of(self, entity_id: int) -> str:
        obj = self._by_id.get(entity_id)
        return obj.preamble.name if obj is not None else f"<id {entity_id}>"

    def has(self, kind: str, name: str) -> bool:
        return name in self._by_name[kind]

    def match_field(self, table: p4info_pb2.Table, name: str) -> p4info_pb2.MatchField:
        for mf in table.match_fields:
            if mf.name == name:
                return mf
        raise NameNotFound("match field", name, [m.name for m in table.match_fields],
                           f"table {table.preamble.name}")

    def action_param(self, action: p4info_pb2.Action, name: str) -> p4info_pb2.Action.Param:
        for param in action.params:
            if param.name == name:
                return param
        raise NameNotFound("action parameter", name, [p.name for p in action.params],
                           f"action {action.preamble.name}")

    def _action_ids(self, table: p4info_pb2.Table) -> frozenset[int]:
        ids = self._action_id_cache.get(table.preamble.id)
        if ids is None:
            ids = self._action_id_cache[table.preamble.id] = frozenset(r.id for r in table.action_refs)
        return ids

    @staticmethod
    def needs_priority(table: p4info_pb2.Table) -> bool:
        return any(MATCH_KINDS.get(mf.match_type) in ("ternary", "range", "optional")
                   for mf in table.match_fields)

    # -- builders ----------------------------------------------------------------------------
    def build_action(self, table: p4info_pb2.Table | None, action_name: str,
                     params: Mapping[str, object] | None, where: str,
                     into: p4runtime_pb2.Action | None = None) -> p4runtime_pb2.Action:
        """An Action by names (filled into ``into`` when given, to avoid a copy)."""
        action = self.get("action", action_name, where)
        if table is not None and action.preamble.id not in self._action_ids(table):
            allowed = [self.name_of(r.id) for r in table.action_refs]
            raise ValueError_(f"{where}: action {action.preamble.name} is not an action of this table "
                              f"(allowed: {', '.join(allowed)})")
        params = dict(params or {})
        msg = into if into is not None else p4runtime_pb2.Action()
        msg.action_id = action.preamble.id
        for param in action.params:
            if param.name not in params:
                raise ValueError_(f"{where}: action {action.preamble.name} needs parameter '{param.name}'")
            value = params.pop(param.name)
            msg.params.add(param_id=param.id, value=encoding.encode_value(
                value, param.bitwidth, f"{where} action {action.preamble.name} param {param.name}"))
        for extra in params:
            self.action_param(action, extra)  # raises NameNotFound with a suggestion
        return msg

    def _table_meta(self, table_name: str) -> tuple:
        """(table, its name, [(field name, id, kind, bitwidth, where)], field names, needs_priority)."""
        meta = self._table_meta_cache.get(table_name)
        if meta is None:
            table = self.table(table_name)
            tname = table.preamble.name
            fields = [(mf.name, mf.id, MATCH_KINDS.get(mf.match_type, "unknown"), mf.bitwidth,
                       f"table {tname} field {mf.name}") for mf in table.match_fields]
            meta = (table, tname, fields, frozenset(f[0] for f in fields), self.needs_priority(table))
            self._table_meta_cache[table_name] = meta
        return meta

    def _action_meta(self, table: p4info_pb2.Table, action_name: str, where: str) -> tuple:
        """(action, [(param name, id, bitwidth, where)]) of an action allowed in ``table``."""
        cache_key = (table.preamble.id if table is not None else 0, action_name, where)
        meta = self._action_meta_cache.get(cache_key)
        if meta is None:
            action = self.get("action", action_name, where)
            if table is not None and action.preamble.id not in self._action_ids(table):
                allowed = [self.name_of(r.id) for r in table.action_refs]
                raise ValueError_(f"{where}: action {action.preamble.name} is not an action of this table "
                                  f"(allowed: {', '.join(allowed)})")
            params = [(p.name, p.id, p.bitwidth, f"{where} action {action.preamble.name} param {p.name}")
                      for p in action.params]
            meta = self._action_meta_cache[cache_key] = (action, params)
        return meta

    def _action_parts(self, table: p4info_pb2.Table | None, action_name: str,
                      params: Mapping[str, object] | None, where: str) -> tuple[int, list[tuple[int, bytes]]]:
        action, pmeta = self._action_meta(table, action_name, where)
        params = params or {}
        out = []
        for pname, pid, width, pwhere in pmeta:
            if pname not in params:
                raise ValueError_(f"{where}: action {action.preamble.name} needs parameter '{pname}'")
            out.append((pid, encoding.encode_value(params[pname], width, pwhere)))
        if len(params) > len(out):
            known = {m[0] for m in pmeta}
            for extra in params:
                if extra not in known:
                    self.action_param(action, extra)  # raises NameNotFound with a suggestion
        return action.preamble.id, out

    def entry_parts(self, table_name: str, match: Mapping[str, object] | None = None,
                    action: str | None = None, params: Mapping[str, object] | None = None,
                    priority: int = 0, is_default: bool = False) -> tuple:
        """A checked entry as ``(table_id, match parts, priority, is_default, action_id, params)``
        (see ``wire.encode_entry``); the one place entries are validated."""
        table, tname, fields, names, needs_priority = self._table_meta(table_name)
        match = match or {}
        for name in match:
            if name not in names:
                self.match_field(table, name)  # unknown field names fail with a suggestion
        parts = []
        for fname, fid, kind, width, where in fields:
            if fname not in match:
                if kind == "exact" and not is_default:
                    raise ValueError_(f"{where}: exact field needs a value")
                continue
            part = encoding.match_part(kind, match[fname], width, where)
            if part is not None:
                parts.append((fid, *part))
        if is_default:
            priority = 0
        elif needs_priority:
            if priority <= 0:
                raise ValueError_(f"table {tname}: ternary/range/optional entries need a priority > 0")
        elif priority:
            raise ValueError_(f"table {tname}: exact/lpm entries take no priority (got {priority})")
        action_id, pparts = (None, []) if action is None else \
            self._action_parts(table, action, params, f"table {tname}")
        return table.preamble.id, parts, priority, is_default, action_id, pparts

    def build_wire_entry(self, table_name: str, match: Mapping[str, object] | None = None,
                         action: str | None = None, params: Mapping[str, object] | None = None,
                         priority: int = 0, is_default: bool = False) -> wire.WireEntry:
        """Like ``build_table_entry`` but as a ``WireEntry`` (bytes built directly, no protobuf)."""
        return wire.encode_entry(*self.entry_parts(table_name, match, action, params, priority, is_default))

    def build_table_entry(self, table_name: str, match: Mapping[str, object] | None = None,
                          action: str | None = None, params: Mapping[str, object] | None = None,
                          priority: int = 0, is_default: bool = False) -> p4runtime_pb2.TableEntry:
        """A TableEntry by names; ``match`` maps key field name -> human value (None = wildcard)."""
        return self.build_wire_entry(table_name, match, action, params, priority, is_default).proto

    def build_value_set_entry(self, name: str, values: Iterable[object]) -> p4runtime_pb2.ValueSetEntry:
        """The whole content of a parser value_set (P4Runtime only MODIFYs value sets)."""
        vs = self.value_set(name)
        values = list(values)
        if len(values) > vs.size:
            raise ValueError_(f"value_set {vs.preamble.name}: {len(values)} values, size is {vs.size}")
        entry = p4runtime_pb2.ValueSetEntry(value_set_id=vs.preamble.id)
        for value in values:
            member = entry.members.add()
            for mf in vs.match:
                kind = MATCH_KINDS.get(mf.match_type, "exact")
                fm = encoding.field_match(kind, mf.id, value, mf.bitwidth,
                                          f"value_set {vs.preamble.name} field {mf.name}")
                if fm is not None:
                    member.match.append(fm)
        return entry

    # -- readable forms --------------------------------------------------------------------------
    def entry_fields(self, entry: p4runtime_pb2.TableEntry) -> dict[str, str]:
        """``{field: text}`` of an entry's match, every key field present (``*`` for wildcards)."""
        table = self.by_id(entry.table_id)
        if table is None:
            return {}
        by_id = {fm.field_id: fm for fm in entry.match}
        return {mf.name: encoding.format_match(MATCH_KINDS.get(mf.match_type, ""), by_id.get(mf.id),
                                               mf.bitwidth, mf.name)
                for mf in table.match_fields}

    def action_text(self, entry: p4runtime_pb2.TableEntry) -> str:
        if not entry.HasField("action"):
            return "(none)"
        which = entry.action.WhichOneof("type")
        if which != "action":
            return f"{which}"
        act = entry.action.action
        action = self.by_id(act.action_id)
        if action is None:
            return f"<action {act.action_id}>"
        widths = {p.id: (p.name, p.bitwidth) for p in action.params}
        args = []
        for param in act.params:
            pname, width = widths.get(param.param_id, (str(param.param_id), 0))
            args.append(f"{pname}={encoding.format_value(encoding.decode(param.value), width, pname)}")
        short = action.preamble.alias or action.preamble.name
        return f"{short}({', '.join(args)})"

    def describe(self, entry: p4runtime_pb2.TableEntry) -> str:
        """One-line description for errors: ``table T match a=1 b=2 priority P``."""
        if entry.is_default_action:
            return f"table {self.name_of(entry.table_id)} default action"
        fields = " ".join(f"{k}={v}" for k, v in self.entry_fields(entry).items())
        prio = f" priority {entry.priority}" if entry.priority else ""
        return f"table {self.name_of(entry.table_id)} match {fields}{prio}"
