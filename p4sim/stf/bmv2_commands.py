"""Translate STF commands into ``simple_switch_CLI`` lines, as p4c's ``bmv2stf.py`` does.

The BMv2 target of ``p4sim stf`` programs a real ``simple_switch`` through its CLI, so every STF
control-plane command becomes one CLI line. Names are resolved against the BMv2 JSON that p4c
wrote (the exact name, else a unique suffix), and key values are rewritten the way the p4c
harness does:

* ``add T [PRIO] k:v ... A(p:x, ...)`` -> ``table_add T A v... => x... [PRIO']``: keys in the
  JSON's key order; keys the STF line leaves out are ``0`` (exact), ``0/0`` (lpm), ``0&&&0``
  (ternary, optional) or the full range; ternary ``0x1*`` -> ``0x10&&&0xF0`` (a mask digit per
  written digit), lpm ``0x0a**`` -> ``0x0a00/8``; action arguments in the action's
  ``runtime_data`` order. BMv2 picks the *smallest* priority value while STF's larger priority
  wins, so ``PRIO' = 10000 - PRIO`` (bmv2stf's inversion; a missing priority counts as 1, p4sim's
  STF default). The priority is only written for tables that take one (ternary, range, optional).
* ``setdefault T A(p:x)`` -> ``table_set_default T A x`` (no ``=>``: the CLI takes none there).
* ``remove all`` -> ``table_clear T`` for every table.
* BMv2 pass-through commands (``mirroring_add``, ``mc_*``, ``register_*``, ``counter_*``,
  ``meter_*``, ``table_add``, ``act_prof_*``, ``pvs_add``...) keep their syntax; only table,
  action and extern names are widened from a unique suffix to the full JSON name.
* ``check_counter C(i)`` -> ``counter_read C i`` (the runner parses the reply).
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field

from p4sim.errors import UserError
from p4sim.stf.matching import resolve_name
from p4sim.stf.parser import AddCommand, CheckCounterCommand, CliCommand, Command, SetDefaultCommand

PRIORITY_BASE = 10000       # bmv2stf: BMv2 priority = 10000 - STF priority
DEFAULT_STF_PRIORITY = 1    # what p4sim's runner uses when an add on a ternary table has none
_PRIORITY_KINDS = frozenset({"ternary", "range", "optional"})
_RADIX_MASK = {"0x": "F", "0b": "1", "0o": "7"}
_RADIX_BITS = {"0x": 4, "0b": 1, "0o": 3}


@dataclass
class Bmv2Key:
    target: str                 # "hdr.field" joined from the JSON "target" (bmv2stf's key name)
    name: str                   # the JSON "name" (the P4 expression), "" when absent
    match_type: str             # exact | lpm | ternary | range | optional | valid
    width: int | None           # bits, None when the JSON does not say


@dataclass
class Bmv2Table:
    name: str
    match_type: str
    keys: list[Bmv2Key]
    actions: list[str]

    @property
    def needs_priority(self) -> bool:
        return self.match_type in _PRIORITY_KINDS or any(k.match_type in _PRIORITY_KINDS
                                                         for k in self.keys)


@dataclass
class Bmv2Program:
    """What the translation needs from a BMv2 JSON: tables, actions and extern names."""

    tables: dict[str, Bmv2Table] = field(default_factory=dict)
    actions: dict[str, list[tuple[str, int]]] = field(default_factory=dict)
    externs: dict[str, list[str]] = field(default_factory=dict)   # JSON section -> names
    pvs_widths: dict[str, int] = field(default_factory=dict)     # parser value set -> bits

    @classmethod
    def from_json(cls, data: dict) -> Bmv2Program:
        widths = _field_widths(data)
        prog = cls()
        for a in data.get("actions", []):
            prog.actions[a["name"]] = [(p["name"], int(p["bitwidth"])) for p in a.get("runtime_data", [])]
        for pipe in data.get("pipelines", []):
            for t in pipe.get("tables", []):
                keys = []
                for k in t.get("key", []):
                    target = k.get("target", "")
                    joined = ".".join(str(x) for x in target) if isinstance(target, list) else str(target)
                    kind = k.get("match_type", "exact")
                    width = 1 if kind == "valid" or joined.endswith("$valid$") else widths.get(joined)
                    keys.append(Bmv2Key(joined, k.get("name", "") or "", kind, width))
                prog.tables[t["name"]] = Bmv2Table(t["name"], t.get("match_type", "exact"), keys,
                                                   list(t.get("actions", [])))
        for section in ("register_arrays", "counter_arrays", "meter_arrays", "action_profiles",
                        "parse_vsets"):
            prog.externs[section] = [x["name"] for x in data.get(section, [])]
        for vs in data.get("parse_vsets", []):
            if "compressed_bitwidth" in vs:
                prog.pvs_widths[vs["name"]] = int(vs["compressed_bitwidth"])
        return prog

    @classmethod
    def from_file(cls, path: str) -> Bmv2Program:
        try:
            with open(path, encoding="utf-8") as f:
                return cls.from_json(json.load(f))
        except (OSError, ValueError, KeyError, TypeError) as err:
            raise UserError(f"{path}: not a BMv2 JSON program ({err})") from None

    def all_externs(self) -> list[str]:
        return [n for names in self.externs.values() for n in names]


def _field_widths(data: dict) -> dict[str, int]:
    types = {ht["name"]: ht.get("fields", []) for ht in data.get("header_types", [])}
    out: dict[str, int] = {}
    for h in data.get("headers", []):
        for f in types.get(h.get("header_type"), []):
            if isinstance(f, list) and len(f) >= 2 and isinstance(f[1], int):
                out[f"{h['name']}.{f[0]}"] = f[1]
    return out


# -- keys ------------------------------------------------------------------------------------

def find_key(table: Bmv2Table, name: str) -> int:
    """Index of the key an STF ``name`` means (bmv2stf's ``TableKeyInstance.set`` rules)."""
    if name.endswith(".isValid()"):     # p4c's key name for `x.isValid()` is `x.$valid$`
        name = name[:-len(".isValid()")] + ".$valid$"
    m = re.match(r"(.*)\$([0-9]+)(.*)", name)
    if m:
        name = f"{m.group(1)}[{m.group(2)}]{m.group(3)}"
    spellings = [name, name + "$", name + ".$valid$"]
    if name.endswith(".valid"):
        spellings.append(name[:-5] + "$valid$")
    for s in spellings:
        for i, k in enumerate(table.keys):
            if s in (k.target, k.name):
                return i
    hits = [i for i, k in enumerate(table.keys)
            if any(n.endswith("." + name) or n.endswith("." + name + "$") for n in (k.target, k.name) if n)
            or (name == "valid" and k.target.endswith(".$valid$"))]
    if len(hits) == 1:
        return hits[0]
    if len(hits) > 1:
        raise ValueError(f"key {name!r} is ambiguous in table {table.name}")
    known = ", ".join(k.target for k in table.keys) or "none"
    raise ValueError(f"table {table.name} has no key {name!r} (keys: {known})")


def _full(width: int | None, what: str) -> int:
    if width is None:
        raise ValueError(f"the width of key {what} is not in the BMv2 JSON")
    return (1 << width) - 1


def key_text(value: str, key: Bmv2Key) -> str:
    """One STF key value in BMv2 CLI syntax for ``key``'s match type."""
    v = value.strip()
    prefix = v[:2].lower()
    if key.match_type in ("exact", "valid"):
        return v
    if key.match_type in ("ternary", "optional"):
        if "&&&" in v:
            return v
        if key.match_type == "optional" and v == "*":
            return "0&&&0"
        if prefix in _RADIX_MASK:
            digits = v[2:]
            mask = "".join("0" if c == "*" else _RADIX_MASK[prefix] for c in digits)
            return f"{v[:2]}{digits.replace('*', '0')}&&&{v[:2]}{mask}"
        return f"{v}&&&{hex(_full(key.width, key.target))}"
    if key.match_type == "lpm":
        if "/" in v:
            return v
        if prefix in _RADIX_BITS:
            digits = v[2:]
            plen = (len(digits) - digits.count("*")) * _RADIX_BITS[prefix]
            return f"{v[:2]}{digits.replace('*', '0')}/{plen}"
        _full(key.width, key.target)
        return f"{v}/{key.width}"
    if key.match_type == "range":
        for sep in ("->", ".."):
            if sep in v:
                lo, hi = v.split(sep, 1)
                return f"{lo.strip()}->{hi.strip()}"
        if prefix in _RADIX_MASK and "*" in v:
            digits = v[2:]
            radix = {"0x": 16, "0b": 2, "0o": 8}[prefix]
            lo = int(digits.replace("*", "0"), radix)
            hi = int(digits.replace("*", _RADIX_MASK[prefix]), radix)
            return f"{hex(lo)}->{hex(hi)}"
        return f"{v}->{v}"
    raise ValueError(f"key {key.target}: match type {key.match_type!r} is not supported by the BMv2 CLI")


def default_key_text(key: Bmv2Key) -> str:
    """bmv2stf's value for a key the STF line does not mention."""
    if key.match_type in ("ternary", "optional"):
        return "0&&&0"
    if key.match_type == "lpm":
        return "0/0"
    if key.match_type == "range":
        return f"0->{hex(_full(key.width, key.target))}"
    return "0"


# -- commands --------------------------------------------------------------------------------

def _args_text(program: Bmv2Program, action: str, args: list[tuple[str, str]]) -> list[str]:
    params = program.actions.get(action, [])
    names = [p for p, _ in params]
    given = {}
    for k, v in args:
        if k not in names:
            raise ValueError(f"action {action} has no parameter {k!r} (parameters: {', '.join(names) or 'none'})")
        given[k] = v
    missing = [p for p in names if p not in given]
    if missing:
        raise ValueError(f"action {action}: missing parameter {missing[0]!r}")
    return [given[p] for p in names]


def table_add_line(program: Bmv2Program, cmd: AddCommand) -> str:
    table = program.tables[resolve_name(cmd.table, program.tables, "table")]
    action = resolve_name(cmd.action, table.actions or program.actions, "action")
    keys = [default_key_text(k) for k in table.keys]
    for kname, raw in cmd.keys:
        i = find_key(table, kname)
        keys[i] = key_text(raw, table.keys[i])
    words = ["table_add", table.name, action, *keys, "=>", *_args_text(program, action, cmd.args)]
    if table.needs_priority:
        prio = cmd.priority if cmd.priority is not None else DEFAULT_STF_PRIORITY
        words.append(str(PRIORITY_BASE - prio))
    return " ".join(words)


def set_default_line(program: Bmv2Program, cmd: SetDefaultCommand) -> str:
    table = program.tables[resolve_name(cmd.table, program.tables, "table")]
    action = resolve_name(cmd.action, table.actions or program.actions, "action")
    return " ".join(["table_set_default", table.name, action, *_args_text(program, action, cmd.args)])


# pass-through commands: (index of the object name, JSON section or "tables"), (index of an action)
_NAMED = {
    "table_add": ("tables", 2), "table_set_default": ("tables", 2), "table_clear": ("tables", None),
    "table_indirect_add": ("tables", None), "table_indirect_add_with_group": ("tables", None),
    "table_indirect_set_default": ("tables", None),
    "register_write": ("register_arrays", None), "register_read": ("register_arrays", None),
    "register_reset": ("register_arrays", None),
    "counter_write": ("counter_arrays", None), "counter_read": ("counter_arrays", None),
    "counter_reset": ("counter_arrays", None),
    "meter_set_rates": ("meter_arrays", None), "meter_array_set_rates": ("meter_arrays", None),
    "act_prof_create_member": ("action_profiles", 2), "act_prof_create_group": ("action_profiles", None),
    "act_prof_add_member_to_group": ("action_profiles", None),
    "act_prof_remove_member_from_group": ("action_profiles", None),
    "pvs_add": ("parse_vsets", None), "pvs_clear": ("parse_vsets", None),
}


def _widen(name: str, candidates: list[str]) -> str:
    try:
        return resolve_name(name, candidates, "name")
    except ValueError:
        return name          # left for simple_switch_CLI to report


def check_pvs_width(program: Bmv2Program, name: str) -> None:
    """simple_switch_CLI 1.15.5 encodes a value-set value in ``(bitwidth + 7) / 8`` bytes with
    Python 3's true division: one byte too many unless bitwidth % 8 == 1, and simple_switch then
    aborts (``ParseVSetCommon::add``: ``Assertion `new_v.size() == width' failed``; the CLI shows
    ``TTransportException: TSocket read 0 bytes``). A BMv2 CLI bug: refuse it with the reason."""
    width = program.pvs_widths.get(name)
    if width is not None and width % 8 != 1:
        raise ValueError(f"value set {name} (bit<{width}>): BMv2's simple_switch_CLI cannot write it "
                         f"(its pvs_add sends {(width + 7) // 8 + 1} bytes, not {(width + 7) // 8}, "
                         f"and simple_switch aborts; a BMv2 CLI bug, see docs/bmv2.md)")


def passthrough_line(program: Bmv2Program, cmd: CliCommand) -> str:
    words = list(cmd.words)
    spec = _NAMED.get(cmd.kind)
    if cmd.kind in ("pvs_add", "pvs_remove") and words:
        check_pvs_width(program, _widen(words[0], program.externs.get("parse_vsets", [])))
    if spec and words:
        section, action_at = spec
        if section == "tables":
            words[0] = _widen(words[0], list(program.tables))
        else:
            # counters may be direct ones, which BMv2 lists under counter_arrays too
            words[0] = _widen(words[0], program.externs.get(section, []) or program.all_externs())
        if action_at is not None and len(words) > action_at - 1:
            words[action_at - 1] = _widen(words[action_at - 1], list(program.actions))
    return " ".join([cmd.kind, *words])


def counter_read_line(program: Bmv2Program, cmd: CheckCounterCommand, index: int) -> str:
    name = _widen(cmd.name, program.externs.get("counter_arrays", []))
    return f"counter_read {name} {index}"


def translate(program: Bmv2Program, cmd: Command) -> list[str]:
    """The CLI lines for one STF control-plane command (ValueError: bad names or values)."""
    if isinstance(cmd, AddCommand):
        return [table_add_line(program, cmd)]
    if isinstance(cmd, SetDefaultCommand):
        return [set_default_line(program, cmd)]
    if cmd.kind == "remove_all":
        return [f"table_clear {t}" for t in program.tables]
    if isinstance(cmd, CliCommand):
        return [passthrough_line(program, cmd)]
    raise ValueError(f"STF command {cmd.kind!r} has no BMv2 CLI form")


# -- CLI replies -----------------------------------------------------------------------------

_HANDLE = re.compile(r"Entry has been added with handle (\d+)")
# simple_switch_CLI 1.15 prints "RuntimeCmd: I.c[0]=  (0 bytes, 0 packets)"; older ones the Thrift repr
_COUNTER = re.compile(r"BmCounterValue\(\s*packets\s*=\s*(\d+)\s*,\s*bytes\s*=\s*(\d+)\s*\)")
_COUNTER_NEW = re.compile(r"=\s*\(\s*(\d+)\s+bytes\s*,\s*(\d+)\s+packets\s*\)")
_ERROR = re.compile(r"^(?:RuntimeCmd:\s*)?((?:Error|Invalid)\b.*|.*\bexception\b.*)$", re.IGNORECASE)


def parse_handle(output: str) -> int | None:
    """The entry handle ``table_add`` printed, if any."""
    m = _HANDLE.search(output)
    return int(m.group(1)) if m else None


def parse_counter(output: str) -> tuple[int, int] | None:
    """(packets, bytes) from ``counter_read``'s reply (either format BMv2's CLI has printed)."""
    m = _COUNTER.search(output)
    if m:
        return int(m.group(1)), int(m.group(2))
    m = _COUNTER_NEW.search(output)
    return (int(m.group(2)), int(m.group(1))) if m else None


def parse_counters(output: str) -> list[tuple[int, int]]:
    """Every (packets, bytes) reply in a transcript of several ``counter_read`` lines, in order."""
    found = [(m.start(), int(m.group(1)), int(m.group(2))) for m in _COUNTER.finditer(output)]
    found += [(m.start(), int(m.group(2)), int(m.group(1))) for m in _COUNTER_NEW.finditer(output)]
    return [(p, b) for _, p, b in sorted(found)]


def cli_errors(output: str) -> list[str]:
    """The error lines in a simple_switch_CLI transcript (it exits 0 even when a command fails)."""
    return [m.group(1).strip() for line in output.splitlines() if (m := _ERROR.match(line.strip()))]
