"""The switch policy for the simulator, parsed by the controller's own code.

Why this exists: the ns-3 switch model must decide exactly what the tables `dlcpctl` installs
decide, so it reads the same policy YAML (controller/data/default_policy.yaml or a user's)
through controller.netconfig's parser and checks (one-line errors with file:line), never a copy
of it. Data flows one way: policy file -> controller.netconfig.Policy -> simulation.
"""

from __future__ import annotations

from pathlib import Path

from controller import netconfig
from controller.netconfig import Policy

DEFAULT_POLICY = netconfig.DEFAULT_POLICY_FILE
# the default policy's priority map with packet thresholds: for fabrics of 1 Gbit/s and more, where
# the default's delay thresholds (tuned for 20 Mbit/s) are deeper than any queue (file header)
FABRIC_POLICY = Path(__file__).resolve().parent / "data" / "fabric_policy.yaml"
FULL_SIZE_BITS = 1500 * 8      # the data plane's "packet" unit (docs/dataplane.md, port_drain)


def load_policy(path: str | Path | None = None) -> Policy:
    """The parsed policy of ``path`` (default: the controller's default policy); raises
    controller.errors.ConfigError with file:line on bad input."""
    return netconfig.load_policy(path)


def policy_for(topo_min_rate_bps: int, path: str | Path | None) -> Policy:
    """``path`` if given; else the controller's default policy on sub-Gbit/s fabrics (the Mininet
    demo's speed) and FABRIC_POLICY on faster ones."""
    if path is not None:
        return load_policy(path)
    return load_policy(None if topo_min_rate_bps < 1_000_000_000 else FABRIC_POLICY)


def thresholds_for_rate(policy: Policy, rate_bps: int) -> dict[tuple[int, int], tuple[int, int]]:
    """(queue, mag) -> (drop, ecn) in packets for a port of ``rate_bps``: packet thresholds as
    written; delay thresholds (µs) turned into the full-size packets the port sends in that time."""
    if policy.threshold_unit != "us":
        return dict(policy.thresholds)
    pkts_per_us = rate_bps / FULL_SIZE_BITS / 1e6
    return {key: (int(drop * pkts_per_us), int(ecn * pkts_per_us))
            for key, (drop, ecn) in policy.thresholds.items()}
