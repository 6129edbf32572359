"""``p4sim ctl`` protocol against a real switch, and the ``p4sim switch`` process lifecycle."""

from __future__ import annotations

import gc
import json
import os
import signal
import socket
import subprocess
import sys
import threading
import time

import pytest

from p4sim.switch.ctl import CtlClient
from p4sim.switch.ctl_server import CtlError, CtlServer
from p4sim.switch.device import SwitchDevice
from tests.switch.programs import TM_PROBE_P4, needs_compiler, probe_frame, read_probe

PY = sys.executable


@pytest.fixture
def served():
    dev = SwitchDevice(device_id=3, priority_queues=4, name="s-ctl")
    dev.start()
    ctl = CtlServer(dev, "127.0.0.1:0")
    ctl.start()
    yield dev, ctl
    ctl.stop()
    dev.stop()


def test_ctl_changes_queues(served):
    dev, ctl = served
    with CtlClient(ctl.address) as c:
        c.set_queue_depth(10)
        c.set_queue_depth(3, 2, 1)
        c.set_queue_rate(500, 2)
        c.set_port_rate(2, 10_000_000)
        snap = c.show_queues()
    assert snap["default_depth"] == 10
    port2 = snap["ports"]["2"]
    assert [q["limit"] for q in port2["queues"]] == [10, 3, 10, 10]
    assert [q["rate_pps"] for q in port2["queues"]] == [500] * 4
    assert port2["rate_bps"] == 10_000_000
    assert dev.tm.ports[2].queues[1].depth == 3


def test_ctl_errors_are_one_line(served):
    _, ctl = served
    with CtlClient(ctl.address) as c:
        with pytest.raises(CtlError, match="priority 9 is not in 0..3"):
            c.set_queue_depth(5, 1, 9)
        with pytest.raises(CtlError, match="unknown command 'bogus'"):
            c.call("bogus")
        with pytest.raises(CtlError, match="'depth': 'x' is not an integer"):
            c.call("set_queue_depth", depth="x")
        assert c.show_queues()["priority_queues"] == 4       # connection still usable
    raw = socket.create_connection(("127.0.0.1", ctl.port))
    raw.sendall(b"not json\n")
    reply = json.loads(raw.makefile().readline())
    assert reply["error"].startswith("request is not JSON")
    raw.close()
    with pytest.raises(CtlError, match="cannot connect"):
        CtlClient("127.0.0.1:1")


def test_stop_leaves_no_threads():
    before = set(threading.enumerate())
    dev = SwitchDevice(name="s-threads")
    dev.add_virtual_port(1)
    dev.start()
    ctl = CtlServer(dev, "127.0.0.1:0")
    ctl.start()
    c = CtlClient(ctl.address)            # an open client must not block shutdown
    ctl.stop()
    dev.stop()
    c.close()
    assert set(threading.enumerate()) - before == set()


def start_switch(*extra: str, env=None) -> tuple[subprocess.Popen, str]:
    proc = subprocess.Popen([PY, "-m", "p4sim.cli", "switch", "--no-grpc", "--ctl-addr", "127.0.0.1:0", *extra],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env)
    line = proc.stdout.readline()
    if "ready" not in line:
        proc.kill()
        raise AssertionError(f"switch did not start: {line!r} {proc.stderr.read()}")
    return proc, line


def ctl_cli(addr: str, *args: str) -> subprocess.CompletedProcess:
    return subprocess.run([PY, "-m", "p4sim.cli", "ctl", "--addr", addr, *args],
                          capture_output=True, text=True, timeout=30)


