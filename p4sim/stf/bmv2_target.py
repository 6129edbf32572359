"""``p4sim stf --target bmv2``: run the same STF tests on real BMv2 (``simple_switch``).

The flow follows p4c's ``backends/bmv2/bmv2stf.py``, with two changes that make it exact and fast:

1. compile with ``p4c --target bmv2 --arch v1model`` (or ``p4c-bm2-ss``) to a BMv2 JSON;
2. start ``simple_switch`` with ``--packet-in ipc://TMP/packets.ipc`` (BMv2's nanomsg packet
   interface, the one PTF's ``nn`` platform uses) instead of pcap FIFOs, ``--thrift-port`` on a
   free port, its own ``--notifications-addr`` and log file, and wait until the Thrift port
   accepts connections (polling, as bmv2stf's ``check_switch_server_ready``);
3. run the STF commands in file order: control-plane commands become ``simple_switch_CLI``
   lines (``bmv2_commands``), run as one CLI process per consecutive batch; the CLI returns only
   once BMv2 applied every line, so no sleep is needed before the next packet. Before a batch
   that follows packets, and at ``wait``, the runner waits until the switch has been quiet for
   ``QUIET_S`` (nothing else tells when BMv2 finished a packet);
4. ``packet`` lines are PACKET_IN messages on the PAIR socket; a reader thread files every
   PACKET_OUT under its port; at the end the runner waits (bounded) until each port has as many
   packets as it expects, then ``QUIET_S`` more so that extra packets show up;
5. outputs are compared by the shared ``matching.compare_outputs``;
6. the switch is always terminated (then killed) and the temp directory removed.

Nanomsg framing (BMv2 ``dev_mgr_packet_in.cpp``): every message starts with three
native-endian (little-endian on every BMv2 host) int32 ``type, port, more``; type 0 PORT_ADD,
3 PACKET_IN (to the switch, ``more`` = length, frame follows), 4 PACKET_OUT (from the switch).
"""

from __future__ import annotations

import logging
import os
import shutil
import socket
import struct
import subprocess
import tempfile
import threading
import time
from collections.abc import Iterable
from dataclasses import dataclass, field

from p4sim.errors import StfError, UserError
from p4sim.stf import bmv2_commands as bc
from p4sim.stf.matching import compare_outputs
from p4sim.stf.parser import CheckCounterCommand, ExpectCommand, PacketCommand, StfFile, parse_file

log = logging.getLogger("p4sim.stf.bmv2")

COMPILERS = ("p4c", "p4c-bm2-ss")
SWITCH = "simple_switch"
CLI = "simple_switch_CLI"
QUIET_S = 0.25          # no output for this long = the switch is done with what it was given
OUTPUT_TIMEOUT_S = 10.0
START_TIMEOUT_S = 30.0
COMPILE_TIMEOUT_S = 300.0
CLI_TIMEOUT_S = 60.0
COUNTER_RETRIES = 3     # re-reads of a counter still below its expectation (packets in flight)

# -- nanomsg framing -----------------------------------------------------------------------------

PORT_ADD, PORT_REMOVE, PORT_SET_STATUS, PACKET_IN, PACKET_OUT, INFO_REQ, INFO_REP = range(7)
_HDR = struct.Struct("<iii")


@dataclass(frozen=True)
class NnMessage:
    type: int
    port: int
    more: int
    data: bytes = b""


def encode_message(msg_type: int, port: int, data: bytes = b"", more: int | None = None) -> bytes:
    """One packet-interface message; ``more`` defaults to ``len(data)`` for packets, else 0."""
    if more is None:
        more = len(data) if msg_type in (PACKET_IN, PACKET_OUT) else 0
    return _HDR.pack(msg_type, port, more) + data


def decode_message(raw: bytes) -> NnMessage:
    """Parse one message; ValueError when it is shorter than its header or its length says."""
    if len(raw) < _HDR.size:
        raise ValueError(f"nanomsg message of {len(raw)} bytes is shorter than its 12-byte header")
    msg_type, port, more = _HDR.unpack_from(raw)
    data = raw[_HDR.size:]
    if msg_type in (PACKET_IN, PACKET_OUT):
        if more < 0 or more > len(data):
            raise ValueError(f"packet message says {more} bytes but carries {len(data)}")
        data = data[:more]
    return NnMessage(msg_type, port, more, data)


