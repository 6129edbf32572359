"""Run an STF test against a compiled program the way p4c's BMv2 harness (``bmv2stf.py``) does.

The program is compiled and instantiated, then the STF commands run in file order: table and
PRE/extern commands program the pipeline, each ``packet`` goes through the v1model path
(ingress, then egress of everything the traffic manager received, with empty queues, E2E
clones and recirculations fed back) and its outputs are recorded per port. At the end the
outputs are compared like ``bmv2stf.py``'s ``checkOutputs``:

* only ports named by a ``packet`` or ``expect`` line are observed (BMv2 has an interface on
  exactly those; anything sent elsewhere is lost);
* per observed port the number of packets must equal the number of ``expect`` lines, unless a
  bare ``expect PORT`` allows any number;
* the i-th packet is compared with the i-th expectation: ``*`` nibbles match anything, the
  received packet may be longer (prefix match) unless the expectation ends with ``$``.

Name resolution follows the harness: exact name, else a unique suffix (tables, actions), and
for keys the exact name or a ``.``-separated suffix. Control-plane refusals (duplicate entry,
const default action) are reported and the test goes on, as a BMv2 CLI error would; unknown
names and malformed commands fail the test.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field

from p4sim.errors import StfError, UserError
from p4sim.runtime import hashes
from p4sim.runtime.tables import ActionCall, Table, TableEntry
from p4sim.stf.parser import (
    AddCommand,
    CheckCounterCommand,
    CliCommand,
    Command,
    ExpectCommand,
    PacketCommand,
    SetDefaultCommand,
    StfFile,
    key_value,
    parse_file,
    parse_int,
)

log = logging.getLogger("p4sim.stf")

CONTROL_DELAY_US = 1_000_000   # bmv2stf sleeps 1 s before the first packet after CLI commands
WAIT_US = 1_000_000
PACKET_GAP_US = 1
MAX_PACKET_EVENTS = 10_000     # bound on ingress/egress passes per input packet (recirculation loops)


@dataclass
class StfResult:
    name: str
    passed: bool
    errors: list[str] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)


# -- packet comparison (bmv2stf.comparePacket / checkOutputs) ----------------------------------

def compare_packet(pattern: str, data: bytes) -> str | None:
    """None when ``data`` matches the STF expectation ``pattern``, else why not."""
    received = data.hex().upper()
    expected = "".join(pattern.split()).upper()
    strict = expected.endswith("$")
    if strict:
        expected = expected[:-1]
    if len(received) < len(expected):
        return (f"received packet too short: {len(received)} vs {len(expected)} hex digits; "
                f"expected {expected}, received {received}")
    for i, c in enumerate(expected):
        if c != "*" and c != received[i]:
            return (f"packet differs at hex digit {i}: expected {c}, received {received[i]}; "
                    f"expected {expected}, received {received}")
    if strict and len(received) > len(expected):
        return (f"received packet too long: {len(received)} vs {len(expected)} hex digits; "
                f"expected {expected}$, received {received}")
    return None


def compare_outputs(ports: Iterable[int], expected: dict[int, list[str]], expect_any: set[int],
                    outputs: dict[int, list[bytes]]) -> list[str]:
    """Every mismatch between expectations and outputs on the observed ``ports`` (empty = pass)."""
    errors: list[str] = []
    for port in sorted(set(ports)):
        got = outputs.get(port, [])
        if port in expect_any:
            continue
        want = expected.get(port, [])
        if len(want) != len(got):
            kind = "unexpected packet(s)" if len(got) > len(want) else "missing packet(s)"
            errors.append(f"port {port}: expected {len(want)} packet(s), got {len(got)} ({kind})")
            for i, p in enumerate(want):
                errors.append(f"  expected #{i + 1}: {p}")
            for i, d in enumerate(got):
                errors.append(f"  received #{i + 1}: {d.hex().upper()}")
            continue
        for i, (p, d) in enumerate(zip(want, got, strict=True)):
            why = compare_packet(p, d)
            if why:
                errors.append(f"port {port}: packet #{i + 1}: {why}")
    return errors


# -- name resolution ---------------------------------------------------------------------------

def resolve_name(name: str, candidates: Iterable[str], what: str) -> str:
    """Exact name, else the unique candidate ending with ``name`` (preferring a '.' boundary)."""
    cands = list(candidates)
    if name in cands:
        return name
    matches = [c for c in cands if c.endswith(name)]
    if len(matches) > 1:
        dotted = [c for c in matches if c.endswith("." + name)]
        if len(dotted) == 1:
            return dotted[0]
        raise ValueError(f"{what} name {name!r} is ambiguous: {', '.join(sorted(matches))}")
    if not matches:
        known = ", ".join(sorted(cands)) or "none"
        raise ValueError(f"no {what} {name!r} (known: {known})")
    return matches[0]


def _key_aliases(name: str) -> list[str]:
    out = [name]
    if "$valid$" in name or name.endswith(".valid"):
        base = name.replace(".$valid$", "").replace("$valid$", "")
        if base.endswith(".valid"):
            base = base[:-6]
        out.append(base + ".isValid()" if base else "isValid()")
    if "$" in name:
        import re
        out.append(re.sub(r"\$([0-9]+)", r"[\1]", name))
    return out


def resolve_key(name: str, table: Table) -> int:
    names = [k.name for k in table.keys]
    for alias in _key_aliases(name):
        if alias in names:
            return names.index(alias)
    for alias in _key_aliases(name):
        hits = [i for i, n in enumerate(names) if n.endswith("." + alias)]
        if len(hits) == 1:
            return hits[0]
        if len(hits) > 1:
            raise ValueError(f"key {name!r} is ambiguous in table {table.name}")
    raise ValueError(f"table {table.name} has no key {name!r} (keys: {', '.join(names) or 'none'})")


# -- the runner ----------------------------------------------------------------------------------

class StfRun:
    """One STF file against one freshly instantiated pipeline."""

    def __init__(self, pipeline: object, stf: StfFile, path_factory: Callable[[object], object],
                 qmeta_factory: Callable[..., object] | None = None) -> None:
        self.pipeline = pipeline
        self.qmeta_factory = qmeta_factory
        self.stf = stf
        self.path = path_factory(pipeline)
        self.now_us = CONTROL_DELAY_US
        self.pending_delay = False
        self.outputs: dict[int, list[bytes]] = {}
        self.expected: dict[int, list[str]] = {}
        self.expect_any: set[int] = set()
        self.notes: list[str] = []
        self.errors: list[str] = []
        self.handles: dict[str, tuple[Table, TableEntry]] = {}
        self.table_entries: dict[str, list[TableEntry]] = {}
        self.cli_handles: dict[tuple[str, str], int] = {}
        self.action_params = _action_params(pipeline)

    # -- command dispatch -----------------------------------------------------------------

    def run(self) -> list[str]:
        hashes.reset_crc_parameters()
        for cmd in self.stf.commands:
            try:
                self._do(cmd)
            except UserError as err:
                # a refusal by the runtime: BMv2's CLI prints an error and the test goes on
                self.notes.append(f"{self.stf.path}:{cmd.line}: {cmd.kind}: {err}")
            except ValueError as err:
                raise StfError(self.stf.path, cmd.line, str(err)) from None
        return self.errors + compare_outputs(self.stf.ports(), self.expected, self.expect_any, self.outputs)

    def _do(self, cmd: Command) -> None:
        if isinstance(cmd, PacketCommand):
            if self.pending_delay:
                self.now_us += CONTROL_DELAY_US
                self.pending_delay = False
            self.now_us += PACKET_GAP_US
            self._send(cmd.data, cmd.port)
            return
        if isinstance(cmd, ExpectCommand):
            if cmd.pattern is None:
                self.expect_any.add(cmd.port)
            else:
                self.expected.setdefault(cmd.port, []).append(cmd.pattern)
            return
        if cmd.kind == "wait":
            self.now_us += WAIT_US
            return
        if cmd.kind == "no_packet":
            return
        self.pending_delay = True
        if isinstance(cmd, AddCommand):
            self._add(cmd)
        elif isinstance(cmd, SetDefaultCommand):
            table = self._table(cmd.table)
            table.set_default(self._action(table, cmd.action, cmd.args))
        elif isinstance(cmd, CheckCounterCommand):
            self._check_counter(cmd)
        elif cmd.kind == "remove_all":
            for t in self.pipeline.tables.values():
                t.clear()
        elif isinstance(cmd, CliCommand):
            self._cli(cmd)

    # -- tables -------------------------------------------------------------------------------

    def _table(self, name: str) -> Table:
        return self.pipeline.tables[resolve_name(name, self.pipeline.tables, "table")]

    def _action(self, table: Table, name: str, args: list[tuple[str, str]]) -> ActionCall:
        full = resolve_name(name, table.actions or self.action_params, "action")
        params = self.action_params.get(full, [])
        given = {}
        for k, v in args:
            if k not in {p for p, _ in params}:
                raise ValueError(f"action {full} has no parameter {k!r} "
                                 f"(parameters: {', '.join(p for p, _ in params) or 'none'})")
            given[k] = parse_int(v)
        values = []
        for p, width in params:
            if p not in given:
                raise ValueError(f"action {full}: missing parameter {p!r}")
            v = given[p]
            if v < 0 or v >= 1 << (((width + 7) // 8) * 8):
                raise ValueError(f"action {full}: value {v} does not fit parameter {p} (bit<{width}>)")
            values.append(v & ((1 << width) - 1))
        return ActionCall(full, tuple(values))

    def _add(self, cmd: AddCommand) -> None:
        table = self._table(cmd.table)
        match: list[object] = [None] * len(table.keys)
        seen = set()
        for kname, raw in cmd.keys:
            i = resolve_key(kname, table)
            seen.add(i)
            k = table.keys[i]
            try:
                match[i] = key_value(raw, k.match_kind, k.bitwidth)
            except ValueError as err:
                raise ValueError(f"key {k.name}: {err}") from None
        for i, k in enumerate(table.keys):
            if i not in seen and k.match_kind == "exact":
                match[i] = key_value("0", "exact", k.bitwidth)
        if table.needs_priority:
            priority = cmd.priority if cmd.priority is not None else 1
        else:
            priority = 0
        action = self._action(table, cmd.action, cmd.args)
        entry = TableEntry(tuple(match), action, priority=priority)
        self._insert(table, entry)
        if cmd.handle:
            self.handles[cmd.handle] = (table, entry)

    # -- externs / PRE -------------------------------------------------------------------------

    def _extern(self, kind: str, name: str) -> object:
        objs = getattr(self.pipeline, kind, None) or {}
        return objs[resolve_name(name, objs, kind.rstrip("s").replace("_", " "))]

    def _entry_by_index(self, table_name: str | None, index: str) -> TableEntry:
        if index.startswith("$") or index[0].isalpha():
            h = index.lstrip("$")
            if h not in self.handles:
                raise ValueError(f"no entry handle {index!r}")
            return self.handles[h][1]
        entries = self.table_entries.get(table_name or "", [])
        i = parse_int(index)
        if not 0 <= i < len(entries):
            raise ValueError(f"no entry handle {i} in table {table_name}")
        return entries[i]

    def _check_counter(self, cmd: CheckCounterCommand) -> None:
        counters = getattr(self.pipeline, "counters", {}) or {}
        direct = getattr(self.pipeline, "direct_counters", {}) or {}
        if isinstance(cmd.index, int) and counters:
            try:
                c = counters[resolve_name(cmd.name, counters, "counter")]
            except ValueError:
                c = None
            if c is not None:
                packets, nbytes = c.read_cell(cmd.index)
                self._compare_count(cmd, packets, nbytes)
                return
        dname = resolve_name(cmd.name, direct, "counter")
        entry = self._entry_by_index(getattr(direct[dname], "table", None), str(cmd.index))
        self._compare_count(cmd, entry.packets, entry.bytes)

    def _compare_count(self, cmd: CheckCounterCommand, packets: int, nbytes: int) -> None:
        actual = packets if cmd.count_type == "packets" else nbytes
        ok = {"==": actual == cmd.value, "!=": actual != cmd.value, "<=": actual <= cmd.value,
              ">=": actual >= cmd.value, "<": actual < cmd.value, ">": actual > cmd.value}[cmd.op]
        if not ok:
            self.errors.append(f"{self.stf.path}:{cmd.line}: check_counter {cmd.name}({cmd.index}): "
                               f"{cmd.count_type} is {actual}, expected {cmd.op} {cmd.value}")

    def _cli(self, cmd: CliCommand) -> None:
        w = cmd.words
        pre = self.pipeline.pre
        k = cmd.kind

        def need(n: int) -> None:
            if len(w) < n:
                raise ValueError(f"{k} needs {n} argument(s), got {len(w)}")

        if k == "mirroring_add":
            need(2)
            pre.mirroring_add(parse_int(w[0]), parse_int(w[1]))
        elif k == "mirroring_add_mc":
            need(2)
            pre.mirroring_add_mc(parse_int(w[0]), parse_int(w[1]))
        elif k == "mirroring_delete":
            need(1)
            pre.mirroring_delete(parse_int(w[0]))
        elif k == "mc_mgrp_create":
            need(1)
            pre.mc_mgrp_create(parse_int(w[0]))
        elif k == "mc_mgrp_destroy":
            need(1)
            pre.mc_mgrp_destroy(parse_int(w[0]))
        elif k == "mc_node_create":
            need(1)
            ports = [parse_int(p) for p in w[1:] if p != "|"]
            pre.mc_node_create(parse_int(w[0]), ports)
        elif k == "mc_node_update":
            need(1)
            pre.mc_node_update(parse_int(w[0]), [parse_int(p) for p in w[1:] if p != "|"])
        elif k == "mc_node_associate":
            need(2)
            pre.mc_node_associate(parse_int(w[0]), parse_int(w[1]))
        elif k == "mc_node_dissociate":
            need(2)
            pre.mc_node_dissociate(parse_int(w[0]), parse_int(w[1]))
        elif k == "mc_node_destroy":
            need(1)
            pre.mc_node_destroy(parse_int(w[0]))
        elif k == "register_write":
            need(3)
            self._extern("registers", w[0]).set_cell(parse_int(w[1]), parse_int(w[2]))
        elif k == "register_reset":
            need(1)
            self._extern("registers", w[0]).reset()
        elif k == "counter_write":
            need(4)
            self._extern("counters", w[0]).write_cell(parse_int(w[1]), parse_int(w[2]), parse_int(w[3]))
        elif k == "counter_reset":
            need(1)
            self._extern("counters", w[0]).reset()
        elif k in ("meter_set_rates", "meter_array_set_rates"):
            self._meter_set_rates(w)
        elif k == "table_set_default":
            need(2)
            table = self._table(w[0])
            rest = [x for x in w[2:] if x != "=>"]
            full = resolve_name(w[1], table.actions or self.action_params, "action")
            params = self.action_params.get(full, [])
            if len(rest) != len(params):
                raise ValueError(f"action {full} takes {len(params)} argument(s), got {len(rest)}")
            table.set_default(ActionCall(full, tuple(parse_int(x) & ((1 << wd) - 1)
                                                     for x, (_, wd) in zip(rest, params, strict=True))))
        elif k in _PROFILE_COMMANDS:
            self._profile_cli(k, w)
        elif k in ("pvs_add", "pvs_clear"):
            need(1)
            vs = self._extern("value_sets", w[0])
            if k == "pvs_clear":
                vs.clear()
            else:
                need(2)
                vs.add(_split_concat(parse_int(w[1]), vs.bitwidths))
        elif k in ("set_crc16_parameters", "set_crc32_parameters"):
            need(6)
            algo = "crc16_custom" if k == "set_crc16_parameters" else "crc32_custom"
            hashes.set_crc_parameters(algo, parse_int(w[1]), parse_int(w[2]), parse_int(w[3]),
                                      w[4].lower() in ("true", "1"), w[5].lower() in ("true", "1"))
        # register_read / counter_read print in BMv2's CLI and change nothing

    # -- BMv2 CLI: table_add and action profiles (a p4sim extension to p4c's STF) ----------------

    def _cli_match(self, table: Table, words: list[str]) -> tuple:
        if len(words) != len(table.keys):
            raise ValueError(f"table {table.name} has {len(table.keys)} key field(s), got {len(words)}")
        return tuple(key_value(v, k.match_kind, k.bitwidth) for v, k in zip(words, table.keys, strict=True))

    def _cli_entry(self, table: Table, words: list[str]) -> tuple[tuple, list[str], int]:
        """Split ``MATCH... => DATA... [PRIORITY]`` into (match, data words, priority)."""
        if "=>" not in words:
            raise ValueError("expected '=>' between the match fields and the action data")
        i = words.index("=>")
        match = self._cli_match(table, words[:i])
        data = words[i + 1:]
        priority = 0
        if table.needs_priority:
            if not data:
                raise ValueError(f"table {table.name} needs a priority")
            priority = parse_int(data[-1])
            data = data[:-1]
        return match, data, priority

    def _profile_cli(self, k: str, w: list[str]) -> None:
        if len(w) < 1:
            raise ValueError(f"{k} needs arguments")
        if k == "table_add":
            table = self._table(w[0])
            if len(w) < 2:
                raise ValueError("table_add needs TABLE ACTION MATCH... => DATA...")
            match, data, prio = self._cli_entry(table, w[2:])
            full = resolve_name(w[1], table.actions or self.action_params, "action")
            params = self.action_params.get(full, [])
            if len(data) != len(params):
                raise ValueError(f"action {full} takes {len(params)} argument(s), got {len(data)}")
            args = tuple(parse_int(x) & ((1 << wd) - 1) for x, (_, wd) in zip(data, params, strict=True))
            self._insert(table, TableEntry(match, ActionCall(full, args), priority=prio))
            return
        if k in ("table_indirect_add", "table_indirect_add_with_group"):
            table = self._table(w[0])
            match, data, prio = self._cli_entry(table, w[1:])
            if len(data) != 1:
                raise ValueError(f"{k}: expected one {'group' if k.endswith('group') else 'member'} handle")
            handle = parse_int(data[0])
            if k.endswith("group"):
                entry = TableEntry(match, None, priority=prio, group_id=handle)
            else:
                entry = TableEntry(match, None, priority=prio, member_id=handle)
            self._insert(table, entry)
            return
        if k == "table_indirect_set_default":
            raise ValueError("table_indirect_set_default is not supported by p4sim's STF runner")
        prof = self._extern("action_profiles", w[0])
        if k == "act_prof_create_member":
            if len(w) < 2:
                raise ValueError("act_prof_create_member needs PROFILE ACTION [PARAMS...]")
            full = resolve_name(w[1], prof.actions or self.action_params, "action")
            params = self.action_params.get(full, [])
            data = w[2:]
            if len(data) != len(params):
                raise ValueError(f"action {full} takes {len(params)} argument(s), got {len(data)}")
            handle = self._next_handle(("member", prof.name))
            prof.add_member(handle, ActionCall(full, tuple(parse_int(x) & ((1 << wd) - 1)
                                                         for x, (_, wd) in zip(data, params, strict=True))))
        elif k == "act_prof_create_group":
            prof.add_group(self._next_handle(("group", prof.name)))
        elif k == "act_prof_add_member_to_group":
            if len(w) < 3:
                raise ValueError(f"{k} needs PROFILE MEMBER_HANDLE GROUP_HANDLE")
            prof.add_member_to_group(parse_int(w[2]), parse_int(w[1]))
        elif k == "act_prof_remove_member_from_group":
            if len(w) < 3:
                raise ValueError(f"{k} needs PROFILE MEMBER_HANDLE GROUP_HANDLE")
            prof.remove_member_from_group(parse_int(w[2]), parse_int(w[1]))

    def _next_handle(self, key: tuple[str, str]) -> int:
        n = self.cli_handles.get(key, 0)
        self.cli_handles[key] = n + 1
        return n

    def _insert(self, table: Table, entry: TableEntry) -> None:
        table.insert(entry)
        self.table_entries.setdefault(table.name, []).append(entry)

    def _meter_set_rates(self, w: list[str]) -> None:
        if len(w) < 4:
            raise ValueError("meter_set_rates needs NAME INDEX RATE:BURST RATE:BURST")
        rates = []
        for spec in w[2:4]:
            if ":" not in spec:
                raise ValueError(f"meter rate {spec!r} is not RATE:BURST")
            r, b = spec.split(":", 1)
            rates.append((float(r), parse_int(b)))
        (cir, cbs), (pir, pbs) = rates
        meters = getattr(self.pipeline, "meters", {}) or {}
        direct = getattr(self.pipeline, "direct_meters", {}) or {}
        try:
            meter = meters[resolve_name(w[0], meters, "meter")]
        except ValueError:
            if not direct:
                raise
            dname = resolve_name(w[0], direct, "meter")
            dm = direct[dname]
            dm.set_config(self._entry_by_index(getattr(dm, "table", None), w[1]), cir, cbs, pir, pbs)
            return
        meter.set_config(parse_int(w[1]), cir, cbs, pir, pbs)

    # -- packets --------------------------------------------------------------------------------

    def _send(self, data: bytes, port: int) -> None:
        if self.qmeta_factory is None:
            from p4sim.v1model.pipeline import QueueMetadata
            self.qmeta_factory = QueueMetadata
        queue = list(self.path.ingress(data, port, self.now_us))
        events = 0
        while queue:
            events += 1
            if events > MAX_PACKET_EVENTS:
                self.errors.append(f"packet on port {port}: more than {MAX_PACKET_EVENTS} "
                                   f"ingress/egress passes (recirculation loop?)")
                return
            qp = queue.pop(0)
            qmeta = self.qmeta_factory(enq_timestamp=self.now_us, enq_qdepth=0, deq_qdepth=0,
                                  deq_timedelta=0, qid=0)
            for out in self.path.egress(qp, qmeta, self.now_us):
                kind = type(out).__name__
                if kind == "Transmit":
                    self.outputs.setdefault(out.port, []).append(bytes(out.data))
                elif kind == "Enqueue":
                    queue.append(_queued_of(out))
                elif kind == "Recirculate":
                    queue.extend(self._recirculate(out))
                else:
                    raise StfError(self.stf.path, 0, f"unknown egress output {kind}")

    def _recirculate(self, out: object) -> list:
        fn = getattr(self.path, "recirculate", None)
        if fn is not None:
            return list(fn(out, self.now_us))
        port = getattr(out, "port", getattr(out, "ingress_port", 0))
        return list(self.path.ingress(out.data, port, self.now_us))


_PROFILE_COMMANDS = frozenset({
    "table_add", "act_prof_create_member", "act_prof_create_group", "act_prof_add_member_to_group",
    "act_prof_remove_member_from_group", "table_indirect_add", "table_indirect_add_with_group",
    "table_indirect_set_default",
})


def _split_concat(value: int, widths: list[int]) -> tuple[tuple[int, int], ...]:
    """A value-set member given as one number: the fields concatenated, first field highest."""
    out = []
    for width in reversed(widths):
        out.append((value & ((1 << width) - 1), (1 << width) - 1))
        value >>= width
    return tuple(reversed(out))


def _queued_of(out: object) -> object:
    for attr in ("pkt", "packet", "queued"):
        if hasattr(out, attr):
            return getattr(out, attr)
    return out


def _action_params(pipeline: object) -> dict[str, list[tuple[str, int]]]:
    out: dict[str, list[tuple[str, int]]] = {}
    p4info = getattr(getattr(pipeline, "program", None), "p4info", None)
    if p4info is None:
        return out
    for a in p4info.actions:
        out[a.preamble.name] = [(p.name, p.bitwidth) for p in a.params]
    return out


# -- entry points ----------------------------------------------------------------------------------

def run_stf(program_path: str, stf_path: str, include_dirs: Iterable[str] = ()) -> StfResult:
    """Compile ``program_path``, run ``stf_path`` against it, and say whether it passed.

    Compile errors and malformed STF files raise ``UserError`` subclasses.
    """
    from p4sim.backend import compile_file
    from p4sim.v1model.pipeline import V1ModelPath

    stf = parse_file(stf_path)
    program = compile_file(program_path, list(include_dirs))
    run = StfRun(program.instantiate(), stf, V1ModelPath)
    errors = run.run()
    return StfResult(stf_path, not errors, errors, run.notes)
