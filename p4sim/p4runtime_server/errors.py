"""Errors the P4Runtime server reports to clients, each carrying its gRPC status code.

The P4Runtime spec fixes which canonical code each mistake gets (unknown id -> INVALID_ARGUMENT,
entry exists -> ALREADY_EXISTS, ...). Every layer of the server raises ``P4RuntimeError`` with the
code chosen where the mistake is detected; the service turns it into a gRPC status (or, inside a
Write batch, into one ``p4.v1.Error`` per update). Runtime table errors (Contract 1) are mapped here.
"""

from __future__ import annotations

import grpc
from google.protobuf import any_pb2
from google.rpc import status_pb2
from p4.v1 import p4runtime_pb2

from p4sim.errors import UserError

__all__ = [
    "P4RuntimeError",
    "invalid",
    "not_found",
    "from_runtime_error",
    "grpc_code_number",
    "batch_status",
    "DETAILS_LIMIT_KEY",
    "MAX_DETAILS_BYTES",
]

MAX_MESSAGE = 500   # characters; statuses travel in HTTP/2 headers, which have a size limit
# gRPC clients start refusing trailers (at random) above an 8 KiB soft limit by default; a status
# up to this size was never refused in 100 tries. Clients that raised grpc.max_metadata_size can
# ask for more with the request metadata key DETAILS_LIMIT_KEY.
MAX_DETAILS_BYTES = 6_000
DETAILS_LIMIT_KEY = "p4sim-status-details-limit"

# Runtime (Contract 1-3) exception class names -> the code the spec gives that situation.
_RUNTIME_ERROR_CODES = {
    "EntryExists": grpc.StatusCode.ALREADY_EXISTS,
    "EntryNotFound": grpc.StatusCode.NOT_FOUND,
    "TableFull": grpc.StatusCode.RESOURCE_EXHAUSTED,
    "InvalidEntry": grpc.StatusCode.INVALID_ARGUMENT,
    "ConstDefaultAction": grpc.StatusCode.PERMISSION_DENIED,
}


class P4RuntimeError(UserError):
    """A request the server refuses: one line naming what is wrong, plus the gRPC status code."""

    def __init__(self, code: grpc.StatusCode, message: str) -> None:
        self.code = code
        self.message = message if len(message) <= MAX_MESSAGE else message[:MAX_MESSAGE] + "..."
        super().__init__(message)

    def __str__(self) -> str:
        return f"{self.code.name}: {self.message}"


def invalid(message: str) -> P4RuntimeError:
    """Shorthand for the most common refusal, INVALID_ARGUMENT."""
    return P4RuntimeError(grpc.StatusCode.INVALID_ARGUMENT, message)


def not_found(message: str) -> P4RuntimeError:
    return P4RuntimeError(grpc.StatusCode.NOT_FOUND, message)


def from_runtime_error(err: Exception, what: str) -> P4RuntimeError:
    """Translate a runtime-layer exception (TableError subclasses, UserError) to a status."""
    if isinstance(err, P4RuntimeError):
        return err
    for klass in type(err).__mro__:
        code = _RUNTIME_ERROR_CODES.get(klass.__name__)
        if code is not None:
            return P4RuntimeError(code, f"{what}: {err}")
    return P4RuntimeError(grpc.StatusCode.INVALID_ARGUMENT, f"{what}: {err}")


def grpc_code_number(code: grpc.StatusCode) -> int:
    """The google.rpc.Code number of a grpc.StatusCode (OK=0, CANCELLED=1, ...)."""
    return int(code.value[0])


def batch_status(errors: list[P4RuntimeError | None], limit_bytes: int = MAX_DETAILS_BYTES
                 ) -> status_pb2.Status:
    """google.rpc.Status for a failed Write batch: UNKNOWN, one p4.v1.Error per update (OK ones too).

    The status travels in the ``grpc-status-details-bin`` trailer, which gRPC clients refuse
    above 8 KiB by default (about 150 updates' worth). Messages are shortened until it fits; a
    batch too large for even bare codes gets no details and says so (and where the first failure
    is), unless the client raised the limit (``DETAILS_LIMIT_KEY``).
    """
    failed = [(i, e) for i, e in enumerate(errors) if e is not None]
    first = f"first at index {failed[0][0]}: {failed[0][1]}" if failed else ""
    summary = f"{len(failed)} of {len(errors)} updates failed; {first}"
    for limit in (MAX_MESSAGE, 60, 0):
        status = status_pb2.Status(code=grpc_code_number(grpc.StatusCode.UNKNOWN), message=summary)
        for err in errors:
            p4_error = p4runtime_pb2.Error()
            if err is None:
                p4_error.canonical_code = grpc_code_number(grpc.StatusCode.OK)
            else:
                p4_error.canonical_code = grpc_code_number(err.code)
                p4_error.message = err.message[:limit]
            detail = any_pb2.Any()
            detail.Pack(p4_error)
            status.details.append(detail)
        if status.ByteSize() <= limit_bytes:
            return status
    return status_pb2.Status(code=grpc_code_number(grpc.StatusCode.UNKNOWN),
                             message=f"{summary} (per-update details omitted: {len(errors)} updates "
                                     f"exceed the gRPC trailer size limit; send smaller batches, or "
                                     f"raise grpc.max_metadata_size and send '{DETAILS_LIMIT_KEY}: <bytes>')")