@pytest.mark.parametrize("sig", [signal.SIGTERM, signal.SIGINT])
def test_switch_process_ctl_and_clean_shutdown(sig):
    proc, line = start_switch("--no-p4", "--priority-queues", "4", "--name", "s9", "--log-console")
    try:
        assert line.startswith("p4sim switch s9 ready:")
        addr = line.split("ctl=")[1].split()[0]
        assert ctl_cli(addr, "set_queue_depth", "7", "1").returncode == 0
        assert ctl_cli(addr, "set_port_rate", "1", "1000000").returncode == 0
        shown = ctl_cli(addr, "show_queues")
        assert shown.returncode == 0
        assert "port 1: link 1000000 bit/s" in shown.stdout
        bad = ctl_cli(addr, "set_queue_depth", "7", "1", "4")
        assert bad.returncode == 1
        assert bad.stderr.strip().splitlines() == ["p4sim: " + f"{addr}: set_queue_depth: priority 4 is not in 0..3"]
        t0 = time.monotonic()
        proc.send_signal(sig)
        assert proc.wait(timeout=10) == 0
        assert time.monotonic() - t0 < 5
        assert "[s9] stopped" in proc.stderr.read()
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()


def test_switch_user_errors_are_one_line(tmp_path):
    cases = [
        (["--no-p4", "-i", "1@nope0"], "-i '1@nope0': no interface named 'nope0'"),
        ([], "no program: give OUT/<name>.p4sim.json (or a .p4) or --no-p4"),
        ([str(tmp_path / "missing.p4sim.json")], f"{tmp_path / 'missing.p4sim.json'}: no such program file"),
    ]
    for extra, message in cases:
        r = subprocess.run([PY, "-m", "p4sim.cli", "switch", "--no-grpc", "--ctl-addr", "127.0.0.1:0", *extra],
                           capture_output=True, text=True, timeout=30)
        assert r.returncode == 1, r
        assert r.stderr.strip() == f"p4sim: {message}"


def test_ctl_port_in_use_is_a_user_error():
    busy = socket.create_server(("127.0.0.1", 0))
    port = busy.getsockname()[1]
    try:
        r = subprocess.run([PY, "-m", "p4sim.cli", "switch", "--no-p4", "--no-grpc", "--thrift-port", str(port)],
                           capture_output=True, text=True, timeout=30)
        assert r.returncode == 1
        assert r.stderr.strip().startswith(f"p4sim: --ctl-addr 127.0.0.1:{port}: cannot listen")
    finally:
        busy.close()




def test_simple_switch_target_options_after_double_dash():
    proc, line = start_switch("--no-p4", "--", "--priority-queues", "4", "--cpu-port", "64")
    try:
        addr = line.split("ctl=")[1].split()[0]
        with CtlClient(addr) as c:
            assert c.show_queues()["priority_queues"] == 4
    finally:
        proc.send_signal(signal.SIGTERM)
        assert proc.wait(timeout=10) == 0
    r = subprocess.run([PY, "-m", "p4sim.cli", "switch", "--no-p4", "--no-grpc", "--", "--bogus", "1"],
                       capture_output=True, text=True, timeout=30)
    assert (r.returncode, r.stderr.strip()) == (1, "p4sim: unknown target option(s) after '--': --bogus 1")


