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

Queues follow ``simple_switch``: ONE queue per egress port unless the file says
``priority_queues N``; a packet whose ``standard_metadata.priority`` is N or more is dropped
at the traffic manager ("Priority out of range", as BMv2 logs it), and ``qid`` is the priority.

Matching and name resolution live in ``matching``, BMv2 CLI commands in ``cli_commands``.
Control-plane refusals (duplicate entry, const default action) are reported and the test goes
on, as a BMv2 CLI error would; unknown names and malformed commands fail the test.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field

from p4sim.errors import StfError, UserError
from p4sim.runtime import hashes
from p4sim.runtime.tables import ActionCall, Table, TableEntry
from p4sim.stf.cli_commands import CliCommands
from p4sim.stf.matching import compare_outputs, compare_packet, resolve_key, resolve_name
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

__all__ = ["StfResult", "StfRun", "compare_outputs", "compare_packet", "resolve_name", "run_stf"]

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


# -- the runner ----------------------------------------------------------------------------------

class StfRun(CliCommands):
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
        """Run every command; the mismatches between expected and received packets (empty = pass)."""
        hashes.reset_crc_parameters()   # custom CRC settings live for one test only
        try:
            for cmd in self.stf.commands:
                log.debug("%s:%d: %s at t=%d us", self.stf.path, cmd.line, cmd.kind, self.now_us)
                try:
                    self._do(cmd)
                except UserError as err:
                    # a refusal by the runtime: BMv2's CLI prints an error and the test goes on
                    self.notes.append(f"{self.stf.path}:{cmd.line}: {cmd.kind}: {err}")
                    log.info("%s", self.notes[-1])
                except ValueError as err:
                    raise StfError(self.stf.path, cmd.line, str(err)) from None
        finally:
            hashes.reset_crc_parameters()
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
        if cmd.kind in ("no_packet", "priority_queues"):
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
            priority = getattr(qp, "priority", 0)
            if priority >= self.stf.priority_queues:
                # simple_switch: "Priority out of range, dropping packet"
                self.path.drops["priority_out_of_range"] += 1
                log.info("%s: packet on port %d: priority %d with %d queue(s) per port: dropped",
                         self.stf.path, port, priority, self.stf.priority_queues)
                continue
            qmeta = self.qmeta_factory(enq_timestamp=self.now_us, enq_qdepth=0, deq_qdepth=0,
                                  deq_timedelta=0, qid=priority)
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

TARGETS = ("p4sim", "bmv2")


def run_stf(program_path: str, stf_path: str, include_dirs: Iterable[str] = (),
            target: str = "p4sim") -> StfResult:
    """Compile ``program_path``, run ``stf_path`` against it, and say whether it passed.

    ``target`` is ``p4sim`` (this package) or ``bmv2`` (p4c + simple_switch, see
    ``bmv2_target``); both share the STF parser and ``matching.compare_outputs``.
    Compile errors and malformed STF files raise ``UserError`` subclasses.
    """
    if target == "bmv2":
        from p4sim.stf.bmv2_target import run_stf_bmv2

        return run_stf_bmv2(program_path, stf_path, include_dirs)
    if target != "p4sim":
        raise UserError(f"--target {target!r}: unknown STF target (choose from {', '.join(TARGETS)})")
    from p4sim.backend import compile_file
    from p4sim.v1model.pipeline import V1ModelPath

    stf = parse_file(stf_path)
    program = compile_file(program_path, list(include_dirs))
    run = StfRun(program.instantiate(), stf, V1ModelPath)
    errors = run.run()
    return StfResult(stf_path, not errors, errors, run.notes)
