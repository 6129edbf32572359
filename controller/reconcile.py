"""Reconciliation: read what a switch holds, diff against the desired entries, write the difference.

A ``Plan`` lists deletes, modifies and inserts (plus value-set MODIFYs). ``apply_plan`` writes them
in three phases, deletes (reverse dependency order), modifies, inserts (dependency order), each
phase in WriteRequests of ``batch_size`` updates (default 250: a refused batch's per-update errors
must fit the switch's gRPC status trailer, about 11 KB on p4sim). Nothing to change means no Write at all,
so running ``apply`` twice writes nothing. When a phase fails, every update already applied by this
plan (earlier phases and the accepted part of the failed batch) is undone in reverse, and the error
lists the refused entries one by one with the switch's own message.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass, field

from p4.v1 import p4runtime_pb2

from controller import dlcp_tables as api
from controller import wire
from controller.desired import SwitchDesired
from controller.errors import ApplyFailed, ControllerError, SwitchError, WriteError
from controller.p4info_index import P4InfoIndex
from controller.p4rt_client import P4RuntimeClient

log = logging.getLogger("controller.reconcile")

Update = p4runtime_pb2.Update
DEFAULT_BATCH_SIZE = 250


_canon = wire.canon
entry_key = wire.entry_key
action_key = wire.action_key


def _value_set_members(entry: p4runtime_pb2.ValueSetEntry) -> list[bytes]:
    members = []
    for m in entry.members:
        parts = []
        for fm in sorted(m.match, key=lambda f: f.field_id):
            c = p4runtime_pb2.FieldMatch()
            c.CopyFrom(fm)
            kind = c.WhichOneof("field_match_type")
            if kind == "exact":
                c.exact.value = _canon(c.exact.value)
            parts.append(c.SerializeToString(deterministic=True))
        members.append(b"|".join(parts))
    return sorted(members)


@dataclass
class Change:
    kind: str                                     # insert | modify | delete
    entry: p4runtime_pb2.TableEntry               # what is written
    old: p4runtime_pb2.TableEntry | None = None   # what was there (modify, delete)


@dataclass
class Plan:
    switch: str
    deletes: list[Change] = field(default_factory=list)
    modifies: list[Change] = field(default_factory=list)
    inserts: list[Change] = field(default_factory=list)
    value_sets: list[tuple[p4runtime_pb2.ValueSetEntry, p4runtime_pb2.ValueSetEntry | None]] = \
        field(default_factory=list)

    def empty(self) -> bool:
        return not (self.deletes or self.modifies or self.inserts or self.value_sets)

    def counts(self) -> dict[str, int]:
        return {"delete": len(self.deletes), "modify": len(self.modifies) + len(self.value_sets),
                "insert": len(self.inserts)}

    def size(self) -> int:
        """How many lines ``lines`` gives (without describing any entry)."""
        return len(self.deletes) + len(self.modifies) + len(self.inserts) + len(self.value_sets)

    def lines(self, index: P4InfoIndex, limit: int | None = None) -> list[str]:
        """The diff as ``- / ~ / +`` lines (what ``dlcpctl apply --dry-run`` prints); the first
        ``limit`` only when given (describing an entry is the costly part of a large diff)."""
        out: list[str] = []
        for sign, changes in (("-", self.deletes), ("~", self.modifies), ("+", self.inserts)):
            for ch in changes[:None if limit is None else max(0, limit - len(out))]:
                text = f"{sign} {index.describe(ch.entry)} -> {index.action_text(ch.entry)}"
                if ch.kind == "modify" and ch.old is not None:
                    text += f" (was {index.action_text(ch.old)})"
                out.append(text)
        for new, _ in self.value_sets[:None if limit is None else max(0, limit - len(out))]:
            out.append(f"~ value_set {index.name_of(new.value_set_id)} = {len(new.members)} member(s)")
        return out


def managed_table_ids(index: P4InfoIndex) -> list[int]:
    return [index.table(name).preamble.id for name in api.TABLE_ORDER if index.has("table", name)]


def read_current(client: P4RuntimeClient, index: P4InfoIndex) -> dict[tuple, wire.WireEntry]:
    """Every entry the switch holds in the DLCP tables, keyed by ``entry_key``."""
    wanted = set(managed_table_ids(index))
    current = {}
    for entry in client.read_table_entries_wire(0):
        if entry.table_id in wanted and not entry.is_default_action:
            current[entry.key] = entry
    return current


UNREADABLE = p4runtime_pb2.ValueSetEntry()   # sentinel: the switch cannot read value sets back


def read_value_set(client: P4RuntimeClient, value_set_id: int) -> p4runtime_pb2.ValueSetEntry | None:
    """The value set's members, None when it has none, ``UNREADABLE`` when the switch cannot say."""
    entity = p4runtime_pb2.Entity()
    entity.value_set_entry.value_set_id = value_set_id
    try:
        for found in client.read([entity]):
            return found.value_set_entry
    except SwitchError as err:
        log.info("switch %s: cannot read value sets back (%s); written only with a new pipeline",
                 client.name, err)
        return UNREADABLE
    return None


