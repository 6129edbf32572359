"""A thin P4Runtime client: one object per switch (no globals), over the ``p4runtime`` protos.

It connects, opens the StreamChannel and arbitrates (election id, optional role), keeps the
primary/backup state current from the stream (a receiver thread sorts stream messages), pushes
pipelines, writes batches and reads with wildcards. A refused Write is unpacked from the gRPC
trailer (``grpc-status-details-bin``) into "At index i: CODE, message" lines naming the entry.
When the stream breaks (switch restarted or gone) ``stream_down`` is set and ``on_stream_down``
called, so a supervisor can reconnect and restore state.

With ``tls`` (an object with ``ca_cert``, ``client_cert``, ``client_key``, ``server_name``: PEM file
paths and an optional name to check the server certificate against, e.g. the network YAML's
``tls`` section) the channel is TLS, mutual TLS when a client certificate is given.
"""

from __future__ import annotations

import logging
import queue
import threading
from collections.abc import Callable, Iterator, Sequence

import grpc
from google.protobuf import text_format
from google.rpc import code_pb2, status_pb2
from p4.config.v1 import p4info_pb2
from p4.v1 import p4runtime_pb2, p4runtime_pb2_grpc

from controller import wire
from controller.errors import NotPrimaryError, SwitchError, WriteError

log = logging.getLogger("controller.p4rt")

DEFAULT_TIMEOUT = 10.0
MAX_MESSAGE = 256 * 1024 * 1024


def _split_election_id(value: int) -> p4runtime_pb2.Uint128:
    return p4runtime_pb2.Uint128(high=value >> 64, low=value & ((1 << 64) - 1))


def _join_election_id(value: p4runtime_pb2.Uint128) -> int:
    return (value.high << 64) | value.low


def _varint(value: int) -> bytes:
    out = bytearray()
    while True:
        byte = value & 0x7F
        value >>= 7
        if value:
            out.append(byte | 0x80)
        else:
            out.append(byte)
            return bytes(out)


def _len_field(number: int, payload: bytes) -> bytes:
    return _varint((number << 3) | 2) + _varint(len(payload)) + payload


_F_WRITE = p4runtime_pb2.WriteRequest.DESCRIPTOR.fields_by_name
_F_UPDATE = p4runtime_pb2.Update.DESCRIPTOR.fields_by_name
_F_ENTITY = p4runtime_pb2.Entity.DESCRIPTOR.fields_by_name
_ENTITY_FIELD = {p4runtime_pb2.TableEntry: _F_ENTITY["table_entry"].number,
                 wire.WireEntry: _F_ENTITY["table_entry"].number,
                 p4runtime_pb2.ValueSetEntry: _F_ENTITY["value_set_entry"].number}


def encode_write_request(header: p4runtime_pb2.WriteRequest,
                         updates: Sequence[tuple[int, object]]) -> bytes:
    """Wire bytes of ``header`` plus ``updates`` (``(Update.Type, TableEntry | ValueSetEntry)``).

    Equal to protobuf's own encoding of the same WriteRequest (a unit test checks it) but each
    entry is serialized once instead of being copied into Update/Entity wrappers first, which with
    the pure-Python protobuf runtime is most of the cost of a large install.
    """
    head = p4runtime_pb2.WriteRequest()
    head.CopyFrom(header)
    tail = p4runtime_pb2.WriteRequest(role=head.role, atomicity=head.atomicity)   # fields after updates
    head.ClearField("role")
    head.ClearField("atomicity")
    parts = [head.SerializeToString()]
    update_no, type_no, entity_no = _F_WRITE["updates"].number, _F_UPDATE["type"].number, _F_UPDATE["entity"].number
    type_tag = _varint(type_no << 3)
    for kind, msg in updates:
        entity = _len_field(_ENTITY_FIELD[type(msg)], msg.SerializeToString())
        update = (type_tag + _varint(kind) if kind else b"") + _len_field(entity_no, entity)
        parts.append(_len_field(update_no, update))
    parts.append(tail.SerializeToString())
    return b"".join(parts)