# -- tools on PATH -------------------------------------------------------------------------------

@dataclass(frozen=True)
class Bmv2Tools:
    compiler: str
    switch: str
    cli: str


def missing_tools() -> list[str]:
    """What is missing from PATH to run STF tests on BMv2 (empty = everything is there)."""
    missing = []
    if not any(shutil.which(c) for c in COMPILERS):
        missing.append(" or ".join(COMPILERS))
    missing += [t for t in (SWITCH, CLI) if shutil.which(t) is None]
    return missing


def skip_reason() -> str | None:
    """Why BMv2 STF tests cannot run here (for ``pytest.skip``), or None when they can."""
    missing = missing_tools()
    if not missing:
        return None
    return f"BMv2 target: {', '.join(missing)} not found on PATH"


def find_tools() -> Bmv2Tools:
    """The BMv2 tools on PATH; a one-line ``UserError`` naming whatever is missing."""
    missing = missing_tools()
    if missing:
        raise UserError(f"--target bmv2: {', '.join(missing)} not found on PATH "
                        f"(install p4c and BMv2, see docs/bmv2.md)")
    compiler = next(shutil.which(c) for c in COMPILERS if shutil.which(c))
    return Bmv2Tools(compiler, shutil.which(SWITCH), shutil.which(CLI))  # type: ignore[arg-type]


def compile_command(tools: Bmv2Tools, program: str, out_dir: str, include_dirs: Iterable[str]) -> list[str]:
    """The p4c command line that writes ``program``'s BMv2 JSON into ``out_dir``."""
    cmd = [tools.compiler]
    if os.path.basename(tools.compiler) == "p4c":
        cmd += ["--target", "bmv2", "--arch", "v1model"]
    for d in include_dirs:
        cmd += ["-I", d]
    stem = os.path.splitext(os.path.basename(program))[0]
    if os.path.basename(tools.compiler) == "p4c":
        return cmd + ["-o", out_dir, program]
    return cmd + ["-o", os.path.join(out_dir, stem + ".json"), program]


def switch_command(tools: Bmv2Tools, json_path: str, workdir: str, thrift_port: int,
                   priority_queues: int = 1) -> list[str]:
    """The simple_switch command line (packet interface, Thrift port, private notification socket;
    ``--priority-queues N`` when the STF file asks for more than BMv2's one queue per port)."""
    # a target option: after the JSON and "--" (simple_switch's own parser)
    queues = ["--", "--priority-queues", str(priority_queues)] if priority_queues != 1 else []
    return [tools.switch, "--packet-in", f"ipc://{workdir}/packets.ipc",
            "--thrift-port", str(thrift_port), "--device-id", "0",
            "--notifications-addr", f"ipc://{workdir}/notifications.ipc",
            "--log-file", os.path.join(workdir, "switch"), "--log-flush", json_path, *queues]


def free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


# -- the running switch -------------------------------------------------------------------------

@dataclass
class _Outputs:
    packets: dict[int, list[bytes]] = field(default_factory=dict)
    count: int = 0
    last: float = 0.0
    cond: threading.Condition = field(default_factory=threading.Condition)


