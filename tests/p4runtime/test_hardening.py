"""Regression tests for issue 11's P4Runtime server defects, over real gRPC on a real SwitchDevice.

* Controller lock-out: StreamChannels that never arbitrate are closed after a short time and
  cannot keep the real controller out; a higher election id always finds a slot.
* Undecodable requests to every RPC answer INVALID_ARGUMENT (not gRPC's INTERNAL), and a deeply
  nested device config is INVALID_ARGUMENT, not "maximum recursion depth exceeded".
* Failed Write batches of >= 100 updates are freed (gc.freeze() used to pin them forever).
* A switch process fed undecodable stream messages still stops on SIGTERM and frees its port.
"""

from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import time

import grpc
import pytest
from google.rpc import code_pb2
from p4.v1 import p4runtime_pb2, p4runtime_pb2_grpc

from p4sim.p4runtime_server import server as server_mod
from tests.p4runtime.client import StreamClient
from tests.p4runtime.switch_process import start_switch
from tests.p4runtime.test_entities import LPM_ENTRY, update

switch_device = pytest.importorskip("p4sim.switch.device", reason="p4sim.switch.device not built yet")
U = p4runtime_pb2.Update
DEVICE_ID = 1
PROGRAM = os.path.join(os.path.dirname(os.path.abspath(__file__)), "p4", "p4rt_all.p4")
METHODS = ("Capabilities", "Read", "SetForwardingPipelineConfig", "GetForwardingPipelineConfig", "Write")


def _raw_stream(port: int):
    """A StreamChannel that sends nothing (the attacker's): the call and its request feeder."""
    channel = grpc.insecure_channel(f"127.0.0.1:{port}")
    feed: list = []

    def requests():
        while not feed:
            time.sleep(0.05)
        yield from ()

    call = channel.stream_stream("/p4.v1.P4Runtime/StreamChannel", request_serializer=None,
                                 response_deserializer=None)(requests())
    return channel, call, feed


def _first_outcome(call, timeout: float):
    """The stream's first response, or the RpcError that ended it, within ``timeout``."""
    result: list = []

    def run():
        try:
            result.append(next(iter(call)))
        except grpc.RpcError as err:
            result.append(err)
        except StopIteration:
            result.append(None)
    import threading
    t = threading.Thread(target=run, daemon=True)
    t.start()
    t.join(timeout)
    return result[0] if result else "timeout"


def test_silent_streams_cannot_lock_the_controller_out(loaded):
    """More never-arbitrating streams than there are slots; the real controller still becomes
    primary, and the silent streams are closed once the arbitration time is up."""
    loaded.service.arbitration_timeout = 1.5
    silent = [_raw_stream(loaded.port) for _ in range(server_mod.MAX_PENDING + server_mod.MAX_STREAMS + 4)]
    time.sleep(0.5)
    controller = StreamClient(loaded.port, DEVICE_ID)
    try:
        controller.arbitrate(1)
        assert controller.recv_arbitration(timeout=5).status.code == code_pb2.OK
        controller.write(update(U.INSERT, table_entry=LPM_ENTRY))
        outcome = _first_outcome(silent[-1][1], timeout=10)
        assert isinstance(outcome, grpc.RpcError) and outcome.code() == grpc.StatusCode.DEADLINE_EXCEEDED, outcome
        assert "MasterArbitrationUpdate" in outcome.details()
        oldest = _first_outcome(silent[0][1], timeout=5)     # made room for a newer stream
        assert isinstance(oldest, grpc.RpcError) and oldest.code() == grpc.StatusCode.RESOURCE_EXHAUSTED
    finally:
        controller.close()
        for channel, call, feed in silent:
            feed.append(1)
            call.cancel()
            channel.close()


