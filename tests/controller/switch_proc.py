"""Real ``p4sim switch`` processes for controller tests: start, readiness by polling gRPC (no
sleeps), SIGKILL/restart on the same ports, and BMv2's nanomsg packet interface to send and
receive frames. The DLCP program is compiled by p4sim (``device_switch.dlcp_program``); a
compile failure fails the tests, it does not skip them."""

from __future__ import annotations

import atexit
import functools
import queue
import shutil
import struct
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

import grpc
from google.protobuf import text_format

from mininet_topos.ports import free_ports
from p4sim.switch.ready import ready_ports

ROOT = Path(__file__).resolve().parents[2]
DLCP_P4 = ROOT / "p4src" / "bmv2" / "dlcp.p4"
PACKET_IN, PACKET_OUT, PORT_ADD = 3, 4, 0


@functools.cache
def compiled_dlcp() -> tuple[Path, Path]:
    """``(p4info.txtpb, p4sim.json)`` of the DLCP program, compiled once per test session."""
    from device_switch import dlcp_program
    program = dlcp_program()
    out = Path(tempfile.mkdtemp(prefix="dlcp-controller-tests-"))
    atexit.register(shutil.rmtree, out, ignore_errors=True)
    p4info = out / "dlcp.p4info.txtpb"
    p4info.write_text(text_format.MessageToString(program.p4info))
    config = out / "dlcp.p4sim.json"
    config.write_bytes(program.device_config())
    return p4info, config


def free_port() -> int:
    """A TCP port free now, from below the ephemeral range (mininet_topos/ports.py): for a program
    that cannot bind port 0 and report it (BMv2's thrift port), or an address where nothing may listen."""
    return free_ports(1)[0]


def _forward_lines(stream, lines: queue.Queue[bytes]) -> None:
    """Put every line of STREAM on LINES, then b"" at its end."""
    for line in stream:
        lines.put(line)
    lines.put(b"")


class SwitchProcess:
    """One ``p4sim switch`` process (no program, or ``program``) with a P4Runtime server, ctl
    endpoint and nanomsg ports."""

    def __init__(self, workdir: Path, device_id: int, program: str | None = None) -> None:
        self.workdir, self.device_id, self.program = workdir, device_id, program
        self.grpc_port = self.ctl_port = 0      # chosen by the switch's own bind at the first start()
        self.ipc = f"ipc://{workdir}/s{device_id}.ipc"
        self.log = workdir / f"s{device_id}.log"
        self.proc: subprocess.Popen | None = None

    @property
    def grpc_addr(self) -> str:
        return f"127.0.0.1:{self.grpc_port}"

    def start(self, timeout: float = 30.0) -> None:
        """Start the process and wait until its P4Runtime server answers. The first start lets the
        switch bind port 0 and reads the ports it got from its ready line (a port probed free and
        closed again can be taken by another process during the ~1 s start-up); a restart reuses
        them, as a restarted switch keeps its address."""
        start_with = [self.program] if self.program else ["--no-p4"]
        argv = [sys.executable, "-m", "p4sim.cli", "switch", *start_with, "--device-id", str(self.device_id),
                "--grpc-server-addr", self.grpc_addr, "--ctl-addr", f"127.0.0.1:{self.ctl_port}",
                "--priority-queues", "8",   # DLCP's priority map uses queues 0..7 (the default is 1, as BMv2)
                "--packet-in", self.ipc, "--log-file", str(self.log), "--name", f"s{self.device_id}"]
        self.proc = subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
        deadline = time.monotonic() + timeout
        ready = self._ready_line(deadline)
        self.grpc_port, self.ctl_port = ready_ports(ready)
        channel = grpc.insecure_channel(self.grpc_addr)
        try:
            while True:
                if self.proc.poll() is not None:
                    raise RuntimeError(f"p4sim switch exited: {self.proc.stderr.read().decode()[-500:]}")
                try:
                    grpc.channel_ready_future(channel).result(timeout=0.5)
                    return
                except grpc.FutureTimeoutError:
                    if time.monotonic() > deadline:
                        raise RuntimeError(f"p4sim switch s{self.device_id} not ready in {timeout}s") from None
        finally:
            channel.close()

    def _ready_line(self, deadline: float) -> str:
        """The switch's "ready: ... ctl=ADDR grpc=ADDR ..." line; stdout is drained afterwards so that
        the process never blocks on a full pipe."""
        assert self.proc is not None and self.proc.stdout is not None
        lines: queue.Queue[bytes] = queue.Queue()
        threading.Thread(target=_forward_lines, args=(self.proc.stdout, lines), daemon=True).start()
        while True:
            try:
                line = lines.get(timeout=max(0.0, deadline - time.monotonic())).decode()
            except queue.Empty:
                self.kill()
                raise RuntimeError(f"p4sim switch s{self.device_id} printed no ready line in time") from None
            if not line:
                self.proc.wait(10)
                raise RuntimeError(f"p4sim switch exited: {self.proc.stderr.read().decode()[-500:]}")
            if " ready: " in line:
                return line

    def kill(self) -> None:
        if self.proc is not None and self.proc.poll() is None:
            self.proc.kill()
            self.proc.wait(10)

    def stop(self) -> None:
        if self.proc is not None and self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(10)
            except subprocess.TimeoutExpired:
                self.kill()
        if self.proc is not None and self.proc.stderr is not None:
            self.proc.stderr.close()


class NanomsgHost:
    """PTF's side of the nanomsg packet interface: add ports, inject frames, collect output."""

    def __init__(self, address: str, ports: list[int]) -> None:
        import pynng
        self.sock = pynng.Pair0(recv_timeout=200, send_timeout=2000)
        self.sock.dial(address, block=True)
        for port in ports:
            self.sock.send(struct.pack("<iii", PORT_ADD, port, 0))

    def send(self, port: int, frame: bytes) -> None:
        self.sock.send(struct.pack("<iii", PACKET_IN, port, len(frame)) + frame)

    def receive(self, timeout: float = 2.0, expect: int | None = None) -> list[tuple[int, bytes]]:
        """Frames the switch sent out, ``(port, frame)``, until ``timeout`` or ``expect`` frames."""
        import pynng
        out = []
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline and (expect is None or len(out) < expect):
            try:
                msg = self.sock.recv()
            except pynng.Timeout:
                continue
            kind, port, length = struct.unpack_from("<iii", msg)
            if kind == PACKET_OUT:
                out.append((port, msg[12:12 + length]))
        return out

    def close(self) -> None:
        self.sock.close()