class Bmv2Switch:
    """One simple_switch process with a nanomsg packet socket; a context manager that cleans up."""

    def __init__(self, tools: Bmv2Tools, json_path: str, workdir: str, priority_queues: int = 1) -> None:
        self.tools = tools
        self.workdir = workdir
        self.thrift_port = free_port()
        self.out = _Outputs()
        self._stop = threading.Event()
        self._sock = None
        self._reader: threading.Thread | None = None
        argv = switch_command(tools, json_path, workdir, self.thrift_port, priority_queues)
        log.info("starting %s", " ".join(argv))
        self._stderr = open(os.path.join(workdir, "switch.stderr"), "wb")  # noqa: SIM115 - closed in close()
        try:
            self.proc = subprocess.Popen(argv, stdout=self._stderr, stderr=subprocess.STDOUT)
        except OSError as err:
            self._stderr.close()
            raise UserError(f"{tools.switch}: cannot start: {err.strerror or err}") from None

    def __enter__(self) -> Bmv2Switch:
        try:
            self._wait_ready()
            self._connect()
        except BaseException:
            self.close()
            raise
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def _wait_ready(self) -> None:
        deadline = time.monotonic() + START_TIMEOUT_S
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                raise UserError(f"simple_switch exited with status {self.proc.returncode} at start-up: "
                                f"{self.last_output()}")
            with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
                s.settimeout(0.5)
                if s.connect_ex(("127.0.0.1", self.thrift_port)) == 0:
                    return
            time.sleep(0.02)
        raise UserError(f"simple_switch: Thrift port {self.thrift_port} not ready after {START_TIMEOUT_S:.0f} s")

    def _connect(self) -> None:
        import pynng

        self._sock = pynng.Pair0(recv_timeout=100, send_timeout=int(OUTPUT_TIMEOUT_S * 1000))
        try:
            self._sock.dial(f"ipc://{self.workdir}/packets.ipc", block=True)
        except pynng.NNGException as err:
            raise UserError(f"simple_switch: cannot connect to its --packet-in socket: {err} "
                            f"(is BMv2 built with nanomsg/nng?)") from None
        self._reader = threading.Thread(target=self._read, name="bmv2-packets", daemon=True)
        self._reader.start()

    def add_ports(self, ports: Iterable[int]) -> None:
        for p in sorted(set(ports)):
            self._send(encode_message(PORT_ADD, p))

    def _send(self, raw: bytes) -> None:
        import pynng

        try:
            self._sock.send(raw)
        except pynng.NNGException as err:
            state = "exited" if self.proc.poll() is not None else "stopped reading packets"
            raise UserError(f"simple_switch {state}: cannot send on --packet-in ({err}): {self.last_output()}") from None

    def _read(self) -> None:
        import pynng

        while not self._stop.is_set():
            try:
                raw = self._sock.recv()
            except pynng.Timeout:
                continue
            except pynng.NNGException:
                return
            try:
                msg = decode_message(raw)
            except ValueError as err:
                log.warning("simple_switch sent a bad packet message: %s", err)
                continue
            if msg.type != PACKET_OUT:
                continue
            with self.out.cond:
                self.out.packets.setdefault(msg.port, []).append(msg.data)
                self.out.count += 1
                self.out.last = time.monotonic()
                self.out.cond.notify_all()

    def send(self, port: int, data: bytes) -> None:
        self._send(encode_message(PACKET_IN, port, data))
        with self.out.cond:
            self.out.last = time.monotonic()

    def wait_quiet(self, want: dict[int, int] | None = None) -> None:
        """Wait until every port in ``want`` has its count (bounded), then until QUIET_S of silence.

        Returns early when the switch has exited: nothing more will come.
        """
        deadline = time.monotonic() + OUTPUT_TIMEOUT_S
        with self.out.cond:
            while time.monotonic() < deadline and self.proc.poll() is None:
                short = any(len(self.out.packets.get(p, [])) < n for p, n in (want or {}).items())
                idle = time.monotonic() - self.out.last
                if not short and idle >= QUIET_S:
                    return
                self.out.cond.wait(timeout=max(0.01, QUIET_S - idle) if not short else 0.05)

    def cli(self, lines: list[str]) -> str:
        """Run ``lines`` through simple_switch_CLI; its transcript (it returns when all are applied)."""
        try:
            done = subprocess.run([self.tools.cli, "--thrift-port", str(self.thrift_port)],
                                  input="\n".join(lines) + "\n", capture_output=True, text=True,
                                  timeout=CLI_TIMEOUT_S, check=False)
        except subprocess.TimeoutExpired:
            raise UserError(f"simple_switch_CLI did not finish within {CLI_TIMEOUT_S:.0f} s") from None
        if done.returncode != 0:
            raise UserError(f"simple_switch_CLI exited with status {done.returncode}: "
                            f"{(done.stderr or done.stdout).strip().splitlines()[-1:]}")
        return done.stdout

    def last_output(self) -> str:
        try:
            self._stderr.flush()
            with open(os.path.join(self.workdir, "switch.stderr"), encoding="utf-8", errors="replace") as f:
                lines = f.read().strip().splitlines()
            return lines[-1] if lines else "(no output)"
        except OSError:
            return "(no output)"

    def close(self) -> None:
        self._stop.set()
        # the reader must leave recv() (its 100 ms timeout) before the socket closes: closing
        # an nng socket under a blocked recv() in another thread aborts the process
        if self._reader is not None:
            self._reader.join(timeout=5)
        if self._sock is not None:
            if self._reader is not None and self._reader.is_alive():
                log.warning("bmv2 packet reader did not stop; leaving its socket open")
            else:
                self._sock.close()
        if self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(timeout=5)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
        self._stderr.close()