def test_higher_election_id_takes_a_slot_from_the_lowest(loaded):
    """Every slot held by controllers without election ids (backups): a controller with an id gets
    in by closing one of them; an id no higher than every holder's is refused."""
    holders = []
    try:
        for _ in range(server_mod.MAX_STREAMS):
            c = StreamClient(loaded.port, DEVICE_ID)
            c.arbitrate(None)
            c.recv_arbitration()
            holders.append(c)
        newcomer = StreamClient(loaded.port, DEVICE_ID)
        holders.append(newcomer)
        newcomer.arbitrate(5)
        assert newcomer.recv_arbitration(timeout=5).status.code == code_pb2.OK
        evicted = [c for c in holders[:-1] if _ended_with(c, grpc.StatusCode.RESOURCE_EXHAUSTED)]
        assert len(evicted) == 1
        refused = StreamClient(loaded.port, DEVICE_ID)
        holders.append(refused)
        refused.arbitrate(None)      # no id: lower than nobody, so no slot
        err = refused.recv(timeout=5)
        assert isinstance(err, grpc.RpcError) and err.code() == grpc.StatusCode.RESOURCE_EXHAUSTED
    finally:
        for c in holders:
            c.close()


def _ended_with(client: StreamClient, code: grpc.StatusCode) -> bool:
    deadline = time.monotonic() + 2
    while time.monotonic() < deadline:
        while not client.inbox.empty():
            msg = client.inbox.get()
            if isinstance(msg, grpc.RpcError):
                return msg.code() == code
        time.sleep(0.05)
    return False


@pytest.mark.parametrize("method", METHODS)
def test_undecodable_requests_are_invalid_argument(loaded, method):
    with grpc.insecure_channel(f"127.0.0.1:{loaded.port}") as channel:
        if method == "Read":
            call = channel.unary_stream(f"/p4.v1.P4Runtime/{method}", request_serializer=None,
                                        response_deserializer=None)
            with pytest.raises(grpc.RpcError) as info:
                list(call(b"\xff\xff\xff\xff\x0f", timeout=10))
        else:
            call = channel.unary_unary(f"/p4.v1.P4Runtime/{method}", request_serializer=None,
                                       response_deserializer=None)
            with pytest.raises(grpc.RpcError) as info:
                call(b"\xff\xff\xff\xff\x0f", timeout=10)
    assert info.value.code() == grpc.StatusCode.INVALID_ARGUMENT, info.value.details()
    assert "malformed" in info.value.details()


def test_undecodable_stream_message_is_invalid_argument(loaded):
    with grpc.insecure_channel(f"127.0.0.1:{loaded.port}") as channel:
        call = channel.stream_stream("/p4.v1.P4Runtime/StreamChannel", request_serializer=None,
                                     response_deserializer=None)
        responses = call(iter([b"\xff\xff\xff\xff\x0f"] + [b""] * 0), timeout=10)
        with pytest.raises(grpc.RpcError) as info:
            list(responses)
    assert info.value.code() == grpc.StatusCode.INVALID_ARGUMENT
    assert "malformed StreamMessageRequest" in info.value.details()


def test_deeply_nested_device_config_is_invalid_argument(loaded, p4info):
    c = StreamClient(loaded.port, DEVICE_ID)
    try:
        c.arbitrate(1)
        c.recv_arbitration()
        nested = b'{"format": "p4sim-device-config", "x": ' + b"[" * 100_000 + b"]" * 100_000 + b"}"
        set_config = p4runtime_pb2.SetForwardingPipelineConfigRequest
        with pytest.raises(grpc.RpcError) as info:
            c.set_pipeline(p4info, nested, set_config.VERIFY)
        assert info.value.code() == grpc.StatusCode.INVALID_ARGUMENT, info.value.details()
        assert "recursion" not in info.value.details()
    finally:
        c.close()


def _rss_kib(pid: int) -> int:
    with open(f"/proc/{pid}/statm") as f:
        return int(f.read().split()[1]) * 4