def _code_name(code: int) -> str:
    try:
        return code_pb2.Code.Name(code)
    except ValueError:
        return str(code)


def unpack_write_error(err: grpc.RpcError) -> list[tuple[int, str, str]]:
    """``(index, CODE, message)`` for every failed update in a Write's gRPC trailer (OK ones skipped)."""
    details = []
    for key, value in (err.trailing_metadata() or ()):
        if key != "grpc-status-details-bin":
            continue
        status = status_pb2.Status()
        status.ParseFromString(value)
        for index, any_msg in enumerate(status.details):
            error = p4runtime_pb2.Error()
            if not any_msg.Unpack(error):
                continue
            if error.canonical_code != code_pb2.OK:
                details.append((index, _code_name(error.canonical_code), error.message))
    return details


class _SwitchLog(logging.LoggerAdapter):
    """Prefixes every log line with the switch name."""

    def process(self, msg, kwargs):
        return f"switch {self.extra['switch']}: {msg}", kwargs


class P4RuntimeClient:
    """P4Runtime client for one switch (``name`` appears in every log line and error)."""

    def __init__(self, name: str, address: str, device_id: int, election_id: int = 1,
                 role: str | None = None, timeout: float = DEFAULT_TIMEOUT, tls: object | None = None) -> None:
        self.name, self.address, self.device_id = name, address, device_id
        self.tls = tls
        self.election_id, self.role, self.timeout = election_id, role, timeout
        self.is_primary = False
        self.observer = False
        self.primary_election_id: int | None = None
        self.stream_down = threading.Event()
        self.arbitration_changed = threading.Condition()
        self.on_stream_down: Callable[[P4RuntimeClient], None] | None = None
        # When True, a backup told "no primary" re-arbitrates with an id above the highest seen
        # (P4Runtime never promotes a backup by itself; it must re-arbitrate with id >= highest).
        self.takeover = False
        self._highest_seen: int | None = None
        self.packet_ins: queue.Queue[p4runtime_pb2.PacketIn] = queue.Queue()
        self._channel: grpc.Channel | None = None
        self._stub: p4runtime_pb2_grpc.P4RuntimeStub | None = None
        self._requests: queue.Queue[p4runtime_pb2.StreamMessageRequest | None] = queue.Queue()
        self._receiver: threading.Thread | None = None
        self._stream = None
        self._raw_write = None
        self._raw_read = None
        self._closing = False
        self._log = _SwitchLog(log, {"switch": name})

    def _tls_credentials(self) -> tuple[grpc.ChannelCredentials, str | None]:
        """Channel credentials from the ``tls`` settings' PEM files (one-line SwitchError if unreadable)."""
        def pem(attr: str) -> bytes | None:
            path = getattr(self.tls, attr, None)
            if not path:
                return None
            try:
                with open(path, "rb") as f:
                    data = f.read(1 << 20)
            except OSError as err:
                raise SwitchError(self.name, f"tls.{attr} {path}: {err.strerror}") from None
            if b"-----BEGIN " not in data:
                raise SwitchError(self.name, f"tls.{attr} {path}: not a PEM file")
            return data
        cert, key = pem("client_cert"), pem("client_key")
        if (cert is None) != (key is None):
            raise SwitchError(self.name, "tls: client_cert and client_key go together")
        creds = grpc.ssl_channel_credentials(root_certificates=pem("ca_cert"), private_key=key,
                                             certificate_chain=cert)
        return creds, getattr(self.tls, "server_name", None)

    # -- connection and arbitration ---------------------------------------------------------------
    def connect(self, timeout: float | None = None, arbitrate: bool = True) -> None:
        """Open the channel and StreamChannel, send arbitration, wait for the switch's answer.

        Raises ``SwitchError`` when nothing answers at ``address`` within ``timeout``. Being a
        backup is not an error here (check ``is_primary`` or call ``require_primary``). With
        ``arbitrate=False`` only the channel is opened (enough for Read and GetForwardingPipelineConfig).
        """
        timeout = self.timeout if timeout is None else timeout
        options = [("grpc.max_send_message_length", MAX_MESSAGE),
                   ("grpc.max_receive_message_length", MAX_MESSAGE)]
        if self.tls is not None:
            credentials, server_name = self._tls_credentials()
            if server_name:
                options.append(("grpc.ssl_target_name_override", server_name))
            self._channel = grpc.secure_channel(self.address, credentials, options=options)
        else:
            self._channel = grpc.insecure_channel(self.address, options=options)
        try:
            grpc.channel_ready_future(self._channel).result(timeout=timeout)
        except grpc.FutureTimeoutError:
            self._channel.close()
            self._channel = None
            how = ("no TLS handshake: wrong CA, server name or client certificate, or a plaintext server"
                   if self.tls is not None else "no gRPC answer")
            raise SwitchError(self.name, f"unreachable at {self.address} ({how} in {timeout:g}s)") from None
        self._stub = p4runtime_pb2_grpc.P4RuntimeStub(self._channel)
        if not arbitrate:
            return
        self._closing = False
        self.stream_down.clear()
        self._requests = queue.Queue()
        self._stream = self._stub.StreamChannel(iter(self._requests.get, None))
        self._receiver = threading.Thread(target=self._receive, name=f"p4rt-{self.name}", daemon=True)
        self._receiver.start()
        with self.arbitration_changed:
            self.primary_election_id = None
            self._arbitrated = False
            self._requests.put(self._arbitration_request())
            if not self.arbitration_changed.wait_for(lambda: self._arbitrated or self.stream_down.is_set(),
                                                     timeout=timeout):
                self.close()
                raise SwitchError(self.name, f"no arbitration answer from {self.address} in {timeout:g}s")
        if self.stream_down.is_set() and not self._arbitrated:
            raise SwitchError(self.name, f"stream to {self.address} closed during arbitration"
                              f"{': ' + self._stream_error if self._stream_error else ''}")
        self._log.info("connected to %s: %s", self.address, "primary" if self.is_primary else "backup")

    def _arbitration_request(self) -> p4runtime_pb2.StreamMessageRequest:
        req = p4runtime_pb2.StreamMessageRequest()
        arb = req.arbitration
        arb.device_id = self.device_id
        if not self.observer:   # an observer leaves the election id unset: never primary, learns who is
            arb.election_id.CopyFrom(_split_election_id(self.election_id))
        if self.role:
            arb.role.name = self.role
        return req

    _arbitrated = False
    _stream_error = ""

    def _receive(self) -> None:
        try:
            for msg in self._stream:
                kind = msg.WhichOneof("update")
                if kind == "arbitration":
                    with self.arbitration_changed:
                        self.is_primary = msg.arbitration.status.code == code_pb2.OK
                        has_primary = msg.arbitration.status.code != code_pb2.NOT_FOUND
                        highest = _join_election_id(msg.arbitration.election_id)
                        self._highest_seen = highest or None
                        self.primary_election_id = highest if has_primary else None
                        self._arbitrated = True
                        self.arbitration_changed.notify_all()
                    if not has_primary and self.takeover:
                        self.claim_primary()
                    self._log.info("arbitration: %s (primary election id %s)",
                                   "primary" if self.is_primary else "backup", self.primary_election_id)
                elif kind == "packet":
                    self.packet_ins.put(msg.packet)
                elif kind == "error":
                    self._log.warning("stream error from switch: %s", msg.error.message)
        except grpc.RpcError as err:
            if not self._closing:
                self._stream_error = f"{err.code().name}: {err.details()}"
                self._log.warning("stream broke: %s", self._stream_error)
        finally:
            with self.arbitration_changed:
                self.is_primary = False
                self.stream_down.set()
                self.arbitration_changed.notify_all()
            if not self._closing and self.on_stream_down is not None:
                self.on_stream_down(self)

    def claim_primary(self) -> None:
        """Re-arbitrate with an election id above the highest the switch has seen (takeover)."""
        new_id = max(self.election_id, (self._highest_seen or 0) + 1)
        self._log.warning("no primary: claiming it with election id %d", new_id)
        self.election_id = new_id
        self._requests.put(self._arbitration_request())

    def wait_primary(self, timeout: float) -> bool:
        """Block until this client is primary (e.g. the old primary went away); True if it is."""
        with self.arbitration_changed:
            return self.arbitration_changed.wait_for(lambda: self.is_primary or self.stream_down.is_set(),
                                                     timeout=timeout) and self.is_primary

    def require_primary(self) -> None:
        if not self.is_primary:
            raise NotPrimaryError(self.name, self.election_id, self.primary_election_id)

    def close(self) -> None:
        self._closing = True
        self._requests.put(None)
        if self._stream is not None:
            self._stream.cancel()
        if self._channel is not None:
            self._channel.close()
        if self._receiver is not None and self._receiver is not threading.current_thread():
            self._receiver.join(timeout=2)
        self._channel = self._stub = self._stream = self._raw_write = self._raw_read = None

    def __enter__(self) -> P4RuntimeClient:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # -- pipeline ---------------------------------------------------------------------------------
    def get_pipeline(self) -> tuple[p4info_pb2.P4Info | None, int | None]:
        """The switch's P4Info and cookie, ``(None, None)`` when it has no pipeline."""
        req = p4runtime_pb2.GetForwardingPipelineConfigRequest(
            device_id=self.device_id,
            response_type=p4runtime_pb2.GetForwardingPipelineConfigRequest.P4INFO_AND_COOKIE)
        try:
            resp = self._call("GetForwardingPipelineConfig", req)
        except SwitchError as err:
            if "FAILED_PRECONDITION" in str(err) or "NOT_FOUND" in str(err):
                return None, None
            raise
        config = resp.config
        if not config.HasField("p4info") or not (config.p4info.tables or config.p4info.actions):
            return None, None
        cookie = config.cookie.cookie if config.HasField("cookie") else None
        return config.p4info, cookie

    def set_pipeline(self, p4info: p4info_pb2.P4Info, device_config: bytes, cookie: int) -> None:
        """Push the pipeline (VERIFY_AND_COMMIT); the switch's state starts empty afterwards."""
        req = p4runtime_pb2.SetForwardingPipelineConfigRequest(
            device_id=self.device_id, election_id=_split_election_id(self.election_id),
            action=p4runtime_pb2.SetForwardingPipelineConfigRequest.VERIFY_AND_COMMIT)
        if self.role:
            req.role = self.role
        req.config.p4info.CopyFrom(p4info)
        req.config.p4_device_config = device_config
        req.config.cookie.cookie = cookie
        self._call("SetForwardingPipelineConfig", req)
        self._log.info("pipeline pushed (cookie %#x, %d bytes of device config)", cookie, len(device_config))

    # -- write and read ----------------------------------------------------------------------------
    def write(self, updates: Sequence[p4runtime_pb2.Update], describe: Sequence[str] | None = None) -> None:
        """One WriteRequest with ``updates`` (CONTINUE_ON_ERROR); ``WriteError`` lists failed ones."""
        if not updates:
            return
        req = p4runtime_pb2.WriteRequest(device_id=self.device_id,
                                         election_id=_split_election_id(self.election_id))
        if self.role:
            req.role = self.role
        req.updates.extend(updates)
        try:
            self._require_stub().Write(req, timeout=self.timeout)
        except grpc.RpcError as err:
            self._raise_write_error(err, describe)

    def _raise_write_error(self, err: grpc.RpcError, describe: Sequence[str] | None) -> None:
        details = unpack_write_error(err)
        if err.code() == grpc.StatusCode.PERMISSION_DENIED and not details:
            raise NotPrimaryError(self.name, self.election_id, self.primary_election_id) from None
        if err.code() == grpc.StatusCode.UNAVAILABLE:
            raise SwitchError(self.name, f"unreachable during write: {err.details()}") from None
        raise WriteError(self.name, details, list(describe) if describe else None,
                         summary=f"{err.code().name}, {err.details()}") from None

    def write_entities(self, updates: Sequence[tuple[int, object]]) -> None:
        """Like ``write`` for ``(Update.Type, TableEntry | ValueSetEntry)`` pairs, without copying
        each entry into an Update (see ``encode_write_request``)."""
        if not updates:
            return
        header = p4runtime_pb2.WriteRequest(device_id=self.device_id,
                                            election_id=_split_election_id(self.election_id))
        if self.role:
            header.role = self.role
        if self._raw_write is None:
            self._raw_write = self._channel.unary_unary(
                "/p4.v1.P4Runtime/Write", request_serializer=lambda data: data,
                response_deserializer=p4runtime_pb2.WriteResponse.FromString)
        try:
            self._require_stub()
            self._raw_write(encode_write_request(header, updates), timeout=self.timeout)
        except grpc.RpcError as err:
            self._raise_write_error(err, None)

    def read(self, entities: Sequence[p4runtime_pb2.Entity]) -> Iterator[p4runtime_pb2.Entity]:
        """Entities matching ``entities`` (zero ids and empty fields are wildcards)."""
        req = p4runtime_pb2.ReadRequest(device_id=self.device_id)
        if self.role:
            req.role = self.role
        req.entities.extend(entities)
        try:
            for resp in self._require_stub().Read(req, timeout=self.timeout):
                yield from resp.entities
        except grpc.RpcError as err:
            raise SwitchError(self.name, f"read failed: {err.code().name}, {err.details()}") from None

    def read_table_entries(self, table_id: int = 0, counter_data: bool = False) -> list[p4runtime_pb2.TableEntry]:
        entity = p4runtime_pb2.Entity()
        entity.table_entry.table_id = table_id
        if counter_data:
            entity.table_entry.counter_data.SetInParent()
        return [e.table_entry for e in self.read([entity])]

    def read_table_entries_wire(self, table_id: int = 0) -> list[wire.WireEntry]:
        """``read_table_entries`` without protobuf parsing: each entry as a ``WireEntry`` cut from
        the raw ReadResponse bytes (``wire.decode_read_response``)."""
        req = p4runtime_pb2.ReadRequest(device_id=self.device_id)
        if self.role:
            req.role = self.role
        req.entities.add().table_entry.table_id = table_id
        self._require_stub()
        if self._raw_read is None:
            self._raw_read = self._channel.unary_stream(
                "/p4.v1.P4Runtime/Read", request_serializer=p4runtime_pb2.ReadRequest.SerializeToString,
                response_deserializer=lambda data: data)
        out: list[wire.WireEntry] = []
        try:
            for data in self._raw_read(req, timeout=self.timeout):
                out.extend(wire.decode_read_response(data))
        except grpc.RpcError as err:
            raise SwitchError(self.name, f"read failed: {err.code().name}, {err.details()}") from None
        return out

    def read_counter(self, counter_id: int) -> list[p4runtime_pb2.CounterEntry]:
        entity = p4runtime_pb2.Entity()
        entity.counter_entry.counter_id = counter_id
        return [e.counter_entry for e in self.read([entity])]

    # -- internals ---------------------------------------------------------------------------------
    def _require_stub(self) -> p4runtime_pb2_grpc.P4RuntimeStub:
        if self._stub is None:
            raise SwitchError(self.name, "not connected")
        return self._stub

    def _call(self, method: str, request: object) -> object:
        try:
            return getattr(self._require_stub(), method)(request, timeout=self.timeout)
        except grpc.RpcError as err:
            if err.code() == grpc.StatusCode.PERMISSION_DENIED:
                raise NotPrimaryError(self.name, self.election_id, self.primary_election_id) from None
            raise SwitchError(self.name, f"{method} failed: {err.code().name}, {err.details()}") from None


def p4info_text(p4info: p4info_pb2.P4Info) -> str:
    return text_format.MessageToString(p4info)