def read_default(client: P4RuntimeClient, table_id: int) -> p4runtime_pb2.TableEntry | None:
    """The default entry of a table (None when the switch does not report one)."""
    entity = p4runtime_pb2.Entity()
    entity.table_entry.table_id = table_id
    entity.table_entry.is_default_action = True
    for found in client.read([entity]):
        if found.table_entry.is_default_action:
            return found.table_entry
    return None


def diff(switch: str, current: dict[tuple, p4runtime_pb2.TableEntry], desired: SwitchDesired,
         index: P4InfoIndex, current_value_sets: dict[int, p4runtime_pb2.ValueSetEntry | None],
         current_defaults: dict[int, p4runtime_pb2.TableEntry | None] | None = None) -> Plan:
    plan = Plan(switch)
    rank = {index.table(n).preamble.id: i for i, n in enumerate(api.TABLE_ORDER) if index.has("table", n)}
    seen = set()
    for entry in desired.entries:
        key = entry_key(entry)
        seen.add(key)
        old = current.get(key)
        if old is None:
            plan.inserts.append(Change("insert", entry))
        elif action_key(old) != action_key(entry):
            plan.modifies.append(Change("modify", entry, old))
    for entry in desired.defaults:   # default actions are only ever MODIFYed
        old = (current_defaults or {}).get(entry.table_id)
        if old is None or action_key(old) != action_key(entry):
            restore = old if old is not None else p4runtime_pb2.TableEntry(table_id=entry.table_id,
                                                                           is_default_action=True)
            plan.modifies.append(Change("modify", entry, restore))
    stale = [old for key, old in current.items() if key not in seen]
    stale.sort(key=lambda e: -rank.get(e.table_id, 0))
    plan.deletes = [Change("delete", e, e) for e in stale]
    for vs in desired.value_sets:
        old = current_value_sets.get(vs.value_set_id)
        if old is UNREADABLE:   # cannot diff: written with each new pipeline (see diff's callers)
            continue
        if old is None or _value_set_members(old) != _value_set_members(vs):
            plan.value_sets.append((vs, old))
    return plan


def compute_plan(client: P4RuntimeClient, index: P4InfoIndex, desired: SwitchDesired,
                 fresh_pipeline: bool = False) -> Plan:
    """The plan for one switch; ``fresh_pipeline`` (just pushed) writes value sets without reading."""
    current = read_current(client, index)
    vsets = {} if fresh_pipeline else {vs.value_set_id: read_value_set(client, vs.value_set_id)
                                       for vs in desired.value_sets}
    defaults = {e.table_id: read_default(client, e.table_id) for e in desired.defaults}
    return diff(client.name, current, desired, index, vsets, defaults)


def _update(kind: int, table_entry: p4runtime_pb2.TableEntry | None = None,
            value_set: p4runtime_pb2.ValueSetEntry | None = None) -> Update:
    up = Update(type=kind)
    if table_entry is not None:
        up.entity.table_entry.CopyFrom(wire.as_proto(table_entry))
    else:
        up.entity.value_set_entry.CopyFrom(value_set)
    return up


