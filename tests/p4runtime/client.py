"""A small raw-stub P4Runtime client for the tests: one StreamChannel whose responses are sorted
into a queue, plus helpers for Write/Read and for unpacking per-update errors from the trailer."""

from __future__ import annotations

import queue
import threading

import grpc
from google.rpc import status_pb2
from p4.v1 import p4runtime_pb2, p4runtime_pb2_grpc

_CLOSE = object()


class StreamClient:
    """One controller: a channel, a stream, and an inbox of StreamMessageResponse (or RpcError)."""

    def __init__(self, port: int, device_id: int = 1) -> None:
        self.device_id = device_id
        self.channel = grpc.insecure_channel(f"127.0.0.1:{port}")
        self.stub = p4runtime_pb2_grpc.P4RuntimeStub(self.channel)
        self._out: queue.Queue = queue.Queue()
        self.inbox: queue.Queue = queue.Queue()
        self.election_id: int | None = None
        self.stream = self.stub.StreamChannel(iter(self._requests, None))
        self._thread = threading.Thread(target=self._receive, daemon=True)
        self._thread.start()

    def _requests(self):
        item = self._out.get()
        return None if item is _CLOSE else item

    def _receive(self) -> None:
        try:
            for msg in self.stream:
                self.inbox.put(msg)
        except grpc.RpcError as err:
            self.inbox.put(err)

    def send(self, msg: p4runtime_pb2.StreamMessageRequest) -> None:
        self._out.put(msg)

    def arbitrate(self, election_id: int | None, device_id: int | None = None, role: str = "") -> None:
        req = p4runtime_pb2.StreamMessageRequest()
        req.arbitration.device_id = self.device_id if device_id is None else device_id
        if election_id is not None:
            req.arbitration.election_id.high = election_id >> 64
            req.arbitration.election_id.low = election_id & ((1 << 64) - 1)
            self.election_id = election_id
        if role:
            req.arbitration.role.name = role
        self.send(req)

    def recv(self, timeout: float = 3.0):
        return self.inbox.get(timeout=timeout)

    def recv_arbitration(self, timeout: float = 3.0) -> p4runtime_pb2.MasterArbitrationUpdate:
        msg = self.recv(timeout)
        assert isinstance(msg, p4runtime_pb2.StreamMessageResponse), msg
        assert msg.HasField("arbitration"), msg
        return msg.arbitration

    def _stamp(self, req) -> None:
        req.device_id = self.device_id
        if self.election_id is not None:
            req.election_id.high = self.election_id >> 64
            req.election_id.low = self.election_id & ((1 << 64) - 1)

    def write(self, *updates: p4runtime_pb2.Update, atomicity: int = 0) -> p4runtime_pb2.WriteResponse:
        req = p4runtime_pb2.WriteRequest(atomicity=atomicity)
        self._stamp(req)
        req.updates.extend(updates)
        return self.stub.Write(req, timeout=60)

    def read(self, *entities: p4runtime_pb2.Entity, timeout: float = 30) -> list[p4runtime_pb2.Entity]:
        req = p4runtime_pb2.ReadRequest(device_id=self.device_id)
        req.entities.extend(entities)
        out = []
        for response in self.stub.Read(req, timeout=timeout):
            out.extend(response.entities)
        return out

    def set_pipeline(self, p4info, device_config: bytes, action: int, cookie: int | None = None):
        req = p4runtime_pb2.SetForwardingPipelineConfigRequest(action=action)
        self._stamp(req)
        req.config.p4info.CopyFrom(p4info)
        req.config.p4_device_config = device_config
        if cookie is not None:
            req.config.cookie.cookie = cookie
        return self.stub.SetForwardingPipelineConfig(req, timeout=30)

    def close(self) -> None:
        self._out.put(_CLOSE)
        self.stream.cancel()
        self.channel.close()


def write_errors(err: grpc.RpcError) -> list[tuple[int, str]]:
    """(canonical code, message) per update from a failed Write's grpc-status-details-bin."""
    for key, value in err.trailing_metadata() or ():
        if key == "grpc-status-details-bin":
            status = status_pb2.Status.FromString(value)
            out = []
            for detail in status.details:
                p4_error = p4runtime_pb2.Error()
                assert detail.Unpack(p4_error)
                out.append((p4_error.canonical_code, p4_error.message))
            return out
    raise AssertionError("no grpc-status-details-bin trailer")
