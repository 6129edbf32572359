"""The P4Runtime service over real gRPC on an ephemeral loopback port, on a real SwitchDevice.

Until the compiler exists, the pipeline state is built from the fixture P4Info with real runtime
objects and handed to the device the way ``load_program`` would; everything between the client's
stub and the runtime tables is the real thing. (SetForwardingPipelineConfig with a compiled
program is covered in test_p4runtime_shell.py.)
"""

from __future__ import annotations

import time

import grpc
import pytest
from google.rpc import code_pb2
from p4.v1 import p4runtime_pb2, p4runtime_pb2_grpc

from p4sim.p4runtime_server import API_VERSION, P4RuntimeServer
from tests.p4runtime.client import StreamClient, write_errors
from tests.p4runtime.test_entities import (
    DIGEST,
    EXACT_ENTRY,
    LPM_ENTRY,
    T_EXACT,
    TERNARY_ENTRY,
    entry,
    forward,
    update,
)

switch_device = pytest.importorskip("p4sim.switch.device", reason="p4sim.switch.device not built yet")
U = p4runtime_pb2.Update
DEVICE_ID = 1


@pytest.fixture
def clients(server):
    made: list[StreamClient] = []

    def make(election_id: int | None, device_id: int = DEVICE_ID, **kw) -> StreamClient:
        c = StreamClient(server.port, device_id)
        c.arbitrate(election_id, **kw)
        made.append(c)
        return c
    yield make
    for c in made:
        c.close()


def rpc_code(fn, *args, **kw) -> grpc.StatusCode:
    with pytest.raises(grpc.RpcError) as info:
        fn(*args, **kw)
    return info.value.code()


def test_capabilities(server):
    c = StreamClient(server.port)
    try:
        assert c.stub.Capabilities(p4runtime_pb2.CapabilitiesRequest()).p4runtime_api_version == API_VERSION
    finally:
        c.close()


def test_primary_backup_and_failover(loaded, clients):
    a = clients(2)
    arb = a.recv_arbitration()
    assert arb.status.code == code_pb2.OK and arb.election_id.low == 2
    b = clients(1)
    arb = b.recv_arbitration()
    assert arb.status.code == code_pb2.ALREADY_EXISTS and arb.election_id.low == 2
    assert rpc_code(b.write, update(U.INSERT, table_entry=EXACT_ENTRY)) == grpc.StatusCode.PERMISSION_DENIED
    a.write(update(U.INSERT, table_entry=EXACT_ENTRY))
    assert len(b.read(p4runtime_pb2.Entity(table_entry=p4runtime_pb2.TableEntry()))) == 1   # backups may read
    c = clients(3)
    assert c.recv_arbitration().status.code == code_pb2.OK
    demoted = a.recv_arbitration()
    assert demoted.status.code == code_pb2.ALREADY_EXISTS and demoted.election_id.low == 3
    assert b.recv_arbitration().election_id.low == 3
    assert rpc_code(a.write, update(U.INSERT, table_entry=LPM_ENTRY)) == grpc.StatusCode.PERMISSION_DENIED
    c.close()
    assert a.recv_arbitration().status.code == code_pb2.NOT_FOUND     # primary gone, nobody replaces it
    assert b.recv_arbitration().status.code == code_pb2.NOT_FOUND
    a.arbitrate(4)
    assert a.recv_arbitration().status.code == code_pb2.OK
    assert b.recv_arbitration().status.code == code_pb2.ALREADY_EXISTS
    a.write(update(U.INSERT, table_entry=LPM_ENTRY))


def test_arbitration_refusals_terminate_the_stream(server, clients):
    first = clients(5)
    first.recv_arbitration()
    dup = clients(5)
    err = dup.recv()
    assert isinstance(err, grpc.RpcError) and err.code() == grpc.StatusCode.INVALID_ARGUMENT
    zero = clients(0)
    err = zero.recv()
    assert isinstance(err, grpc.RpcError) and err.code() == grpc.StatusCode.INVALID_ARGUMENT
    stranger = clients(9, device_id=42)
    err = stranger.recv()
    assert isinstance(err, grpc.RpcError) and err.code() == grpc.StatusCode.NOT_FOUND
    first.arbitrate(6, device_id=43)
    err = first.recv()
    assert isinstance(err, grpc.RpcError) and err.code() == grpc.StatusCode.FAILED_PRECONDITION


