"""Dispatch of Write updates and Read entities to the module that owns each entity kind.

``apply_batch`` runs a whole Write batch under the device lock (atomic with respect to packets)
with CONTINUE_ON_ERROR semantics: every update is tried, each one either fully applied or not at
all, and the per-update outcome is returned for the status details. ``read_entities`` returns
serialized ReadResponse messages of bounded size.
"""

from __future__ import annotations

import contextlib
import logging
from collections.abc import Callable

import grpc
from p4.v1 import p4runtime_pb2

from p4sim.p4runtime_server import (
    extern_entries,
    pre_entries,
    profile_entries,
    table_entries,
    tna_extern_entries,
)
from p4sim.p4runtime_server.errors import P4RuntimeError, invalid
from p4sim.p4runtime_server.session import PipelineSession
from p4sim.p4runtime_server.wire_encode import ReadChunks

__all__ = ["apply_update", "apply_batch", "read_entities"]

log = logging.getLogger("p4sim.p4runtime")

_WRITERS: dict[str, Callable] = {
    "table_entry": table_entries.write_table_entry,
    "direct_counter_entry": table_entries.write_direct_counter,
    "direct_meter_entry": table_entries.write_direct_meter,
    "action_profile_member": profile_entries.write_member,
    "action_profile_group": profile_entries.write_group,
    "counter_entry": extern_entries.write_counter,
    "meter_entry": extern_entries.write_meter,
    "register_entry": extern_entries.write_register,
    "packet_replication_engine_entry": pre_entries.write_pre,
    "value_set_entry": pre_entries.write_value_set,
    "digest_entry": pre_entries.write_digest,
    "extern_entry": tna_extern_entries.write_extern_entry,
}

_READERS: dict[str, Callable] = {
    "table_entry": table_entries.read_table_entries,
    "direct_counter_entry": table_entries.read_direct_counters,
    "direct_meter_entry": table_entries.read_direct_meters,
    "action_profile_member": profile_entries.read_members,
    "action_profile_group": profile_entries.read_groups,
    "counter_entry": extern_entries.read_counters,
    "meter_entry": extern_entries.read_meters,
    "register_entry": extern_entries.read_registers,
    "packet_replication_engine_entry": pre_entries.read_pre,
    "value_set_entry": pre_entries.read_value_sets,
    "digest_entry": pre_entries.read_digests,
    "extern_entry": tna_extern_entries.read_extern_entries,
}


def apply_update(session: PipelineSession, pipeline, update) -> None:
    """Apply one update (a p4.v1.Update or a pre-decoded ``wire.TableUpdate``); raises
    P4RuntimeError (nothing applied) on refusal."""
    if update.type == p4runtime_pb2.Update.UNSPECIFIED:
        raise invalid("update type is UNSPECIFIED")
    spec = getattr(update, "spec", None)
    if spec is not None:
        table_entries.write_table_entry(session, pipeline, update.type, spec)
        return
    kind = update.entity.WhichOneof("entity")
    if kind is None:
        raise invalid("update has no entity")
    writer = _WRITERS.get(kind)
    if writer is None:
        raise P4RuntimeError(grpc.StatusCode.UNIMPLEMENTED, f"writing {kind} is not supported")
    writer(session, pipeline, update.type, getattr(update.entity, kind))


def apply_batch(session: PipelineSession, pipeline, updates) -> list[P4RuntimeError | None]:
    """CONTINUE_ON_ERROR: outcome of every update (None = applied). Caller holds the device lock."""
    results: list[P4RuntimeError | None] = []
    failed = False
    for update in updates:
        try:
            apply_update(session, pipeline, update)
            results.append(None)
        except P4RuntimeError as err:
            results.append(err.with_traceback(None))   # no frame -> results -> err cycle to leak
            failed = True
        except Exception as err:   # a bug must not kill the server; report it as INTERNAL
            log.exception("write: update failed unexpectedly")
            results.append(P4RuntimeError(grpc.StatusCode.INTERNAL, f"internal error: {err}"))
            failed = True
    return results if failed else []


def read_entities(session: PipelineSession, pipeline, entities, lock=None) -> list[bytes]:
    """Serialized ReadResponse messages for every entity requested (wildcards expanded).

    ``lock`` (the device lock) is held only while state is selected and copied, not while big
    table reads are encoded, so a controller reading 100,000 entries does not stall the packet
    path. Raises P4RuntimeError on a malformed request, before any response is produced.
    """
    guard = lock if lock is not None else contextlib.nullcontext()
    chunks = ReadChunks()
    for entity in entities:
        kind = entity.WhichOneof("entity")
        if kind is None:
            raise invalid("read request entity is empty")
        reader = _READERS.get(kind)
        if reader is None:
            raise P4RuntimeError(grpc.StatusCode.UNIMPLEMENTED, f"reading {kind} is not supported")
        request = getattr(entity, kind)
        if kind == "table_entry":   # the bulk case: entries are encoded straight to bytes
            with guard:
                items = table_entries.select_table_entries(session, pipeline, request)
            table_entries.encode_table_entries(session, items, request, chunks)
            continue
        with guard:
            items = list(reader(session, pipeline, request))
        for item in items:
            chunks.add_entity(p4runtime_pb2.Entity(**{kind: item}).SerializeToString())
    chunks.flush()
    return chunks.responses
