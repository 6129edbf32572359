"""The ``p4.v1.P4Runtime`` gRPC service over one ``SwitchDevice`` (device contract, Contract 6).

RPCs: Capabilities; Set/GetForwardingPipelineConfig (VERIFY, VERIFY_AND_COMMIT, VERIFY_AND_SAVE +
COMMIT; the device config is ``CompiledProgram.device_config()`` bytes and its P4Info must agree
with the one sent);
Write (primary only; CONTINUE_ON_ERROR, or all-or-nothing for ROLLBACK_ON_ERROR/DATAPLANE_ATOMIC;
per-update ``p4.v1.Error`` details in an UNKNOWN status);
Read (wildcards, streamed); StreamChannel (arbitration, packet-out/in, digests and their acks).
A refused request gets one status with the spec's code; a bug answers INTERNAL, never a dead server.
"""

from __future__ import annotations

import functools
import gc
import logging
import queue
import threading
from concurrent import futures
from typing import Any, NamedTuple

import grpc
from google.protobuf.message import DecodeError
from p4.v1 import p4runtime_pb2, p4runtime_pb2_grpc

from p4sim.errors import UserError
from p4sim.p4runtime_server.arbitration import Arbitrator, Controller, election_id_of
from p4sim.p4runtime_server.atomic import apply_atomic_batch
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

__all__ = ["P4RuntimeServer", "P4RuntimeService", "API_VERSION"]

log = logging.getLogger("p4sim.p4runtime")

API_VERSION = "1.3.0"
GC_FREEZE_BATCH = 100        # Write batches at least this big freeze the heap afterwards
MAX_STREAMS = 16              # open StreamChannels; each holds a worker thread for its lifetime
WORKERS = 64                  # so unary RPCs always find a worker even with every stream open
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
    """Turn P4RuntimeError into the RPC's status; log and answer INTERNAL for anything else."""
    @functools.wraps(method)
    def wrapper(self, request, context):
        try:
            return method(self, request, context)
        except _BatchFailed as failed:
            context.abort_with_status(_GrpcStatus(
                grpc.StatusCode.UNKNOWN, failed.status.message,
                (("grpc-status-details-bin", failed.status.SerializeToString()),)))
        except P4RuntimeError as err:
            log.info("%s refused: %s", method.__name__, err)
            context.abort(err.code, err.message)
        except UserError as err:
            context.abort(grpc.StatusCode.INVALID_ARGUMENT, str(err))
        except Exception as err:   # noqa: BLE001 - a bug must not take the server down
            log.exception("%s failed", method.__name__)
            context.abort(grpc.StatusCode.INTERNAL, f"internal error: {err}")
    return wrapper


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
        self.arbitrator = Arbitrator(device.device_id)
        self._session: PipelineSession | None = None
        self._saved: PipelineSession | None = None      # VERIFY_AND_SAVE, waiting for COMMIT
        self.packet_in_dropped = 0
        self._streams: set[queue.Queue] = set()
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
        with self._streams_lock:
            streams = list(self._streams)
        for q in streams:
            q.put(_END)

    # ---- Capabilities and pipeline config ---------------------------------------------------

    @_rpc
    def Capabilities(self, request, context):   # noqa: N802 - gRPC method name
        return p4runtime_pb2.CapabilitiesResponse(p4runtime_api_version=API_VERSION)

    def _check_device(self, device_id: int) -> None:
        if device_id != self.device.device_id:
            raise P4RuntimeError(grpc.StatusCode.NOT_FOUND,
                                 f"device id {device_id} is not this switch ({self.device.device_id})")

    @_rpc
    def SetForwardingPipelineConfig(self, request, context):   # noqa: N802
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
        with self._config_lock, self.device.lock:
            self.device.load_program(session.program)
            self.session = session
            self._saved = None
            self.digests.reset()
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
        try:
            program = CompiledProgram.from_device_config(bytes(config.p4_device_config))
        except UserError as err:
            raise invalid(f"SetForwardingPipelineConfig: bad p4_device_config: {err}") from err
        check_compatible(config.p4info, program.p4info)
        cookie = config.cookie.cookie if config.HasField("cookie") else None
        return PipelineSession(config.p4info, bytes(config.p4_device_config), cookie, program)

    @_rpc
    def GetForwardingPipelineConfig(self, request, context):   # noqa: N802
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
        with self.device.lock:
            session, pipeline = self.session, self.device.pipeline
            if session is None or pipeline is None:
                raise P4RuntimeError(grpc.StatusCode.FAILED_PRECONDITION, "no forwarding pipeline config set")
            if atomic:
                results = apply_atomic_batch(session, pipeline, updates)
            else:
                results = apply_batch(session, pipeline, updates)
        if len(request.updates) >= GC_FREEZE_BATCH:
            # Installed entries live until deleted and hold no cycles: keep them out of the
            # collector's full scans, which otherwise grow with the table and dominate large reads.
            gc.freeze()
        if results:
            raise _BatchFailed(batch_status(results, _details_limit(context)))
        return p4runtime_pb2.WriteResponse()

    def Read(self, request, context):   # noqa: N802
        try:
            self._check_device(request.device_id)
            with self.device.lock:
                session, pipeline = self.session, self.device.pipeline
            if session is None or pipeline is None:
                raise P4RuntimeError(grpc.StatusCode.FAILED_PRECONDITION, "no forwarding pipeline config set")
            responses = read_entities(session, pipeline, request.entities, self.device.lock)
        except P4RuntimeError as err:
            context.abort(err.code, err.message)
        except Exception as err:   # noqa: BLE001
            log.exception("Read failed")
            context.abort(grpc.StatusCode.INTERNAL, f"internal error: {err}")
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

    def _handle_stream_message(self, req, holder: list, send) -> None:
        kind = req.WhichOneof("update")
        if kind == "arbitration":
            holder[0] = self.arbitrator.arbitrate(holder[0], req.arbitration, send)
            return
        controller: Controller | None = holder[0]
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

    def StreamChannel(self, request_iterator, context):   # noqa: N802
        out: queue.Queue = queue.Queue(maxsize=STREAM_QUEUE)
        holder: list = [None]

        def send(msg) -> None:
            try:
                out.put_nowait(msg)
            except queue.Full:
                self.packet_in_dropped += 1

        def reader() -> None:
            try:
                for req in request_iterator:
                    try:
                        self._handle_stream_message(req, holder, send)
                    except P4RuntimeError as err:
                        out.put(_Abort(err))
                        return
                    except Exception:   # noqa: BLE001 - never kill the stream on a server bug
                        log.exception("stream message failed")
                        send(self._stream_error(grpc.StatusCode.INTERNAL, "internal error"))
            except Exception:   # noqa: BLE001 - client went away mid-read
                pass
            finally:
                out.put(_END)

        with self._streams_lock:
            if len(self._streams) >= MAX_STREAMS:
                context.abort(grpc.StatusCode.RESOURCE_EXHAUSTED,
                              f"too many open StreamChannels ({MAX_STREAMS}); close one first")
            self._streams.add(out)
        context.add_callback(lambda: out.put(_END))
        thread = threading.Thread(target=reader, name="p4rt-stream", daemon=True)
        thread.start()
        try:
            while True:
                item = out.get()
                if item is _END:
                    break
                if isinstance(item, _Abort):
                    context.abort(item.error.code, item.error.message)
                yield item
        finally:
            with self._streams_lock:
                self._streams.discard(out)
            if holder[0] is not None:
                self.arbitrator.remove(holder[0])