def test_unset_election_id_is_a_backup(loaded, clients):
    observer = clients(None)
    arb = observer.recv_arbitration()
    assert arb.status.code == code_pb2.NOT_FOUND and not arb.HasField("election_id")
    assert rpc_code(observer.write, update(U.INSERT, table_entry=EXACT_ENTRY)) == grpc.StatusCode.PERMISSION_DENIED


def test_failed_batch_reports_every_update(loaded, clients):
    a = clients(1)
    a.recv_arbitration()
    bad_priority = entry(T_EXACT, list(EXACT_ENTRY.match), forward(), 3)
    with pytest.raises(grpc.RpcError) as info:
        a.write(update(U.INSERT, table_entry=EXACT_ENTRY), update(U.INSERT, table_entry=EXACT_ENTRY),
                update(U.INSERT, table_entry=bad_priority), update(U.MODIFY, table_entry=LPM_ENTRY),
                update(U.INSERT, table_entry=TERNARY_ENTRY))
    assert info.value.code() == grpc.StatusCode.UNKNOWN
    codes = [code for code, _ in write_errors(info.value)]
    assert codes == [code_pb2.OK, code_pb2.ALREADY_EXISTS, code_pb2.INVALID_ARGUMENT, code_pb2.NOT_FOUND,
                     code_pb2.OK]
    assert len(a.read(p4runtime_pb2.Entity(table_entry=p4runtime_pb2.TableEntry()))) == 2


def test_request_level_errors(server, loaded, clients):
    a = clients(1)
    a.recv_arbitration()
    assert rpc_code(a.write, update(U.INSERT, table_entry=EXACT_ENTRY), atomicity=7) == \
        grpc.StatusCode.INVALID_ARGUMENT
    other = StreamClient(server.port, device_id=9)
    other.election_id = 1
    try:
        assert rpc_code(other.write, update(U.INSERT, table_entry=EXACT_ENTRY)) == grpc.StatusCode.NOT_FOUND
        assert rpc_code(other.read, p4runtime_pb2.Entity(table_entry=p4runtime_pb2.TableEntry())) == \
            grpc.StatusCode.NOT_FOUND
    finally:
        other.close()
    assert rpc_code(a.read, p4runtime_pb2.Entity(table_entry=p4runtime_pb2.TableEntry(table_id=5))) == \
        grpc.StatusCode.INVALID_ARGUMENT
    set_config = p4runtime_pb2.SetForwardingPipelineConfigRequest
    assert rpc_code(a.set_pipeline, loaded.service.session.p4info, b"x",
                    set_config.RECONCILE_AND_COMMIT) == grpc.StatusCode.UNIMPLEMENTED
    assert rpc_code(a.set_pipeline, loaded.service.session.p4info, b"",
                    set_config.COMMIT) == grpc.StatusCode.FAILED_PRECONDITION
    assert rpc_code(a.set_pipeline, loaded.service.session.p4info, b"",
                    set_config.VERIFY_AND_COMMIT) == grpc.StatusCode.INVALID_ARGUMENT


def test_no_pipeline_is_failed_precondition(server, clients):
    a = clients(1)
    a.recv_arbitration()
    assert rpc_code(a.write, update(U.INSERT, table_entry=EXACT_ENTRY)) == grpc.StatusCode.FAILED_PRECONDITION
    assert rpc_code(a.read, p4runtime_pb2.Entity(table_entry=p4runtime_pb2.TableEntry())) == \
        grpc.StatusCode.FAILED_PRECONDITION
    req = p4runtime_pb2.GetForwardingPipelineConfigRequest(device_id=DEVICE_ID)
    assert rpc_code(a.stub.GetForwardingPipelineConfig, req) == grpc.StatusCode.FAILED_PRECONDITION


def test_get_pipeline_config_response_types(loaded, clients, p4info):
    a = clients(1)
    a.recv_arbitration()
    Get = p4runtime_pb2.GetForwardingPipelineConfigRequest
    full = a.stub.GetForwardingPipelineConfig(Get(device_id=DEVICE_ID, response_type=Get.ALL)).config
    assert full.p4info == p4info and full.p4_device_config == b"fixture" and full.cookie.cookie == 7
    cookie = a.stub.GetForwardingPipelineConfig(Get(device_id=DEVICE_ID, response_type=Get.COOKIE_ONLY)).config
    assert not cookie.HasField("p4info") and not cookie.p4_device_config and cookie.cookie.cookie == 7
    dev = a.stub.GetForwardingPipelineConfig(Get(device_id=DEVICE_ID,
                                                 response_type=Get.DEVICE_CONFIG_AND_COOKIE)).config
    assert dev.p4_device_config == b"fixture" and not dev.HasField("p4info")


