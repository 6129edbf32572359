"""What the server remembers about the pipeline it loaded, beside the runtime state itself.

A ``ForwardingPipelineConfig`` arrives as P4Info + device config + cookie; reads of it must give
them back. Some P4Runtime facts have no home in the runtime: the meter configs last written (for
read-back), one-shot selector groups the server created on a table entry's behalf, digest configs
and clone-session/multicast shadows in wire form. They all live here and die with the pipeline.
"""

from __future__ import annotations

import itertools
from dataclasses import dataclass, field
from typing import Any

from p4.config.v1 import p4info_pb2
from p4.v1 import p4runtime_pb2

from p4sim.p4runtime_server.p4info_index import P4InfoIndex

__all__ = ["PipelineSession", "ONE_SHOT_ID_BASE"]

# Members and groups the server creates for one-shot selector programming get ids from here up;
# clients choose ids below it (the spec leaves id allocation to the client, ours stay out of the way).
ONE_SHOT_ID_BASE = 0xF0000000


@dataclass
class PipelineSession:
    """One loaded pipeline as the P4Runtime server sees it."""

    p4info: p4info_pb2.P4Info
    device_config: bytes
    cookie: int | None
    program: Any
    index: P4InfoIndex = field(init=False)
    meter_configs: dict[tuple[str, int], p4runtime_pb2.MeterConfig] = field(default_factory=dict)
    # (table name, entry identity) -> (group id, member ids, the action set as written)
    one_shots: dict[tuple, tuple[int, list[int], p4runtime_pb2.ActionProfileActionSet]] = \
        field(default_factory=dict)
    # (table name, match, priority) -> (controller_metadata, metadata) of entries that carry them
    entry_meta: dict[tuple, tuple[int, bytes]] = field(default_factory=dict)
    digest_configs: dict[int, p4runtime_pb2.DigestEntry.Config] = field(default_factory=dict)
    multicast: dict[int, p4runtime_pb2.MulticastGroupEntry] = field(default_factory=dict)
    clones: dict[int, p4runtime_pb2.CloneSessionEntry] = field(default_factory=dict)
    value_sets: dict[int, list[p4runtime_pb2.ValueSetMember]] = field(default_factory=dict)
    group_weights: dict[tuple[str, int], dict[int, tuple[int, int]]] = field(default_factory=dict)
    _ids: itertools.count = field(default_factory=lambda: itertools.count(ONE_SHOT_ID_BASE))

    def __post_init__(self) -> None:
        self.index = P4InfoIndex(self.p4info)

    def next_internal_id(self) -> int:
        return next(self._ids)
