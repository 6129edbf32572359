"""Clients written for simple_switch_grpc work unchanged against ``p4sim switch`` (issue 17).

``TutorialStyleConnection`` behaves like p4lang/tutorials' ``p4runtime_lib`` (written here from
its observable behaviour, not copied): a request queue feeding the StreamChannel, election id 1
sent at once, the first stream message taken as the arbitration answer, the device config sent as
a serialized PI ``p4.tmp.P4DeviceConfig`` (``reassign``, ``device_data`` = the target's config),
and between tests: close the request queue, cancel the stream, connect again at once with the
same election id. simple_switch_grpc accepts all of that; so must p4sim.
"""

from __future__ import annotations

import queue

import grpc
import pytest
from google.rpc import code_pb2
from p4.v1 import p4runtime_pb2, p4runtime_pb2_grpc

from tests.p4runtime.switch_process import start_switch, stop_switch
from tests.p4runtime.test_p4runtime_shell import _compile

_CLOSE = object()


def _varint(value: int) -> bytes:
    out = bytearray()
    while True:
        byte, value = value & 0x7F, value >> 7
        out.append(byte | (0x80 if value else 0))
        if not value:
            return bytes(out)


def pi_device_config(device_data: bytes, reassign: bool = True) -> bytes:
    """PI's ``p4.tmp.P4DeviceConfig`` on the wire: field 1 ``reassign`` (varint), field 3
    ``device_data`` (bytes); encoded by hand so the test does not share the server's decoder."""
    out = b"\x08\x01" if reassign else b""
    return out + b"\x1a" + _varint(len(device_data)) + device_data


class TutorialStyleConnection:
    def __init__(self, address: str, device_id: int = 1) -> None:
        self.device_id = device_id
        self.channel = grpc.insecure_channel(address)
        self.stub = p4runtime_pb2_grpc.P4RuntimeStub(self.channel)
        self.requests: queue.Queue = queue.Queue()
        self.stream = self.stub.StreamChannel(iter(self._next_request, None))

    def _next_request(self):
        item = self.requests.get()
        return None if item is _CLOSE else item

    def master_arbitration_update(self) -> p4runtime_pb2.StreamMessageResponse:
        req = p4runtime_pb2.StreamMessageRequest()
        req.arbitration.device_id = self.device_id
        req.arbitration.election_id.high = 0
        req.arbitration.election_id.low = 1
        self.requests.put(req)
        for item in self.stream:       # the library returns the first thing the stream yields
            return item
        raise AssertionError("stream ended without an arbitration answer")

    def set_forwarding_pipeline_config(self, p4info, target_config: bytes) -> None:
        req = p4runtime_pb2.SetForwardingPipelineConfigRequest(device_id=self.device_id)
        req.election_id.low = 1
        req.config.p4info.CopyFrom(p4info)
        req.config.p4_device_config = pi_device_config(target_config)
        req.action = p4runtime_pb2.SetForwardingPipelineConfigRequest.VERIFY_AND_COMMIT
        self.stub.SetForwardingPipelineConfig(req, timeout=60)

    def read_tables(self) -> list:
        req = p4runtime_pb2.ReadRequest(device_id=self.device_id)
        req.entities.add().table_entry.SetInParent()
        return [e for r in self.stub.Read(req, timeout=30) for e in r.entities]

    def shutdown(self) -> None:
        self.requests.put(_CLOSE)
        self.stream.cancel()


@pytest.fixture(scope="module")
def program():
    prog, reason = _compile()
    if prog is None:
        pytest.skip(reason)
    return prog


@pytest.fixture
def switch_addr():
    proc, address = start_switch("--no-p4", "--device-id", "1")
    try:
        yield address
    finally:
        stop_switch(proc)


def test_tutorial_style_client_runs_test_after_test(program, switch_addr):
    """Five 'tests' in a row, each connecting with election id 1 right after the previous one
    shut down, pushing the pipeline as a PI P4DeviceConfig and reading the tables."""
    for _ in range(5):
        conn = TutorialStyleConnection(switch_addr)
        try:
            answer = conn.master_arbitration_update()
            assert answer.arbitration.status.code == code_pb2.OK, answer
            conn.set_forwarding_pipeline_config(program.p4info, program.device_config())
            assert conn.read_tables() == []
        finally:
            conn.shutdown()


def test_pi_device_config_and_raw_json_both_load(program, switch_addr):
    conn = TutorialStyleConnection(switch_addr)
    try:
        conn.master_arbitration_update()
        conn.set_forwarding_pipeline_config(program.p4info, program.device_config())
        req = p4runtime_pb2.SetForwardingPipelineConfigRequest(device_id=1, action=2)   # VERIFY_AND_COMMIT
        req.election_id.low = 1
        req.config.p4info.CopyFrom(program.p4info)
        req.config.p4_device_config = program.device_config()                          # p4sim's raw JSON
        conn.stub.SetForwardingPipelineConfig(req, timeout=60)
        req.config.p4_device_config = pi_device_config(b"")                            # wrapper, no data
        with pytest.raises(grpc.RpcError) as info:
            conn.stub.SetForwardingPipelineConfig(req, timeout=60)
        assert info.value.code() == grpc.StatusCode.INVALID_ARGUMENT
        assert "P4DeviceConfig without device_data" in info.value.details()
    finally:
        conn.shutdown()


def test_a_live_duplicate_election_id_is_still_refused(switch_addr):
    """As simple_switch_grpc: a second live stream with the same id is INVALID_ARGUMENT."""
    first = TutorialStyleConnection(switch_addr)
    second = TutorialStyleConnection(switch_addr)
    try:
        assert first.master_arbitration_update().arbitration.status.code == code_pb2.OK
        with pytest.raises(grpc.RpcError) as info:
            second.master_arbitration_update()
        assert info.value.code() == grpc.StatusCode.INVALID_ARGUMENT
    finally:
        first.shutdown()
        second.shutdown()


