"""The ``p4.v1.P4Runtime`` gRPC service over one ``SwitchDevice`` (device contract, Contract 6).

RPCs: Capabilities; Set/GetForwardingPipelineConfig (VERIFY, VERIFY_AND_COMMIT, VERIFY_AND_SAVE +
COMMIT; the device config is ``CompiledProgram.device_config()`` bytes and its P4Info must agree
with the one sent);
Write (primary only; CONTINUE_ON_ERROR, or all-or-nothing for ROLLBACK_ON_ERROR/DATAPLANE_ATOMIC;
per-update ``p4.v1.Error`` details in an UNKNOWN status);
Read (wildcards, streamed); StreamChannel (arbitration, packet-out/in, digests and their acks).
A refused request gets one status with the spec's code; a bug answers INTERNAL, never a dead server.
Every request arrives as raw bytes and is decoded here, so an undecodable one is INVALID_ARGUMENT.

Streams are a bounded resource: a StreamChannel that has not arbitrated within
``ARBITRATION_TIMEOUT`` is closed, at most ``MAX_PENDING`` may wait to arbitrate (a newcomer closes
the oldest), and when ``MAX_STREAMS`` controllers are connected, one that arbitrates with a higher
election id than some connected controller takes that controller's slot. So connections that never
arbitrate cannot lock the real controller out.

TLS (``TlsConfig``): server certificate, and with a CA, mutual TLS (client certificates required).
"""

from __future__ import annotations

import functools
import logging
import queue
import threading
import time
from concurrent import futures
from dataclasses import dataclass
from typing import Any, NamedTuple

import grpc
from google.protobuf.message import DecodeError
from p4.v1 import p4runtime_pb2, p4runtime_pb2_grpc

from p4sim.errors import UserError
from p4sim.p4runtime_server.arbitration import Arbitrator, Controller, election_id_of
from p4sim.p4runtime_server.atomic import apply_atomic_batch
from p4sim.p4runtime_server.device_config import unwrap_device_config
from p4sim.p4runtime_server.digests import DigestEngine
from p4sim.p4runtime_server.entities import apply_batch, read_entities
from p4sim.p4runtime_server.errors import (
    DETAILS_LIMIT_KEY,
    MAX_DETAILS_BYTES,
    P4RuntimeError,
    batch_status,
    grpc_code_number,
    invalid,
)
from p4sim.p4runtime_server.p4info_index import check_compatible
from p4sim.p4runtime_server.packet_io import parse_packet_in, serialize_packet_out
from p4sim.p4runtime_server.session import PipelineSession
from p4sim.p4runtime_server.wire import WriteBatch, parse_write_request
from p4sim.switch import gcpause

__all__ = ["P4RuntimeServer", "P4RuntimeService", "API_VERSION", "TlsConfig"]

log = logging.getLogger("p4sim.p4runtime")

API_VERSION = "1.3.0"
GC_FREEZE_BATCH = 100        # Write batches at least this big freeze the heap afterwards
MAX_STREAMS = 16              # arbitrated StreamChannels; each holds a worker thread for its lifetime
MAX_PENDING = 16              # StreamChannels not arbitrated yet; a newcomer closes the oldest
ARBITRATION_TIMEOUT = 5.0     # seconds a StreamChannel may stay without arbitrating
WORKERS = 64                  # > MAX_STREAMS + MAX_PENDING: unary RPCs always find a worker
STOP_TIMEOUT = 5.0            # seconds ``stop`` waits for the gRPC server beyond its grace
STREAM_QUEUE = 65536          # messages buffered per stream before packet-ins are dropped
MAX_MESSAGE = 256 * 1024 * 1024
_END = object()
SetConfig = p4runtime_pb2.SetForwardingPipelineConfigRequest
GetConfig = p4runtime_pb2.GetForwardingPipelineConfigRequest


class _Status(NamedTuple):
    """A grpc.Status (code, details, trailing metadata) for ``abort_with_status``."""

    code: grpc.StatusCode
    details: str
    trailing_metadata: tuple


