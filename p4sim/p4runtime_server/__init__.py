"""The P4Runtime gRPC server of p4sim: ``P4RuntimeServer(device, address).start() -> port``.

Modules: ``server`` (the gRPC service), ``arbitration`` (primary/backup), ``entities`` (Write/Read
dispatch) over ``table_entries``, ``profile_entries``, ``extern_entries``, ``pre_entries``;
``codec`` (bytes <-> ints, canonical checks), ``p4info_index``, ``packet_io``, ``digests``,
``session`` (per-pipeline state) and ``runtime_bridge`` (the only place touching runtime objects).
"""

from p4sim.p4runtime_server.server import API_VERSION, P4RuntimeServer, P4RuntimeService

__all__ = ["P4RuntimeServer", "P4RuntimeService", "API_VERSION"]
