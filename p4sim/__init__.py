"""p4sim: a pure-Python P4_16 software target that runs the same programs p4c compiles for BMv2.

It exists because p4c and BMv2 cannot be installed on our machines. Layers, each unaware of the
ones after it: ``frontend`` (source -> typed IR), ``backend`` (IR -> generated Python, P4Info),
``runtime`` (tables and externs the generated code calls), ``v1model`` (the architecture's packet
path), ``stf`` (p4c's STF test format), ``switch`` (ports, traffic manager), ``p4runtime_server``.
"""

__version__ = "0.1.0"