class _GrpcStatus(_Status, grpc.Status):
    pass


class _Abort(NamedTuple):
    error: P4RuntimeError


class _BatchFailed(Exception):
    """A Write batch with refused updates: answered UNKNOWN with per-update details."""

    def __init__(self, status) -> None:
        super().__init__(status.message)
        self.status = status


def _rpc(method):
    """Turn P4RuntimeError into the RPC's status; log and answer INTERNAL for anything else.

    The status is computed inside the ``except`` and the call aborted after it: aborting inside
    would chain gRPC's exception to ours, a reference cycle through this frame and the request."""
    @functools.wraps(method)
    def wrapper(self, request, context):
        self._inflight.enter()
        try:
            try:
                return method(self, request, context)
            except _BatchFailed as failed:
                status = _GrpcStatus(grpc.StatusCode.UNKNOWN, failed.status.message,
                                     (("grpc-status-details-bin", failed.status.SerializeToString()),))
            except P4RuntimeError as err:
                log.info("%s refused: %s", method.__name__, err)
                status = _GrpcStatus(err.code, err.message, ())
            except UserError as err:
                status = _GrpcStatus(grpc.StatusCode.INVALID_ARGUMENT, str(err), ())
            except RecursionError:
                status = _GrpcStatus(grpc.StatusCode.INVALID_ARGUMENT, f"{method.__name__}: request nests too deeply",
                                     ())
            except Exception as err:   # noqa: BLE001 - a bug must not take the server down
                log.exception("%s failed", method.__name__)
                status = _GrpcStatus(grpc.StatusCode.INTERNAL, f"internal error: {err}", ())
            del request
        finally:
            self._inflight.leave()
        context.abort_with_status(status)
    return wrapper


