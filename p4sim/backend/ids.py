"""P4Runtime object ids computed exactly as p4c computes them.

p4c (``control-plane/p4RuntimeSymbolTable.cpp``) gives every P4Info object a 32-bit id whose top
8 bits are the resource type (``p4info.proto`` ``P4Ids.Prefix``) and whose low 24 bits are the
Jenkins one-at-a-time hash of the fully-qualified name. Ids fixed by ``@id`` are reserved first;
the remaining names of each type are then processed in sorted order, probing linearly past ids
already taken. Matching this keeps controllers written against p4c's P4Info working unchanged.
"""

from __future__ import annotations

from collections.abc import Iterable

from p4.config.v1 import p4info_pb2

from p4sim.errors import UserError

PREFIX = {name: value for name, value in p4info_pb2.P4Ids.Prefix.items()}
ACTION = PREFIX["ACTION"]
TABLE = PREFIX["TABLE"]
VALUE_SET = PREFIX["VALUE_SET"]
CONTROLLER_HEADER = PREFIX["CONTROLLER_HEADER"]
ACTION_PROFILE = PREFIX["ACTION_PROFILE"]
COUNTER = PREFIX["COUNTER"]
DIRECT_COUNTER = PREFIX["DIRECT_COUNTER"]
METER = PREFIX["METER"]
DIRECT_METER = PREFIX["DIRECT_METER"]
REGISTER = PREFIX["REGISTER"]
DIGEST = PREFIX["DIGEST"]

_MASK32 = 0xFFFFFFFF


def jenkins_one_at_a_time(name: str) -> int:
    """The 32-bit Jenkins one-at-a-time hash of ``name`` (UTF-8 bytes), as p4c computes it."""
    h = 0
    for byte in name.encode():
        h = (h + byte) & _MASK32
        h = (h + (h << 10)) & _MASK32
        h ^= h >> 6
    h = (h + (h << 3)) & _MASK32
    h ^= h >> 11
    h = (h + (h << 15)) & _MASK32
    return h


class IdAllocator:
    """Assigns ids for one program: explicit ``@id`` values first, then hashed names in order."""

    def __init__(self) -> None:
        self._taken: set[int] = set()
        self._pending: dict[int, list[str]] = {}
        self._ids: dict[tuple[int, str], int] = {}

    def add(self, prefix: int, name: str, explicit: int | None = None) -> None:
        """Register ``name`` of resource type ``prefix``; duplicates are ignored (as p4c does)."""
        key = (prefix, name)
        if key in self._ids or name in self._pending.get(prefix, ()):
            return
        if explicit is None:
            self._pending.setdefault(prefix, []).append(name)
            return
        top = explicit & 0xFF000000
        if top and top != prefix << 24:
            raise UserError(f"{name}: @id {explicit:#x} has the wrong 8-bit prefix (expected {prefix:#x})")
        full = explicit | (prefix << 24)
        if full in self._taken:
            raise UserError(f"{name}: @id {explicit:#x} is assigned to multiple declarations")
        self._taken.add(full)
        self._ids[key] = full

    def finish(self) -> None:
        """Give every pending name its hashed id (sorted by name per type, linear probing)."""
        for prefix in sorted(self._pending):
            for name in sorted(set(self._pending[prefix])):
                value = jenkins_one_at_a_time(name)
                start = value
                while (prefix << 24 | (value & 0xFFFFFF)) in self._taken:
                    value = (value + 1) & _MASK32
                    if value == start:
                        raise UserError(f"no available id to represent {name} in P4Runtime")
                full = prefix << 24 | (value & 0xFFFFFF)
                self._taken.add(full)
                self._ids[(prefix, name)] = full
        self._pending.clear()

    def get(self, prefix: int, name: str) -> int:
        return self._ids[(prefix, name)]


def shortest_unique_suffixes(names: Iterable[str]) -> dict[str, str]:
    """P4Runtime aliases: the shortest dot-separated suffix that identifies each name."""
    unique = sorted(set(names))
    counts: dict[tuple[str, ...], int] = {}
    for name in unique:
        parts = tuple(name.split("."))
        for k in range(1, len(parts) + 1):
            counts[parts[-k:]] = counts.get(parts[-k:], 0) + 1
    result: dict[str, str] = {}
    for name in unique:
        parts = tuple(name.split("."))
        for k in range(1, len(parts) + 1):
            if counts[parts[-k:]] < 2 or k == len(parts):
                result[name] = ".".join(parts[-k:])
                break
    return result