def _handlers(service: P4RuntimeService) -> grpc.GenericRpcHandler:
    """The P4Runtime methods; Write takes raw bytes (see ``wire``), the rest the usual messages."""
    pb = p4runtime_pb2
    unary, stream = grpc.unary_unary_rpc_method_handler, grpc.unary_stream_rpc_method_handler
    return grpc.method_handlers_generic_handler("p4.v1.P4Runtime", {
        "Write": unary(service.Write, request_deserializer=None,
                       response_serializer=pb.WriteResponse.SerializeToString),
        "Read": stream(service.Read, request_deserializer=pb.ReadRequest.FromString,
                       response_serializer=None),   # already serialized (see wire_encode)
        "SetForwardingPipelineConfig": unary(
            service.SetForwardingPipelineConfig,
            request_deserializer=pb.SetForwardingPipelineConfigRequest.FromString,
            response_serializer=pb.SetForwardingPipelineConfigResponse.SerializeToString),
        "GetForwardingPipelineConfig": unary(
            service.GetForwardingPipelineConfig,
            request_deserializer=pb.GetForwardingPipelineConfigRequest.FromString,
            response_serializer=pb.GetForwardingPipelineConfigResponse.SerializeToString),
        "StreamChannel": grpc.stream_stream_rpc_method_handler(
            service.StreamChannel, request_deserializer=pb.StreamMessageRequest.FromString,
            response_serializer=pb.StreamMessageResponse.SerializeToString),
        "Capabilities": unary(service.Capabilities, request_deserializer=pb.CapabilitiesRequest.FromString,
                              response_serializer=pb.CapabilitiesResponse.SerializeToString),
    })


class P4RuntimeServer:
    """A gRPC server running the P4Runtime service for one device (device contract)."""

    def __init__(self, device: Any, address: str = "0.0.0.0:9559") -> None:
        self.device = device
        self.address = address
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
        log.info("P4Runtime server listening on %s (port %d)", self.address, port)
        return port

    def stop(self, grace: float = 0.5) -> None:
        if self.service is not None:
            self.service.close()
        if self._server is not None:
            self._server.stop(grace).wait()
            self._server = None