def test_switch_process_serves_p4runtime():
    grpc = pytest.importorskip("grpc")
    server_mod = pytest.importorskip("p4sim.p4runtime_server", reason="P4Runtime server not built yet")
    assert server_mod.P4RuntimeServer
    from p4.v1 import p4runtime_pb2, p4runtime_pb2_grpc

    proc = subprocess.Popen([PY, "-m", "p4sim.cli", "switch", "--no-p4", "--ctl-addr", "127.0.0.1:0",
                             "--grpc-server-addr", "127.0.0.1:0", "--device-id", "5"],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        line = proc.stdout.readline()
        assert "ready" in line, proc.stderr.read()
        addr = line.split("grpc=")[1].split()[0]
        assert addr.startswith("127.0.0.1:") and not addr.endswith(":0")
        with grpc.insecure_channel(addr) as channel:
            stub = p4runtime_pb2_grpc.P4RuntimeStub(channel)
            caps = stub.Capabilities(p4runtime_pb2.CapabilitiesRequest(), timeout=10)
            assert caps.p4runtime_api_version.startswith("1.")
    finally:
        proc.send_signal(signal.SIGTERM)
        assert proc.wait(timeout=15) == 0


def test_stop_leaves_no_file_descriptors(tmp_path):
    def cycle(i: int) -> None:
        dev = SwitchDevice(name=f"s-fd{i}", pcap_dir=str(tmp_path / str(i)))
        peer = dev.add_virtual_port(1)
        dev.add_nanomsg(f"ipc://{tmp_path}/fd{i}.ipc")
        dev.start()
        ctl = CtlServer(dev, "127.0.0.1:0")
        ctl.start()
        with CtlClient(ctl.address) as c:
            c.show_queues()
        peer.send(b"\x00" * 60)                   # opens the pcap file
        deadline = time.monotonic() + 2
        while dev.counters["rx"] < 1 and time.monotonic() < deadline:
            time.sleep(0.01)
        ctl.stop()
        dev.stop()

    def open_fds() -> dict[str, str]:
        out = {}
        for fd in os.listdir("/proc/self/fd"):
            try:
                out[fd] = os.readlink(f"/proc/self/fd/{fd}")
            except OSError:
                pass
        return out

    def new_fds() -> dict[str, str]:           # opened since `before` (earlier tests may close theirs)
        return {fd: what for fd, what in open_fds().items() if before.get(fd) != what}

    cycle(0)                                     # nng keeps process-wide resources after first use
    gc.collect()
    before = open_fds()
    cycle(1)
    deadline = time.monotonic() + 3       # nng closes its pipes on its own threads, a moment later
    while new_fds() and time.monotonic() < deadline:
        time.sleep(0.05)
    assert new_fds() == {}


@needs_compiler
def test_switch_runs_compiled_program_file_over_nanomsg(tmp_path):
    import struct

    import pynng

    out = tmp_path / "out"
    r = subprocess.run([PY, "-m", "p4sim.cli", "compile", "-o", str(out), TM_PROBE_P4],
                       capture_output=True, text=True, timeout=120)
    assert r.returncode == 0, r.stderr
    program = out / "tm_probe.p4sim.json"
    addr = f"ipc://{tmp_path}/sw.ipc"
    proc, _ = start_switch("--packet-in", addr, str(program))
    ptf = pynng.Pair0(recv_timeout=3000, send_timeout=1000)
    try:
        ptf.dial(addr, block=True)
        for port in (1, 2):
            ptf.send(struct.pack("<iii", 0, port, 0))          # PORT_ADD
        frame = probe_frame(42)
        ptf.send(struct.pack("<iii", 3, 1, len(frame)) + frame)  # PACKET_IN on port 1
        msg = ptf.recv()
        kind, port, length = struct.unpack_from("<iii", msg)
        assert (kind, port, length) == (4, 2, len(msg) - 12)     # PACKET_OUT on port 2
        assert read_probe(msg[12:])["seq"] == 42
    finally:
        ptf.close()
        proc.send_signal(signal.SIGTERM)
        assert proc.wait(timeout=10) == 0


def test_log_file_has_switch_prefix_and_console_stays_quiet(tmp_path):
    log_path = tmp_path / "s7.log"
    proc, _ = start_switch("--no-p4", "--name", "s7", "--log-file", str(log_path), "--log-level", "debug")
    proc.send_signal(signal.SIGTERM)
    assert proc.wait(timeout=10) == 0
    assert proc.stderr.read() == ""                      # no --log-console: nothing below WARNING
    text = log_path.read_text()
    assert "[s7] shutting down" in text and "[s7] stopped" in text


@needs_compiler
def test_pipeline_pushed_over_p4runtime_then_forwards(tmp_path):
    """`p4sim switch --no-p4` drops until a controller pushes the pipeline over P4Runtime, then
    forwards with it (nanomsg ports, so no root needed)."""
    import queue
    import struct

    grpc = pytest.importorskip("grpc")
    pytest.importorskip("p4sim.p4runtime_server", reason="P4Runtime server not built yet")
    import pynng
    from p4.v1 import p4runtime_pb2, p4runtime_pb2_grpc

    from tests.switch.programs import compiled

    program = compiled(TM_PROBE_P4)
    addr = f"ipc://{tmp_path}/sw.ipc"
    proc = subprocess.Popen([PY, "-m", "p4sim.cli", "switch", "--no-p4", "--ctl-addr", "127.0.0.1:0",
                             "--grpc-server-addr", "127.0.0.1:0", "--device-id", "9", "--packet-in", addr],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    ptf = pynng.Pair0(recv_timeout=3000, send_timeout=1000)
    try:
        line = proc.stdout.readline()
        assert "ready" in line, proc.stderr.read()
        ctl_addr = line.split("ctl=")[1].split()[0]
        grpc_addr = line.split("grpc=")[1].split()[0]
        ptf.dial(addr, block=True)
        for port in (1, 2):
            ptf.send(struct.pack("<iii", 0, port, 0))
        frame = probe_frame(1)
        ptf.send(struct.pack("<iii", 3, 1, len(frame)) + frame)
        with pytest.raises(pynng.Timeout):                     # no pipeline yet: dropped
            ptf.recv_timeout = 300
            ptf.recv()
        with CtlClient(ctl_addr) as c:
            assert c.stats()["counters"]["drop_no_pipeline"] == 1
        with grpc.insecure_channel(grpc_addr) as channel:
            stub = p4runtime_pb2_grpc.P4RuntimeStub(channel)
            requests: queue.Queue = queue.Queue()
            arbitration = p4runtime_pb2.StreamMessageRequest()
            arbitration.arbitration.device_id = 9
            arbitration.arbitration.election_id.low = 1
            requests.put(arbitration)
            stream = stub.StreamChannel(iter(requests.get, None))
            assert next(stream).HasField("arbitration")
            req = p4runtime_pb2.SetForwardingPipelineConfigRequest(
                device_id=9, action=p4runtime_pb2.SetForwardingPipelineConfigRequest.VERIFY_AND_COMMIT)
            req.election_id.low = 1
            req.config.p4info.CopyFrom(program.p4info)
            req.config.p4_device_config = program.device_config()
            stub.SetForwardingPipelineConfig(req, timeout=30)
            ptf.recv_timeout = 3000
            frame = probe_frame(2)
            ptf.send(struct.pack("<iii", 3, 1, len(frame)) + frame)
            msg = ptf.recv()
            assert struct.unpack_from("<ii", msg) == (4, 2)
            assert read_probe(msg[12:])["seq"] == 2
            requests.put(None)
    finally:
        ptf.close()
        proc.send_signal(signal.SIGTERM)
        assert proc.wait(timeout=15) == 0


def test_show_queues_prints_every_queue_of_every_attached_port(capsys):
    """issue 16: show_queues promised per-queue depth, limit and rate but printed only port lines
    for a switch whose queues were idle (and nothing for ports no packet had used)."""
    from p4sim.cli import main
    dev = SwitchDevice(priority_queues=3, name="s-show")
    dev.add_virtual_port(1)
    dev.add_virtual_port(2)
    dev.start()
    ctl = CtlServer(dev, "127.0.0.1:0")
    ctl.start()
    try:
        with CtlClient(ctl.address) as c:
            c.set_queue_rate(250, 2, 1)
        assert main(["ctl", "--addr", ctl.address, "show_queues"]) == 0
    finally:
        ctl.stop()
        dev.stop()
    lines = capsys.readouterr().out.splitlines()
    assert [ln.split(":")[0] for ln in lines[1:]] == ["port 1", "  prio 0", "  prio 1", "  prio 2",
                                                      "port 2", "  prio 0", "  prio 1", "  prio 2"]
    assert "  prio 1: depth 0/64 rate 250 pps enq 0 deq 0 tail_drops 0" in lines
    assert "  prio 0: depth 0/64 rate unlimited enq 0 deq 0 tail_drops 0" in lines


def test_ctl_help_has_no_rest_markup():
    for argv in (["ctl", "--help"], ["switch", "--help"]):
        r = subprocess.run([PY, "-m", "p4sim.cli", *argv], capture_output=True, text=True, timeout=60)
        assert r.returncode == 0 and "``" not in r.stdout, r.stdout
        assert "p4sim" in r.stdout