def test_packet_in_goes_to_the_primary_only(loaded, clients):
    a = clients(2)
    a.recv_arbitration()
    b = clients(1)
    b.recv_arbitration()
    loaded.service.on_packet_in((5 << 7).to_bytes(2, "big") + b"hello")
    msg = a.recv()
    assert msg.packet.payload == b"hello"
    assert [(m.metadata_id, m.value) for m in msg.packet.metadata] == [(1, b"\x05"), (2, b"\x00")]
    assert b.inbox.empty()


def test_packet_out_rules(loaded, clients, device):
    a = clients(2)
    a.recv_arbitration()
    b = clients(1)
    b.recv_arbitration()
    out = p4runtime_pb2.StreamMessageRequest()
    out.packet.payload = b"frame"
    out.packet.metadata.add(metadata_id=1, value=b"\x03")
    out.packet.metadata.add(metadata_id=2, value=b"\x00")
    b.send(out)
    err = b.recv()
    assert err.error.canonical_code == code_pb2.PERMISSION_DENIED and err.error.packet_out.packet_out == out.packet
    bad = p4runtime_pb2.StreamMessageRequest()
    bad.packet.payload = b"frame"
    a.send(bad)   # metadata missing
    err = a.recv()
    assert err.error.canonical_code == code_pb2.INVALID_ARGUMENT
    device.start()
    a.send(out)
    deadline = time.monotonic() + 3
    while device.counters["rx"] < 1 and time.monotonic() < deadline:
        time.sleep(0.01)
    assert device.counters["rx"] == 1    # entered ingress on the CPU port


def test_digests_after_config_with_ack_suppression(loaded, clients):
    a = clients(1)
    a.recv_arbitration()
    service = loaded.service
    service.digests.on_digest("learn_t", (0xAABBCCDDEEFF, 3))
    digest = p4runtime_pb2.DigestEntry(digest_id=DIGEST, config=p4runtime_pb2.DigestEntry.Config(
        max_list_size=1, ack_timeout_ns=10_000_000_000))
    a.write(update(U.INSERT, digest_entry=digest))
    service.digests.on_digest("learn_t", (0xAABBCCDDEEFF, 3))
    msg = a.recv()
    assert msg.digest.digest_id == DIGEST
    members = [m.bitstring for m in msg.digest.data[0].struct.members]
    assert members == [b"\xaa\xbb\xcc\xdd\xee\xff", b"\x03"]
    service.digests.on_digest("learn_t", (0xAABBCCDDEEFF, 3))    # same data, not acked: suppressed
    assert service.digests.suppressed == 1
    ack = p4runtime_pb2.StreamMessageRequest()
    ack.digest_ack.digest_id = DIGEST
    ack.digest_ack.list_id = msg.digest.list_id
    a.send(ack)
    deadline = time.monotonic() + 3
    while time.monotonic() < deadline:
        service.digests.on_digest("learn_t", (0xAABBCCDDEEFF, 3))
        if not a.inbox.empty():
            break
        time.sleep(0.02)
    assert a.recv().digest.list_id > msg.digest.list_id


def test_garbage_requests_do_not_hurt_the_server(loaded, clients):
    a = clients(1)
    a.recv_arbitration()
    raw = a.channel.unary_unary("/p4.v1.P4Runtime/Write", request_serializer=None, response_deserializer=None)
    with pytest.raises(grpc.RpcError) as info:
        raw(b"\xff\xff\xff\xff garbage", timeout=5)
    assert info.value.code() == grpc.StatusCode.INVALID_ARGUMENT
    hostile = entry(T_EXACT, list(EXACT_ENTRY.match))
    hostile.action.action.action_id = 16777218
    hostile.action.action.params.add(param_id=1, value=b"\x01" * 10_000)
    assert rpc_code(a.write, update(U.INSERT, table_entry=hostile)) == grpc.StatusCode.UNKNOWN
    assert a.stub.Capabilities(p4runtime_pb2.CapabilitiesRequest()).p4runtime_api_version == API_VERSION
    assert a.read(p4runtime_pb2.Entity(table_entry=p4runtime_pb2.TableEntry())) == []


