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
FULL_SIZE_BITS = 1500 * 8      # the data plane's "packet" unit (docs/dataplane.md, port_drain)


def load_policy(path: str | Path | None = None) -> Policy:
    """The parsed policy of ``path`` (default: the controller's default policy); raises
    controller.errors.ConfigError with file:line on bad input."""
    if path is None:
        raw, lines, file = netconfig.default_policy_raw()
    else:
        raw, lines, file = netconfig._load_policy_file(Path(path))
        raw = {**netconfig.BUILTIN_POLICY, **raw}
    return netconfig._policy(raw, file, lines, ())


def thresholds_for_rate(policy: Policy, rate_bps: int) -> dict[tuple[int, int], tuple[int, int]]:
    """(queue, mag) -> (drop, ecn) in packets for a port of ``rate_bps``: packet thresholds as
    written; delay thresholds (µs) turned into the full-size packets the port sends in that time."""
    if policy.threshold_unit != "us":
        return dict(policy.thresholds)
    pkts_per_us = rate_bps / FULL_SIZE_BITS / 1e6
    return {key: (int(drop * pkts_per_us), int(ecn * pkts_per_us))
            for key, (drop, ecn) in policy.thresholds.items()}