def test_failed_batches_are_freed():
    """A switch process gets batches of 100 updates that all fail (duplicates): its memory stays
    flat. Before the fix gc.freeze() pinned every such batch's exceptions with their reference
    cycles (about +0.6 MB per batch, 60 MB -> 296 MB after 400 batches)."""
    proc, port = _start_switch(0, PROGRAM)
    try:
        c = StreamClient(port, 1)
        try:
            c.arbitrate(1)
            c.recv_arbitration()
            Get = p4runtime_pb2.GetForwardingPipelineConfigRequest
            p4info = c.stub.GetForwardingPipelineConfig(Get(device_id=1, response_type=Get.P4INFO_AND_COOKIE),
                                                        timeout=30).config.p4info
            table = next(t for t in p4info.tables if t.preamble.name.endswith("l2_exact"))
            no_action = next(a for a in p4info.actions if a.preamble.name == "NoAction")
            entry = p4runtime_pb2.TableEntry(table_id=table.preamble.id)
            entry.match.add(field_id=table.match_fields[0].id).exact.value = b"\x01" + b"\x00" * 5
            entry.action.action.action_id = no_action.preamble.id
            one = update(U.INSERT, table_entry=entry)
            c.write(one)
            batch = [one] * 100

            def run(n: int) -> None:
                for _ in range(n):
                    with pytest.raises(grpc.RpcError) as info:
                        c.write(*batch)
                    assert info.value.code() == grpc.StatusCode.UNKNOWN
            run(40)                      # warm-up: caches, gRPC buffers, the first freeze
            before = _rss_kib(proc.pid)
            run(200)
            grown = _rss_kib(proc.pid) - before
        finally:
            c.close()
    finally:
        proc.send_signal(signal.SIGTERM)
        proc.wait(timeout=15)
    assert grown < 12 * 1024, f"the switch's RSS grew {grown} KiB over 200 failed batches of 100"


def _start_switch(port: int, program: str | None = None) -> tuple[subprocess.Popen, int]:
    """A switch listening on 127.0.0.1:PORT; PORT 0 lets the switch's own bind choose a free port, so no
    other process can take it between choosing and binding (a port probed free and closed again can be,
    during the switch's ~1 s start-up: the CI of 2026-12-03 07:20 lost a run to that)."""
    proc, address = start_switch(program or "--no-p4", "--device-id", "1", "--grpc-server-addr", f"127.0.0.1:{port}")
    bound = int(address.rsplit(":", 1)[1])
    assert port in (0, bound), address
    return proc, bound


def test_sigterm_after_undecodable_stream_messages_frees_the_port():
    proc, port = _start_switch(0)
    try:
        channel = grpc.insecure_channel(f"127.0.0.1:{port}")
        calls = []
        for junk in (b"\xff" * 7, b"\x0a\xff\xff\xff\xff\x0f", b"\x12\x05abc"):
            call = channel.stream_stream("/p4.v1.P4Runtime/StreamChannel", request_serializer=None,
                                         response_deserializer=None)(iter([junk] * 3))
            calls.append(call)
        for call in calls:
            with pytest.raises(grpc.RpcError):
                list(call)
        proc.send_signal(signal.SIGTERM)
        assert proc.wait(timeout=15) == 0
        channel.close()
        again, _ = _start_switch(port)   # the same port: "Address already in use" before the fix
        try:
            with grpc.insecure_channel(f"127.0.0.1:{port}") as ch:
                stub = p4runtime_pb2_grpc.P4RuntimeStub(ch)
                assert stub.Capabilities(p4runtime_pb2.CapabilitiesRequest(), timeout=10).p4runtime_api_version
        finally:
            again.send_signal(signal.SIGTERM)
            assert again.wait(timeout=15) == 0
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()


def test_ctl_refuses_unknown_arguments_and_survives_bad_requests(device):
    from p4sim.switch.ctl_server import CtlServer
    ctl = CtlServer(device, "127.0.0.1:0")
    ctl.start()
    try:
        with socket.create_connection(("127.0.0.1", ctl.port), timeout=5) as s:
            f = s.makefile("rwb")
            for req, expect in (({"cmd": "set_queue_depth", "args": {"depth": 4, "prot": 1}}, "unknown argument"),
                                ({"cmd": "set_queue_depth", "args": {"depth": "4"}}, "is not an integer"),
                                ({"cmd": "set_queue_depth", "args": {"depth": 1 << 70}}, "is not in"),
                                ({"cmd": "show_queues", "args": None}, None)):
                f.write(json.dumps(req).encode() + b"\n")
                f.flush()
                reply = json.loads(f.readline())
                if expect is None:
                    assert "result" in reply, reply
                else:
                    assert expect in reply["error"], reply
            f.write(b"[" * 100_000 + b"\n")
            f.flush()
            assert "not JSON" in json.loads(f.readline())["error"]
    finally:
        ctl.stop()
