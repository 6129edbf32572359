"""DLCP at scale on ns-3: topologies, the DLCP switch model in C++, scenarios and reports.

Why this exists: Mininet on one machine runs a handful of hosts; DLCP's published gains come
from large fabrics. This part rebuilds that experiment in ns-3 (the `ns3` wheel, C++ compiled at
run time through cppyy) driven by the same policy YAML the controller installs
(docs/simulation.md). The CLI is `dlcp-sim` (simulation/cli.py).
"""
