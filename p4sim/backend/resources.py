"""What a compiled program needs at run time besides code: its tables and extern instances.

The code generator records one descriptor per table, extern instance, value set and digest,
named by its P4Info fully-qualified name and by the Python global the generated code uses.
``instantiate`` turns descriptors into fresh ``p4sim.runtime`` objects (one set per Pipeline);
``p4sim.backend.p4info`` turns the same descriptors into P4Info.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any


@dataclass
class KeyDesc:
    name: str
    match_kind: str
    bitwidth: int
    annotations: list[Any] = field(default_factory=list)
    type: Any = None          # the key expression's P4 type (P4Info lists serializable enums)


@dataclass
class ActionDesc:
    """An action as P4Info lists it: fully-qualified name, params (name, bitwidth)."""

    name: str
    params: list[tuple[str, int, list[Any]]]
    decl: Any = None


@dataclass
class TableActionRef:
    name: str
    scope: str = ""          # "", "defaultonly", "tableonly"
    annotations: list[Any] = field(default_factory=list)


@dataclass
class ConstEntry:
    match: tuple            # runtime match tuple (Exact/Lpm/...)
    action: str
    args: tuple[int, ...]
    priority: int


@dataclass
class TableDesc:
    pyname: str
    name: str
    keys: list[KeyDesc]
    actions: list[TableActionRef]
    size: int
    default_action: tuple[str, tuple[int, ...]] | None
    default_is_const: bool
    entries: list[ConstEntry]
    entries_const: bool = True
    implementation: str | None = None
    direct_counter: str | None = None
    direct_meter: str | None = None
    annotations: list[Any] = field(default_factory=list)
    decl: Any = None
    dispatch: list[str] = field(default_factory=list)   # action names in generated branch order
    applied: bool = False    # some reachable code applies it (p4c removes the others from P4Info)


@dataclass
class ExternDesc:
    """``kind`` in register, counter, direct_counter, meter, direct_meter, action_profile,
    action_selector. ``params`` holds the constructor values (size, bitwidth, kind, ...)."""

    kind: str
    pyname: str
    name: str
    params: dict[str, Any]
    annotations: list[Any] = field(default_factory=list)
    decl: Any = None


@dataclass
class ValueSetDesc:
    pyname: str
    name: str
    bitwidths: list[int]
    size: int
    annotations: list[Any] = field(default_factory=list)
    decl: Any = None


@dataclass
class DigestDesc:
    name: str                              # the digested type's name
    fields: list[tuple[str, int]]
    decl: Any = None
    field_types: list[Any] = field(default_factory=list)   # P4 types of the fields, in order


@dataclass
class Manifest:
    tables: list[TableDesc] = field(default_factory=list)
    externs: list[ExternDesc] = field(default_factory=list)
    value_sets: list[ValueSetDesc] = field(default_factory=list)
    actions: dict[str, ActionDesc] = field(default_factory=dict)
    action_order: list[str] = field(default_factory=list)   # P4Info order (as p4c lists them)
    digests: dict[str, DigestDesc] = field(default_factory=dict)
    controller_headers: list[Any] = field(default_factory=list)
    called_actions: list[str] = field(default_factory=list)  # actions called directly (P4Info lists them)
    extern_function_calls: bool = False     # the program calls a v1model extern function