class _InFlight:
    """How many unary RPCs and Reads are running (the heap is frozen only when none is)."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self.count = 0

    def enter(self) -> None:
        with self._lock:
            self.count += 1

    def leave(self) -> None:
        with self._lock:
            self.count -= 1


def _decode(cls, raw, what: str):
    """Parse a request that arrived as bytes; undecodable input is INVALID_ARGUMENT."""
    if not isinstance(raw, bytes):
        return raw
    try:
        return cls.FromString(raw)
    except (DecodeError, RecursionError, ValueError) as err:   # ValueError: bad UTF-8 in a string
        raise invalid(f"malformed {what}: {err or type(err).__name__}") from None


class _HeapFreezer:
    """Keeps installed entries out of the collector's full scans (which otherwise grow with the
    table and dominate large reads) by freezing the heap after big Write batches.

    A frozen object is never collected by the cycle collector. Freezing inside the Write, while
    the request, its per-update errors and the failure status (protobuf messages hold reference
    cycles) were still alive, pinned them for ever: every failed batch of >= 100 updates leaked.
    So the freeze runs on its own thread ``DELAY`` seconds after the batch, at a moment when no
    request is running (retrying every ``RETRY`` s), and collects first: the collection scans
    only what was allocated since the previous freeze, so it costs about what the batch did. A
    stream of big batches freezes at most once per ``DELAY``, not once per batch, and never waits
    for the stream to end (a bulk install keeps its heap frozen as it grows).

    In a process that is a switch and nothing else (``p4sim switch``: ``gcpause.claim_heap``)
    every Write batch asks for a freeze (a pipeline load freezes at once, thawing the previous
    pipeline first): full collections then walk only what is young, not the program (issue 15:
    counter reads while forwarding caused 50-200 ms pauses of the packet thread)."""

    DELAY = 0.2
    RETRY = 0.005

    def __init__(self, inflight: _InFlight) -> None:
        self._lock = threading.Lock()
        self._timer: threading.Timer | None = None
        self._inflight = inflight

    def request(self) -> None:
        """Freeze ``DELAY`` s from now."""
        with self._lock:
            if self._timer is None:       # one pending freeze covers every batch until it runs
                self._schedule(self.DELAY)

    def _schedule(self, delay: float) -> None:
        self._timer = threading.Timer(delay, self._freeze)
        self._timer.daemon = True
        self._timer.start()

    def _freeze(self) -> None:
        with self._lock:
            if self._timer is None:       # cancelled
                return
            if self._inflight.count:      # objects of a running request would be pinned: retry
                self._schedule(self.RETRY)
                return
            self._timer = None
        gcpause.freeze_heap()

    def cancel(self) -> None:
        with self._lock:
            if self._timer is not None:
                self._timer.cancel()
                self._timer = None


def _details_limit(context) -> int:
    """Trailer budget for per-update errors: the default, or what the client says it accepts."""
    for key, value in context.invocation_metadata() or ():
        if key == DETAILS_LIMIT_KEY:
            try:
                return max(MAX_DETAILS_BYTES, min(int(value), MAX_MESSAGE))
            except ValueError:
                break
    return MAX_DETAILS_BYTES


def _atomicity_name(value: int) -> str:
    try:
        return p4runtime_pb2.WriteRequest.Atomicity.Name(value)
    except ValueError:
        return str(value)


def _role(request) -> str:
    return request.role or (f"#{request.role_id}" if request.role_id else "")


class P4RuntimeService(p4runtime_pb2_grpc.P4RuntimeServicer):
    """The servicer: all P4Runtime semantics over one device."""

    def __init__(self, device: Any) -> None:
        self.device = device
        # the device lock, taken as a control thread (the packet thread yields to it between packets)
        self._control = getattr(device, "control_lock", None) or device.lock
        self.arbitrator = Arbitrator(device.device_id)
        self._session: PipelineSession | None = None
        self._saved: PipelineSession | None = None      # VERIFY_AND_SAVE, waiting for COMMIT
        self.packet_in_dropped = 0
        self.arbitration_timeout = ARBITRATION_TIMEOUT
        self._inflight = _InFlight()
        self._heap_freezer = _HeapFreezer(self._inflight)
        self._pending: dict[_Stream, None] = {}      # opened, not arbitrated yet (oldest first)
        self._active: set[_Stream] = set()            # arbitrated
        self._streams_lock = threading.Lock()
        self._config_lock = threading.Lock()
        self.digests = DigestEngine(lambda: self.session, self._send_to_primaries)
        device.set_packet_in_handler(self.on_packet_in)
        device.set_digest_handler(self.digests.on_digest)

    @property
    def session(self) -> PipelineSession | None:
        """The pipeline as P4Runtime sees it; follows programs loaded on the device by other
        means (``p4sim switch PROGRAM``) with that program's own P4Info and device config."""
        current = self._session
        program = getattr(self.device, "program", None)
        if program is not None and (current is None or current.program is not program):
            # no lock: callers may hold the device lock; racing rebuilds produce equal sessions
            current = self._session = PipelineSession(program.p4info, program.device_config(), None, program)
        return current

    @session.setter
    def session(self, value: PipelineSession | None) -> None:
        self._session = value

    def close(self) -> None:
        """Detach from the device and end every open stream."""
        self.device.set_packet_in_handler(None)
        self.device.set_digest_handler(None)
        self._heap_freezer.cancel()
        with self._streams_lock:
            streams = list(self._pending) + list(self._active)
        for st in streams:
            st.close(P4RuntimeError(grpc.StatusCode.UNAVAILABLE, "the switch is shutting down"))

    # ---- Capabilities and pipeline config ---------------------------------------------------

    @_rpc
    def Capabilities(self, request, context):   # noqa: N802 - gRPC method name
        _decode(p4runtime_pb2.CapabilitiesRequest, request, "CapabilitiesRequest")
        return p4runtime_pb2.CapabilitiesResponse(p4runtime_api_version=API_VERSION)

    def _check_device(self, device_id: int) -> None:
        if device_id != self.device.device_id:
            raise P4RuntimeError(grpc.StatusCode.NOT_FOUND,
                                 f"device id {device_id} is not this switch ({self.device.device_id})")

    @_rpc
    def SetForwardingPipelineConfig(self, request, context):   # noqa: N802
        request = _decode(SetConfig, request, "SetForwardingPipelineConfigRequest")
        self._check_device(request.device_id)
        self.arbitrator.check_primary(request.device_id, _role(request), election_id_of(request),
                                      "SetForwardingPipelineConfig")
        action = request.action
        if action == SetConfig.UNSPECIFIED:
            raise invalid("SetForwardingPipelineConfig: action is UNSPECIFIED")
        if action == SetConfig.RECONCILE_AND_COMMIT:
            raise P4RuntimeError(grpc.StatusCode.UNIMPLEMENTED,
                                 "SetForwardingPipelineConfig RECONCILE_AND_COMMIT is not supported by p4sim "
                                 "(use VERIFY_AND_COMMIT; the new pipeline starts empty)")
        if action == SetConfig.COMMIT:
            session = self._saved
            if session is None:
                raise P4RuntimeError(grpc.StatusCode.FAILED_PRECONDITION,
                                     "COMMIT: no config was saved with VERIFY_AND_SAVE")
        else:
            session = self._verify(request.config)
            if action == SetConfig.VERIFY:
                return p4runtime_pb2.SetForwardingPipelineConfigResponse()
            if action == SetConfig.VERIFY_AND_SAVE:
                self._saved = session
                return p4runtime_pb2.SetForwardingPipelineConfigResponse()
            if action != SetConfig.VERIFY_AND_COMMIT:
                raise invalid(f"SetForwardingPipelineConfig: unknown action {action}")
        with self._config_lock, self._control:
            self.device.load_program(session.program)
            self.session = session
            self._saved = None
            self.digests.reset()
        if gcpause.owns_heap():     # the new program out of full collections, within the load (gcpause)
            gcpause.freeze_heap(thaw_first=True)
        log.info("pipeline '%s' committed", getattr(session.program, "name", "?"))
        return p4runtime_pb2.SetForwardingPipelineConfigResponse()

    def _verify(self, config: p4runtime_pb2.ForwardingPipelineConfig) -> PipelineSession:
        """A session for ``config`` once its device config loads and its P4Info agrees with it."""
        if not config.p4_device_config:
            raise invalid("SetForwardingPipelineConfig: p4_device_config is empty (give the bytes "
                          "`p4sim compile` writes)")
        if not config.HasField("p4info"):
            raise invalid("SetForwardingPipelineConfig: p4info is missing")
        from p4sim.backend import CompiledProgram  # late: the server runs before a backend exists
        target_config = unwrap_device_config(bytes(config.p4_device_config))
        try:
            program = CompiledProgram.from_device_config(target_config)
        except UserError as err:
            raise invalid(f"SetForwardingPipelineConfig: bad p4_device_config: {err}") from err
        except RecursionError:
            raise invalid("SetForwardingPipelineConfig: bad p4_device_config: nested too deeply") from None
        check_compatible(config.p4info, program.p4info)
        cookie = config.cookie.cookie if config.HasField("cookie") else None
        return PipelineSession(config.p4info, bytes(config.p4_device_config), cookie, program)

    @_rpc
    def GetForwardingPipelineConfig(self, request, context):   # noqa: N802
        request = _decode(GetConfig, request, "GetForwardingPipelineConfigRequest")
        self._check_device(request.device_id)
        session = self.session
        if session is None:
            raise P4RuntimeError(grpc.StatusCode.FAILED_PRECONDITION, "no forwarding pipeline config set")
        out = p4runtime_pb2.GetForwardingPipelineConfigResponse()
        kind = request.response_type
        if kind in (GetConfig.ALL, GetConfig.P4INFO_AND_COOKIE):
            out.config.p4info.CopyFrom(session.p4info)
        if kind in (GetConfig.ALL, GetConfig.DEVICE_CONFIG_AND_COOKIE):
            out.config.p4_device_config = session.device_config
        if session.cookie is not None:
            out.config.cookie.cookie = session.cookie
        out.config.SetInParent()
        return out

    # ---- Write and Read ----------------------------------------------------------------------

    @_rpc
    def Write(self, request, context):   # noqa: N802
        """``request`` is a WriteRequest or its raw bytes (the server registers a raw handler so
        big batches of table entries skip the slow pure-Python protobuf parser)."""
        raw = request if isinstance(request, bytes) else None
        if raw is not None:
            try:
                request = parse_write_request(raw)
            except (DecodeError, ValueError) as err:   # ValueError: bad UTF-8 in a string field
                raise invalid(f"malformed WriteRequest: {err}") from err
        else:
            request = WriteBatch(request.device_id, request.role_id, request.role,
                                 election_id_of(request), request.atomicity, list(request.updates))
        self._check_device(request.device_id)
        role = request.role or (f"#{request.role_id}" if request.role_id else "")
        self.arbitrator.check_primary(request.device_id, role, request.election_id, "Write")
        Req = p4runtime_pb2.WriteRequest
        atomic = request.atomicity in (Req.ROLLBACK_ON_ERROR, Req.DATAPLANE_ATOMIC)
        if request.atomicity != Req.CONTINUE_ON_ERROR and not atomic:
            raise invalid(f"unknown atomicity {_atomicity_name(request.atomicity)}")
        updates = request.updates
        if atomic and raw is not None:   # undo needs every update as a message
            updates = list(Req.FromString(raw).updates)
        with self._control:
            session, pipeline = self.session, self.device.pipeline
            if session is None or pipeline is None:
                raise P4RuntimeError(grpc.StatusCode.FAILED_PRECONDITION, "no forwarding pipeline config set")
            if atomic:
                results = apply_atomic_batch(session, pipeline, updates)
            else:
                results = apply_batch(session, pipeline, updates)
        if len(request.updates) >= GC_FREEZE_BATCH or gcpause.owns_heap():
            self._heap_freezer.request()
        if results:
            raise _BatchFailed(batch_status(results, _details_limit(context)))
        return p4runtime_pb2.WriteResponse()

    def Read(self, request, context):   # noqa: N802
        self._inflight.enter()
        try:
            try:
                request = _decode(p4runtime_pb2.ReadRequest, request, "ReadRequest")
                self._check_device(request.device_id)
                with self._control:
                    session, pipeline = self.session, self.device.pipeline
                if session is None or pipeline is None:
                    raise P4RuntimeError(grpc.StatusCode.FAILED_PRECONDITION, "no forwarding pipeline config set")
                responses = read_entities(session, pipeline, request.entities, self._control)
                status = None
            except P4RuntimeError as err:
                status = _GrpcStatus(err.code, err.message, ())
            except RecursionError:
                status = _GrpcStatus(grpc.StatusCode.INVALID_ARGUMENT, "Read: request nests too deeply", ())
            except Exception as err:   # noqa: BLE001
                log.exception("Read failed")
                status = _GrpcStatus(grpc.StatusCode.INTERNAL, f"internal error: {err}", ())
        finally:
            self._inflight.leave()
        if status is not None:
            context.abort_with_status(status)
        yield from responses

    # ---- StreamChannel --------------------------------------------------------------------------

    def _send_to_primaries(self, msg: p4runtime_pb2.StreamMessageResponse) -> None:
        for c in self.arbitrator.primaries():
            c.send(msg)

    def on_packet_in(self, data: bytes) -> None:
        """Deliver a frame that egressed on the CPU port to the primary controllers."""
        session = self.session
        fields = session.index.packet_in if session is not None else None
        msg = p4runtime_pb2.StreamMessageResponse()
        msg.packet.CopyFrom(parse_packet_in(fields, data))
        self._send_to_primaries(msg)

    @staticmethod
    def _stream_error(code: grpc.StatusCode, message: str, packet=None) -> p4runtime_pb2.StreamMessageResponse:
        out = p4runtime_pb2.StreamMessageResponse()
        out.error.canonical_code = grpc_code_number(code)
        out.error.message = message
        if packet is not None:
            out.error.packet_out.packet_out.CopyFrom(packet)
        return out

    def _handle_stream_message(self, req, stream: _Stream, send) -> None:
        kind = req.WhichOneof("update")
        if kind == "arbitration":
            if stream.controller is None:
                self._admit(stream, election_id_of(req.arbitration))
            stream.controller = self.arbitrator.arbitrate(stream.controller, req.arbitration, send,
                                                          stream.is_active)
            return
        controller: Controller | None = stream.controller
        if kind == "packet":
            if controller is None or not self.arbitrator.is_primary(controller):
                send(self._stream_error(grpc.StatusCode.PERMISSION_DENIED,
                                        "packet-out: only the primary controller may send packets", req.packet))
                return
            session = self.session
            if session is None:
                send(self._stream_error(grpc.StatusCode.FAILED_PRECONDITION,
                                        "packet-out: no forwarding pipeline config set", req.packet))
                return
            try:
                data = serialize_packet_out(session.index.packet_out, req.packet)
            except P4RuntimeError as err:
                send(self._stream_error(err.code, err.message, req.packet))
                return
            self.device.inject_packet_out(data)
        elif kind == "digest_ack":
            self.digests.on_ack(req.digest_ack)
        else:
            send(self._stream_error(grpc.StatusCode.UNIMPLEMENTED, f"stream message {kind} not supported"))

    # ---- stream slots ---------------------------------------------------------------------------

    def _count_dropped(self) -> None:
        self.packet_in_dropped += 1

    def _open_stream(self, stream: _Stream) -> None:
        """Register a new StreamChannel as pending; the oldest pending one makes room if needed."""
        with self._streams_lock:
            if len(self._pending) >= MAX_PENDING:
                oldest = next(iter(self._pending))
                del self._pending[oldest]
                oldest.close(P4RuntimeError(grpc.StatusCode.RESOURCE_EXHAUSTED,
                                            f"StreamChannel closed: it did not arbitrate and {MAX_PENDING} "
                                            "streams were waiting to"))
            self._pending[stream] = None

    def _admit(self, stream: _Stream, election_id: int | None) -> None:
        """A pending stream arbitrates: give it a controller slot, taking the slot of the connected
        controller with the lowest election id when every slot is used and that id is lower."""
        evicted: _Stream | None = None
        with self._streams_lock:
            if stream not in self._pending:
                raise P4RuntimeError(grpc.StatusCode.RESOURCE_EXHAUSTED, "StreamChannel was closed")
            if len(self._active) >= MAX_STREAMS:
                evicted = min(self._active, key=lambda st: _election_key(st.controller))
                if _election_key(evicted.controller) >= _election_key_id(election_id):
                    raise P4RuntimeError(grpc.StatusCode.RESOURCE_EXHAUSTED,
                                         f"{MAX_STREAMS} controllers are connected and none has an election id "
                                         f"lower than {election_id}; close one first")
                self._active.discard(evicted)
            del self._pending[stream]
            self._active.add(stream)
        if evicted is not None:
            victim = evicted.controller
            evicted.close(P4RuntimeError(grpc.StatusCode.RESOURCE_EXHAUSTED,
                                         f"StreamChannel closed: a controller with election id {election_id} "
                                         f"needed the slot (this one has {getattr(victim, 'election_id', None)})"))
            if victim is not None:
                self.arbitrator.remove(victim)
            log.info("stream slot of election id %s given to election id %s",
                     getattr(victim, "election_id", None), election_id)

    def _close_stream(self, stream: _Stream) -> None:
        with self._streams_lock:
            self._pending.pop(stream, None)
            self._active.discard(stream)
        if stream.controller is not None:
            self.arbitrator.remove(stream.controller)

    def StreamChannel(self, request_iterator, context):   # noqa: N802
        stream = _Stream(queue.Queue(maxsize=STREAM_QUEUE), time.monotonic(), context.is_active,
                         self._count_dropped)
        out = stream.out
        send = stream.send

        def reader() -> None:
            try:
                for raw in request_iterator:
                    try:
                        req = _decode(p4runtime_pb2.StreamMessageRequest, raw, "StreamMessageRequest")
                        self._handle_stream_message(req, stream, send)
                    except P4RuntimeError as err:
                        stream.close(err)
                        return
                    except Exception:   # noqa: BLE001 - never kill the stream on a server bug
                        log.exception("stream message failed")
                        send(self._stream_error(grpc.StatusCode.INTERNAL, "internal error"))
            except Exception:   # noqa: BLE001 - client went away mid-read
                pass
            finally:
                out.put(_END)

        self._open_stream(stream)
        context.add_callback(lambda: out.put(_END))
        thread = threading.Thread(target=reader, name="p4rt-stream", daemon=True)
        thread.start()
        try:
            while True:
                if stream.controller is None:
                    remaining = stream.opened + self.arbitration_timeout - time.monotonic()
                    if remaining <= 0:
                        log.info("StreamChannel closed: no arbitration within %.1f s", self.arbitration_timeout)
                        context.abort(grpc.StatusCode.DEADLINE_EXCEEDED,
                                      f"no MasterArbitrationUpdate within {self.arbitration_timeout:g} s of "
                                      "opening the StreamChannel")
                    try:
                        item = out.get(timeout=remaining)
                    except queue.Empty:
                        continue
                else:
                    item = out.get()
                if item is _END:
                    break
                if isinstance(item, _Abort):
                    context.abort(item.error.code, item.error.message)
                yield item
        finally:
            self._close_stream(stream)