@dataclass
class ApplyResult:
    switch: str
    counts: dict[str, int]
    batches: int


def _inverse(kind: int, change: Change | tuple) -> Update:
    """The update that undoes one applied update of ``kind``."""
    if isinstance(change, tuple):   # value set: (new, old)
        new, old = change
        restore = old if old is not None else p4runtime_pb2.ValueSetEntry(value_set_id=new.value_set_id)
        return _update(Update.MODIFY, value_set=restore)
    if kind == Update.INSERT:
        return _update(Update.DELETE, change.entry)
    if kind == Update.DELETE:
        return _update(Update.INSERT, change.old)
    return _update(Update.MODIFY, change.old)


def apply_plan(client: P4RuntimeClient, index: P4InfoIndex, plan: Plan,
               batch_size: int = DEFAULT_BATCH_SIZE) -> ApplyResult:
    """Write ``plan``; on failure undo what it applied and raise the switch's per-entry errors.

    Descriptions and inverse updates are only built when something fails, so a large install
    costs one protobuf copy per entry.
    """
    phases: list[tuple[int, list]] = [(Update.DELETE, list(plan.deletes)),
                                      (Update.MODIFY, list(plan.modifies) + list(plan.value_sets)),
                                      (Update.INSERT, list(plan.inserts))]
    applied: list[tuple[int, Change | tuple]] = []
    batches = 0
    for kind, changes in phases:
        for start in range(0, len(changes), batch_size):
            chunk = changes[start:start + batch_size]
            updates = [(kind, c[0] if isinstance(c, tuple) else c.entry) for c in chunk]
            try:
                client.write_entities(updates)
                batches += 1
            except WriteError as err:
                failed = {i for i, _, _ in err.details} if err.details else set(range(len(chunk)))
                applied.extend((kind, c) for i, c in enumerate(chunk) if i not in failed)
                described = WriteError(err.switch, err.details, [_describe(index, c) for c in chunk],
                                       summary=err.message.removeprefix("write failed: "))
                raise _rolled_back(client, [_inverse(k, c) for k, c in applied], described) from None
            except SwitchError as err:
                raise _rolled_back(client, [_inverse(k, c) for k, c in applied], err) from None
            applied.extend((kind, c) for c in chunk)
    counts = plan.counts()
    if not plan.empty():
        log.info("switch %s: applied %s in %d batch(es)", plan.switch, counts, batches)
    return ApplyResult(plan.switch, counts, batches)


def _describe(index: P4InfoIndex, change: Change | tuple) -> str:
    if isinstance(change, tuple):
        return f"value_set {index.name_of(change[0].value_set_id)}"
    return index.describe(change.entry)


def _undo(client: P4RuntimeClient, inverses: list[Update]) -> None:
    """Write ``inverses`` (in application order) backwards; consecutive updates of one kind form
    one batch, so the kinds stay in reverse order. Raises SwitchError when the switch refuses."""
    groups: list[list[Update]] = []
    for up in reversed(inverses):
        if groups and groups[-1][0].type == up.type and len(groups[-1]) < DEFAULT_BATCH_SIZE:
            groups[-1].append(up)
        else:
            groups.append([up])
    for group in groups:
        client.write(group)


def undo_plan(client: P4RuntimeClient, plan: Plan) -> int:
    """Undo a plan that was applied completely (another switch of the same change failed)."""
    inverses = [_inverse(Update.DELETE, c) for c in plan.deletes]
    inverses += [_inverse(Update.MODIFY, c) for c in plan.modifies]
    inverses += [_inverse(Update.MODIFY, vs) for vs in plan.value_sets]
    inverses += [_inverse(Update.INSERT, c) for c in plan.inserts]
    _undo(client, inverses)
    return len(inverses)


def _rolled_back(client: P4RuntimeClient, applied: list[Update], err: SwitchError) -> ControllerError:
    if not applied:
        return err
    try:
        _undo(client, applied)
    except SwitchError as undo_err:
        return ApplyFailed(f"{err}; ROLLBACK FAILED after partial apply: {undo_err}")
    return ApplyFailed(f"{err}; rolled back {len(applied)} applied update(s)")
