"""p4sim runtime: the state a compiled program acts on (Contracts 1-2 of docs/architecture.md).

Tables and their match engine (``tables``), BMv2's hash algorithms (``hashes``), checksum
helpers (``checksums``), registers/counters/meters (``externs``), action profiles and selectors
(``action_profiles``) and the packet replication engine (``pre``). Generated pipeline code and
the control plane (STF runner, P4Runtime server) both drive these objects.
"""