class _Stream:
    """One open StreamChannel: its outgoing queue and, once arbitrated, its controller."""

    __slots__ = ("out", "opened", "is_active", "controller", "on_drop")

    def __init__(self, out: queue.Queue, opened: float, is_active, on_drop) -> None:
        self.out = out
        self.opened = opened
        self.is_active = is_active
        self.controller: Controller | None = None
        self.on_drop = on_drop

    def send(self, msg) -> None:
        try:
            self.out.put_nowait(msg)
        except queue.Full:
            self.on_drop()

    def close(self, error: P4RuntimeError) -> None:
        """End the stream with ``error`` (delivered even when the queue is full)."""
        while True:
            try:
                self.out.put_nowait(_Abort(error))
                return
            except queue.Full:
                try:
                    self.out.get_nowait()
                except queue.Empty:
                    pass


def _election_key(c: Controller | None) -> int:
    return _election_key_id(c.election_id if c is not None else None)


def _election_key_id(eid: int | None) -> int:
    return -1 if eid is None else eid


def _handlers(service: P4RuntimeService) -> grpc.GenericRpcHandler:
    """The P4Runtime methods. Every request arrives as bytes and the service decodes it (Write with
    the fast path of ``wire``), so undecodable input is the service's INVALID_ARGUMENT, not gRPC's
    INTERNAL "Exception deserializing request"."""
    pb = p4runtime_pb2
    unary, stream = grpc.unary_unary_rpc_method_handler, grpc.unary_stream_rpc_method_handler
    return grpc.method_handlers_generic_handler("p4.v1.P4Runtime", {
        "Write": unary(service.Write, request_deserializer=None,
                       response_serializer=pb.WriteResponse.SerializeToString),
        "Read": stream(service.Read, request_deserializer=None,
                       response_serializer=None),   # already serialized (see wire_encode)
        "SetForwardingPipelineConfig": unary(
            service.SetForwardingPipelineConfig,
            request_deserializer=None,
            response_serializer=pb.SetForwardingPipelineConfigResponse.SerializeToString),
        "GetForwardingPipelineConfig": unary(
            service.GetForwardingPipelineConfig,
            request_deserializer=None,
            response_serializer=pb.GetForwardingPipelineConfigResponse.SerializeToString),
        "StreamChannel": grpc.stream_stream_rpc_method_handler(
            service.StreamChannel, request_deserializer=None,
            response_serializer=pb.StreamMessageResponse.SerializeToString),
        "Capabilities": unary(service.Capabilities, request_deserializer=None,
                              response_serializer=pb.CapabilitiesResponse.SerializeToString),
    })


