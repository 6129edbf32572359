"""DLCP controller: programs DLCP switches over P4Runtime from one network YAML file.

Layers, each using only the ones before it: ``errors``; ``encoding`` (human values -> P4Runtime
bytes); ``p4info_index`` (names -> ids, entries built by name); ``targets`` (device config packing
per target); ``p4rt_client`` (one gRPC client per switch); ``netconfig`` (the network YAML);
``dlcp_tables`` (the DLCP data-plane API as entry builders); ``desired`` (network -> entries);
``reconcile`` (read, diff, write, roll back); ``controller`` (many switches, restart restore,
takeover); ``runtime_cli`` (queue settings through the target's CLI); ``stats`` (counter
snapshots); ``cli``, ``cli_tables``, ``cli_common``, ``output`` (``dlcpctl``).
"""