def test_stop_ends_open_streams(device, p4info):
    srv = P4RuntimeServer(device, "127.0.0.1:0")
    port = srv.start()
    c = StreamClient(port)
    c.arbitrate(1)
    c.recv_arbitration()
    start = time.monotonic()
    srv.stop(grace=0.2)
    assert time.monotonic() - start < 3
    c.close()


def test_large_failed_batch_still_answers_unknown(loaded, clients):
    a = clients(1)
    a.recv_arbitration()
    a.write(update(U.INSERT, table_entry=LPM_ENTRY))
    with pytest.raises(grpc.RpcError) as info:
        a.write(*[update(U.INSERT, table_entry=LPM_ENTRY)] * 3000)
    assert info.value.code() == grpc.StatusCode.UNKNOWN
    assert "3000 of 3000 updates failed" in info.value.details()


def test_failed_batch_details_stay_under_the_default_trailer_limit(loaded, clients):
    """Up to ~150 updates the details always arrive (default gRPC clients refuse big trailers at
    random above 8 KiB); a client that raised its limit can ask for details of any batch."""
    a = clients(1)
    a.recv_arbitration()
    a.write(update(U.INSERT, table_entry=LPM_ENTRY))
    for _ in range(30):
        with pytest.raises(grpc.RpcError) as info:
            a.write(*[update(U.INSERT, table_entry=LPM_ENTRY)] * 120)
        assert info.value.code() == grpc.StatusCode.UNKNOWN
        assert len(write_errors(info.value)) == 120
    big = grpc.insecure_channel(f"127.0.0.1:{loaded.port}", options=[("grpc.max_metadata_size", 1 << 22)])
    try:
        req = p4runtime_pb2.WriteRequest(device_id=DEVICE_ID)
        req.election_id.low = 1
        req.updates.extend([update(U.INSERT, table_entry=LPM_ENTRY)] * 1000)
        stub = p4runtime_pb2_grpc.P4RuntimeStub(big)
        with pytest.raises(grpc.RpcError) as info:
            stub.Write(req, metadata=(("p4sim-status-details-limit", str(1 << 21)),), timeout=30)
        assert info.value.code() == grpc.StatusCode.UNKNOWN
        assert [c for c, _ in write_errors(info.value)] == [code_pb2.ALREADY_EXISTS] * 1000
    finally:
        big.close()


def test_rollback_on_error_over_grpc(loaded, clients, device):
    a = clients(1)
    a.recv_arbitration()
    a.write(update(U.INSERT, table_entry=LPM_ENTRY))
    with pytest.raises(grpc.RpcError) as info:
        a.write(update(U.INSERT, table_entry=EXACT_ENTRY), update(U.INSERT, table_entry=TERNARY_ENTRY),
                update(U.INSERT, table_entry=LPM_ENTRY), atomicity=p4runtime_pb2.WriteRequest.ROLLBACK_ON_ERROR)
    assert info.value.code() == grpc.StatusCode.UNKNOWN
    assert [c for c, _ in write_errors(info.value)] == [code_pb2.ABORTED, code_pb2.ABORTED,
                                                        code_pb2.ALREADY_EXISTS]
    assert len(a.read(p4runtime_pb2.Entity(table_entry=p4runtime_pb2.TableEntry()))) == 1
    a.write(update(U.INSERT, table_entry=EXACT_ENTRY), update(U.INSERT, table_entry=TERNARY_ENTRY),
            atomicity=p4runtime_pb2.WriteRequest.DATAPLANE_ATOMIC)
    assert len(a.read(p4runtime_pb2.Entity(table_entry=p4runtime_pb2.TableEntry()))) == 3


def test_stream_limit_keeps_unary_rpcs_alive(loaded, clients):
    from p4sim.p4runtime_server.server import MAX_STREAMS
    opened = [clients(None) for _ in range(MAX_STREAMS)]
    for c in opened:
        c.recv_arbitration()
    extra = clients(None)
    err = extra.recv()
    assert isinstance(err, grpc.RpcError) and err.code() == grpc.StatusCode.RESOURCE_EXHAUSTED
    assert opened[0].stub.Capabilities(p4runtime_pb2.CapabilitiesRequest(), timeout=5).p4runtime_api_version
    assert opened[0].read(p4runtime_pb2.Entity(table_entry=p4runtime_pb2.TableEntry())) == []