@dataclass(frozen=True)
class TlsConfig:
    """simple_switch_grpc's TLS flags, as PEM bytes: ``--grpc-server-cert``/``--grpc-server-key``
    (the server's identity), ``--grpc-server-cacert`` (CA that signs client certificates) and
    ``--grpc-server-with-client-auth`` (mutual TLS: a client without a certificate from that CA
    is refused during the handshake)."""

    cert: bytes
    key: bytes
    ca: bytes | None = None
    client_auth: bool = False

    @classmethod
    def from_files(cls, cert: str | None, key: str | None, ca: str | None = None,
                   client_auth: bool = False) -> TlsConfig:
        """Read the PEM files; a missing, unreadable or non-PEM file is a one-line UserError."""
        if not cert or not key:
            raise UserError("--grpc-server-ssl needs --grpc-server-cert FILE and --grpc-server-key FILE")
        if client_auth and not ca:
            raise UserError("--grpc-server-with-client-auth needs --grpc-server-cacert FILE (the CA that "
                            "signs client certificates)")
        return cls(_read_pem(cert, "--grpc-server-cert"), _read_pem(key, "--grpc-server-key"),
                   _read_pem(ca, "--grpc-server-cacert") if ca else None, client_auth)

    def credentials(self) -> grpc.ServerCredentials:
        return grpc.ssl_server_credentials([(self.key, self.cert)], root_certificates=self.ca,
                                           require_client_auth=self.client_auth)


