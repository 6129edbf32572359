"""The one place the server touches runtime objects (Contracts 1-3): matches, actions, externs.

The P4Runtime layers speak in neutral values (see ``codec``); this module turns them into the
runtime's classes (``Exact``, ``ActionCall``, ``TableEntry``...) and reads runtime state back. Runtime
modules are imported when first needed, so the translation layer works (and is tested) on its own.
Action profile members and groups are reached through their ``members``/``groups`` maps (a
member repeats in a group once per unit of weight, which the runtime's own setters would dedupe).
"""

from __future__ import annotations

from typing import Any

import grpc

from p4sim.p4runtime_server.errors import P4RuntimeError, invalid

__all__ = ["tables_module", "to_runtime_match", "from_runtime_match", "make_entry", "action_call",
           "profile_members", "profile_groups", "pre_set_multicast", "pre_delete_multicast",
           "pre_set_clone", "pre_delete_clone", "value_set_replace", "runtime_meter_args",
           "meter_config_tuple", "set_direct_meter"]


_TABLES = None


def tables_module():
    global _TABLES
    if _TABLES is None:
        from p4sim.runtime import tables
        _TABLES = tables
    return _TABLES


def to_runtime_match(match: tuple) -> tuple:
    t = tables_module()
    out = []
    for f in match:
        if f is None:
            out.append(None)
            continue
        kind = f[0]
        if kind == "exact":
            out.append(t.Exact(f[1]))
        elif kind == "lpm":
            out.append(t.Lpm(f[1], f[2]))
        elif kind == "ternary":
            out.append(t.Ternary(f[1], f[2]))
        elif kind == "range":
            out.append(t.Range(f[1], f[2]))
        else:
            out.append(t.Optional_(f[1]))
    return tuple(out)


def from_runtime_match(match: tuple, kinds: list[str]) -> tuple:
    """Neutral match of a runtime entry's match (also accepts bare ints for exact fields)."""
    out: list[tuple | None] = []
    for f, kind in zip(match, kinds, strict=True):
        if f is None:
            out.append(None)
        elif isinstance(f, int):
            out.append((kind, f) if kind in ("exact", "optional") else None)
        else:
            name = type(f).__name__
            if name == "Exact":
                out.append(("exact", f.value))
            elif name == "Optional_":
                out.append(("optional", f.value))
            elif name == "Lpm":
                out.append(("lpm", f.value, f.prefix_len) if f.prefix_len else None)
            elif name == "Ternary":
                out.append(("ternary", f.value, f.mask) if f.mask else None)
            elif name == "Range":
                out.append(("range", f.low, f.high))
            else:
                raise invalid(f"runtime match field of unknown type {name}")
    return tuple(out)


def action_call(name: str, args: tuple):
    return tables_module().ActionCall(name, tuple(args))


def make_entry(match: tuple, action, priority: int, member_id: int | None = None,
               group_id: int | None = None):
    return tables_module().TableEntry(match=match, action=action, priority=priority,
                                      member_id=member_id, group_id=group_id)


# ---- action profiles -------------------------------------------------------------------------

def profile_members(profile: Any) -> dict:
    """member_id -> ActionCall of a runtime ActionProfile (its ``members`` mapping)."""
    members = getattr(profile, "members", None)
    if members is None:
        raise invalid(f"action profile {getattr(profile, 'name', '?')}: runtime has no members map")
    return members


def profile_groups(profile: Any) -> dict:
    """group_id -> list of member ids (a member appears once per unit of weight)."""
    groups = getattr(profile, "groups", None)
    if groups is None:
        raise invalid(f"action profile {getattr(profile, 'name', '?')} is not a selector")
    return groups


# ---- packet replication engine (p4sim.runtime.pre.PacketReplicationEngine) -----------------------

def pre_set_multicast(pre: Any, group: int, replicas: list[tuple[int, int]]) -> None:
    """Replace multicast group ``group`` by (instance, port) replicas."""
    pre.set_group(group, list(replicas))


def pre_delete_multicast(pre: Any, group: int) -> None:
    pre.delete_group(group)


def pre_set_clone(pre: Any, session: int, replicas: list[tuple[int, int]], class_of_service: int,
                  truncate: int) -> None:
    """Clone session to a set of (instance, port) replicas."""
    pre.set_clone_session(session, replicas=list(replicas), truncate=truncate,
                          class_of_service=class_of_service)


def pre_delete_clone(pre: Any, session: int) -> None:
    pre.delete_clone_session(session)


# ---- value sets --------------------------------------------------------------------------------

def value_set_replace(vs: Any, members: list[tuple], widths: list[int]) -> None:
    """Replace a parser value set's members; each neutral match becomes (value, mask) per field."""
    converted = []
    for match in members:
        fields = []
        for f, width in zip(match, widths, strict=True):
            full = (1 << width) - 1
            if f is None:
                fields.append((0, 0))
            elif f[0] in ("exact", "optional"):
                fields.append((f[1], full))
            elif f[0] == "ternary":
                fields.append((f[1], f[2]))
            elif f[0] == "lpm":
                fields.append((f[1], full ^ ((1 << (width - f[2])) - 1)))
            else:
                raise P4RuntimeError(grpc.StatusCode.UNIMPLEMENTED,
                                     f"value set {getattr(vs, 'name', '?')}: range members are not supported")
        converted.append(tuple(fields))
    vs.set(converted)


# ---- meters ----------------------------------------------------------------------------------
# P4Runtime rates are units per second; the runtime's trTCM (like BMv2's CLI) takes units per us.

def runtime_meter_args(config: tuple[int, int, int, int]) -> tuple[float, int, float, int]:
    cir, cburst, pir, pburst = config
    return cir / 1e6, cburst, pir / 1e6, pburst


def meter_config_tuple(value: Any) -> tuple[int, int, int, int] | None:
    """(cir, cburst, pir, pburst) in P4Runtime units of a runtime MeterConfig (or a tuple)."""
    if value is None:
        return None
    if isinstance(value, tuple | list):
        return tuple(value[:4])
    return (round(value.cir * 1e6), int(value.cburst), round(value.pir * 1e6), int(value.pburst))


def set_direct_meter(pipeline: Any, meter_name: str, entry: Any,
                     config: tuple[int, int, int, int] | None) -> None:
    meter = getattr(pipeline, "direct_meters", {}).get(meter_name)
    if config is None:
        entry.meter_config = None
    elif meter is not None:
        meter.set_config(entry, *runtime_meter_args(config))
    else:
        from p4sim.runtime.externs import MeterConfig
        entry.meter_config = MeterConfig(*runtime_meter_args(config))