# -- one STF test ------------------------------------------------------------------------------

def compile_program(tools: Bmv2Tools, program: str, out_dir: str, include_dirs: Iterable[str]) -> str:
    """Compile ``program`` to BMv2 JSON in ``out_dir``; its path. UserError with p4c's message."""
    argv = compile_command(tools, program, out_dir, include_dirs)
    try:
        done = subprocess.run(argv, capture_output=True, text=True, timeout=COMPILE_TIMEOUT_S, check=False)
    except subprocess.TimeoutExpired:
        raise UserError(f"{program}: p4c did not finish within {COMPILE_TIMEOUT_S:.0f} s") from None
    if done.returncode != 0:
        lines = [ln.strip() for ln in (done.stderr + "\n" + done.stdout).splitlines() if ln.strip()]
        first = next((ln for ln in lines if "error" in ln.lower()), lines[0] if lines else "no message")
        raise UserError(f"{program}: p4c failed: {first}")
    stem = os.path.splitext(os.path.basename(program))[0]
    path = os.path.join(out_dir, stem + ".json")
    if not os.path.isfile(path):
        raise UserError(f"{program}: p4c wrote no {path}")
    return path


class Bmv2Run:
    """The STF commands of one file against a running ``Bmv2Switch``."""

    def __init__(self, switch: Bmv2Switch, program: bc.Bmv2Program, stf: StfFile) -> None:
        self.switch = switch
        self.program = program
        self.stf = stf
        self.expected: dict[int, list[str]] = {}
        self.expect_any: set[int] = set()
        self.errors: list[str] = []
        self.notes: list[str] = []
        self.handles: dict[str, int] = {}
        self._batch: list[tuple[int, str]] = []
        self._checks: list[CheckCounterCommand] = []   # consecutive check_counter lines, read at once
        self._sent_since_cli = False

    def run(self) -> list[str]:
        self.switch.add_ports(self.stf.ports())
        for cmd in self.stf.commands:
            try:
                self._do(cmd)
            except ValueError as err:
                raise StfError(self.stf.path, cmd.line, str(err)) from None
        self._flush()
        if self._checks:
            checks, self._checks = self._checks, []
            try:
                self._check_counters(checks)
            except ValueError as err:
                raise StfError(self.stf.path, checks[0].line, str(err)) from None
        want = {p: len(v) for p, v in self.expected.items() if p not in self.expect_any}
        self.switch.wait_quiet(want)
        with self.switch.out.cond:
            outputs = {p: list(v) for p, v in self.switch.out.packets.items()}
        if self.switch.proc.poll() is not None:   # e.g. a failed P4 assert() aborts simple_switch
            self.errors.append(f"simple_switch exited during the test with status "
                               f"{self.switch.proc.returncode}: {self.switch.last_output()}")
        return self.errors + compare_outputs(self.stf.ports(), self.expected, self.expect_any, outputs)

    def _do(self, cmd: object) -> None:
        if self._checks and not isinstance(cmd, CheckCounterCommand):
            checks, self._checks = self._checks, []
            self._check_counters(checks)
        if isinstance(cmd, PacketCommand):
            self._flush()
            self.switch.send(cmd.port, cmd.data)
            self._sent_since_cli = True
        elif isinstance(cmd, ExpectCommand):
            if cmd.pattern is None:
                self.expect_any.add(cmd.port)
            else:
                self.expected.setdefault(cmd.port, []).append(cmd.pattern)
        elif cmd.kind == "wait":
            self._flush()
            self.switch.wait_quiet()
        elif cmd.kind in ("no_packet", "priority_queues"):
            pass                 # priority_queues: given to simple_switch at start-up
        elif isinstance(cmd, CheckCounterCommand):
            self._flush()
            self._checks.append(cmd)
        elif getattr(cmd, "handle", None):
            self._flush()
            (line,) = bc.translate(self.program, cmd)
            out = self._cli([(cmd.line, line)])
            handle = bc.parse_handle(out)
            if handle is not None:
                self.handles[cmd.handle] = handle
        else:
            self._batch += [(cmd.line, line) for line in bc.translate(self.program, cmd)]

    def _flush(self) -> None:
        if self._batch:
            batch, self._batch = self._batch, []
            self._cli(batch)

    def _cli(self, batch: list[tuple[int, str]]) -> str:
        if self._sent_since_cli:   # packets sent before this batch must not see its changes
            self.switch.wait_quiet()
            self._sent_since_cli = False
        out = self.switch.cli([line for _, line in batch])
        for err in bc.cli_errors(out):
            # a refusal: BMv2's CLI prints an error and the test goes on (as in p4sim's runner)
            self.notes.append(f"{self.stf.path}:{batch[0][0]}: simple_switch_CLI: {err}")
        return out

    def _check_counters(self, cmds: list[CheckCounterCommand]) -> None:
        """Read a run of consecutive ``check_counter`` lines in one CLI call and compare.

        Counters only grow, and BMv2 does not say when it has finished with the packets sent so
        far: a count below an ``==``/``>=`` expectation is read again after more quiet (at most
        COUNTER_RETRIES times) before it is reported."""
        lines = [(cmd.line, bc.counter_read_line(self.program, cmd, self._counter_index(cmd))) for cmd in cmds]
        for attempt in range(COUNTER_RETRIES + 1):
            out = self._cli(lines)
            values = bc.parse_counters(out)
            if len(values) != len(cmds):        # an error line in between: read one by one
                values = [bc.parse_counter(self._cli([ln])) for ln in lines]
            failures = [self._counter_failure(cmd, got, out) for cmd, got in zip(cmds, values, strict=True)]
            if not any(failures) or attempt == COUNTER_RETRIES or not any(
                    f and f[1] for f in failures):
                self.errors += [f[0] for f in failures if f]
                return
            time.sleep(QUIET_S * 2)
            self.switch.wait_quiet()

    def _counter_index(self, cmd: CheckCounterCommand) -> int:
        if isinstance(cmd.index, str):
            name = cmd.index.lstrip("$")
            if name not in self.handles:
                raise ValueError(f"no entry handle {cmd.index!r}")
            return self.handles[name]
        return cmd.index

    def _counter_failure(self, cmd: CheckCounterCommand, got: tuple[int, int] | None,
                         out: str) -> tuple[str, bool] | None:
        """None when the check holds, else (message, whether more time could make it hold)."""
        if got is None:
            return (f"{self.stf.path}:{cmd.line}: counter_read gave no value: "
                    f"{'; '.join(bc.cli_errors(out)) or out.strip()[-200:]}", False)
        value = got[0] if cmd.count_type == "packets" else got[1]
        ok = {"==": value == cmd.value, "!=": value != cmd.value, "<": value < cmd.value,
              "<=": value <= cmd.value, ">": value > cmd.value, ">=": value >= cmd.value}[cmd.op]
        if ok:
            return None
        return (f"{self.stf.path}:{cmd.line}: check_counter {cmd.name}({cmd.index}) "
                f"{cmd.count_type} {cmd.op} {cmd.value} failed: it is {value}",
                cmd.op in ("==", ">=", ">") and value < cmd.value)


def run_stf_bmv2(program_path: str, stf_path: str, include_dirs: Iterable[str] = ()) -> object:
    """Compile with p4c, run ``stf_path`` on simple_switch, return a ``runner.StfResult``."""
    from p4sim.stf.runner import StfResult

    tools = find_tools()
    stf = parse_file(stf_path)
    workdir = tempfile.mkdtemp(prefix="p4sim-stf-bmv2-")
    try:
        json_path = compile_program(tools, program_path, workdir, list(include_dirs))
        program = bc.Bmv2Program.from_file(json_path)
        with Bmv2Switch(tools, json_path, workdir, stf.priority_queues) as switch:
            run = Bmv2Run(switch, program, stf)
            errors = run.run()
        return StfResult(stf_path, not errors, errors, run.notes)
    finally:
        shutil.rmtree(workdir, ignore_errors=True)