def _read_pem(path: str, flag: str) -> bytes:
    try:
        with open(path, "rb") as f:
            data = f.read(1 << 20)
    except OSError as err:
        raise UserError(f"{flag} {path}: {err.strerror}") from None
    if b"-----BEGIN " not in data:
        raise UserError(f"{flag} {path}: not a PEM file (no '-----BEGIN' line)")
    return data


class P4RuntimeServer:
    """A gRPC server running the P4Runtime service for one device (device contract)."""

    def __init__(self, device: Any, address: str = "127.0.0.1:9559", tls: TlsConfig | None = None) -> None:
        self.device = device
        self.address = address
        self.tls = tls
        self.service: P4RuntimeService | None = None
        self._server: grpc.Server | None = None

    def start(self) -> int:
        """Listen and serve; returns the bound port ("127.0.0.1:0" picks an ephemeral one)."""
        self.service = P4RuntimeService(self.device)
        server = grpc.server(
            futures.ThreadPoolExecutor(max_workers=WORKERS, thread_name_prefix="p4rt"),
            options=[("grpc.max_receive_message_length", MAX_MESSAGE),
                     ("grpc.max_send_message_length", MAX_MESSAGE),
                     ("grpc.so_reuseport", 0)])
        server.add_generic_rpc_handlers((_handlers(self.service),))
        try:
            if self.tls is not None:
                port = server.add_secure_port(self.address, self.tls.credentials())
            else:
                port = server.add_insecure_port(self.address)
        except RuntimeError as err:
            port = 0
            reason = str(err)
        else:
            reason = "address in use or invalid"
        if not port:
            self.service.close()
            raise UserError(f"--grpc-server-addr {self.address}: cannot listen ({reason})")
        server.start()
        self._server = server
        log.info("P4Runtime server listening on %s (port %d, %s)", self.address, port,
                 "plaintext" if self.tls is None else
                 "mutual TLS" if self.tls.client_auth else "TLS")
        return port

    def stop(self, grace: float = 0.5) -> None:
        if self.service is not None:
            self.service.close()
        if self._server is not None:
            if not self._server.stop(grace).wait(grace + STOP_TIMEOUT):
                log.warning("P4Runtime server did not stop within %.1f s; leaving it", grace + STOP_TIMEOUT)
            self._server = None
