"""The P4Runtime gRPC server of p4sim: ``P4RuntimeServer(device, address).start() -> port``.

Surface (P4Runtime 1.3 semantics over the p4runtime 1.4.1 protos; Capabilities says "1.3.0"):

* SetForwardingPipelineConfig: VERIFY, VERIFY_AND_COMMIT, VERIFY_AND_SAVE + COMMIT (the device
  config is ``CompiledProgram.device_config()``; the P4Info must name every object as the compiled
  program does). RECONCILE_AND_COMMIT: UNIMPLEMENTED. GetForwardingPipelineConfig: all
  response types.
* StreamChannel: arbitration per (device, role) by election id (an unset id is a backup that
  never becomes primary; 0 and duplicates are INVALID_ARGUMENT); packet-out/packet-in through the
  ``@controller_header`` headers and the CPU port (primary only); digests with acks. At most 16
  open streams (RESOURCE_EXHAUSTED beyond).
* Write (primary only): table entries of every match kind, default entries, const tables
  (PERMISSION_DENIED), controller_metadata/metadata kept; action profile members and groups
  (weights honoured), one-shot selector programming; counters, direct counters, meters, direct
  meters, registers (BMv2 cannot write registers, p4sim can); multicast groups and clone sessions;
  value sets; digest configs. CONTINUE_ON_ERROR, and all-or-nothing ROLLBACK_ON_ERROR and
  DATAPLANE_ATOMIC (one guarantee here: batches run under the device lock). Idle timeout:
  UNIMPLEMENTED. Byte strings: canonical, or padded to exactly the field width (legacy clients).
* Read: every entity above, with the spec's wildcards; entries come back in canonical form.
* Failed batches: gRPC UNKNOWN with one p4.v1.Error per update, kept under gRPC's default 8 KiB
  trailer limit (about 150 updates; beyond that the message says so, and a client that raised
  ``grpc.max_metadata_size`` can send ``p4sim-status-details-limit: <bytes>`` for all details).

Modules: ``server`` (the gRPC service), ``arbitration``, ``entities`` (Write/Read dispatch) over
``table_entries``, ``profile_entries``, ``extern_entries``, ``pre_entries``; ``atomic`` (undo for
atomic batches); ``codec`` (bytes <-> ints, canonical checks), ``wire``/``wire_encode`` (fast paths
past the pure-Python protobuf), ``p4info_index``, ``packet_io``, ``digests``, ``session``
(per-pipeline state) and ``runtime_bridge`` (the only place touching runtime objects).
"""

from p4sim.p4runtime_server.server import API_VERSION, P4RuntimeServer, P4RuntimeService

__all__ = ["P4RuntimeServer", "P4RuntimeService", "API_VERSION"]
