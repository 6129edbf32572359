"""The tagging policy: which layer class, magnitude class and flags each DLCP packet gets.

The switch can only be as smart as these tags. Defaults follow the issue: front layers get the
higher layer class (they are needed first by the next forward pass), magnitude classes are the
quantiles of the per-packet mean |g| within the tensor (15 = largest), and the top ``critical_share``
of packets by magnitude carry the CRITICAL flag (never selectively dropped, always retransmitted).
A policy can be loaded from a JSON or YAML file (``dlcp-agent --policy``).
"""

from __future__ import annotations

import json
import math
from dataclasses import dataclass, field, fields
from pathlib import Path

import numpy as np

from host_agent import protocol as P
from host_agent.errors import UserError

LAYER_ORDERS = ("front_first", "back_first", "uniform")


@dataclass(frozen=True)
class TagPolicy:
    """Configurable tagging policy (see docs/transport.md, "Tagging")."""

    layer_order: str = "front_first"      # front_first | back_first | uniform
    uniform_layer_class: int = 4           # class used when layer_order == "uniform"
    num_mag_classes: int = P.NUM_MAG_CLASSES  # quantile bins used, mapped onto 0..15
    critical_share: float = 0.05           # top share of packets by mean |g| flagged CRITICAL
    pull_critical: bool = False            # parameter/pull direction packets all CRITICAL
    ecn_capable: bool = True               # set ECN_CAPABLE (and ECT(0) on the socket)
    loss_bound: float = 0.10               # p: share of non-critical packets allowed missing
    layer_classes: dict[int, int] = field(default_factory=dict)  # explicit tensor_id -> class
    tagged: bool = True                    # False = baseline: class 0, mag 0, every packet CRITICAL
    # Droppability from the loss budget: only the floor(p * n_nc) smallest non-critical packets of a
    # tensor (what the receiver may do without) get classes below protected_mag_class, which the
    # switch policy may drop; every other packet is tagged protected_mag_class..15 (ECN only), so a
    # selective drop never forces a retransmission. False: classes are plain magnitude quantiles.
    drop_within_bound: bool = True
    protected_mag_class: int = 12          # first class the switch never drops (default policy: 12)

    def __post_init__(self) -> None:
        if self.layer_order not in LAYER_ORDERS:
            raise UserError(f"policy: layer_order {self.layer_order!r} not one of {', '.join(LAYER_ORDERS)}")
        if not 0 <= self.uniform_layer_class <= P.LAYER_CLASS_MAX:
            raise UserError(f"policy: uniform_layer_class {self.uniform_layer_class} outside 0..{P.LAYER_CLASS_MAX}")
        if not 1 <= self.num_mag_classes <= P.NUM_MAG_CLASSES:
            raise UserError(f"policy: num_mag_classes {self.num_mag_classes} outside 1..{P.NUM_MAG_CLASSES}")
        if not 0.0 <= self.critical_share <= 1.0:
            raise UserError(f"policy: critical_share {self.critical_share} outside 0..1")
        if not 0.0 <= self.loss_bound <= 1.0:
            raise UserError(f"policy: loss_bound {self.loss_bound} outside 0..1")
        if not 1 <= self.protected_mag_class <= P.MAG_CLASS_MAX:
            raise UserError(f"policy: protected_mag_class {self.protected_mag_class} outside 1..{P.MAG_CLASS_MAX}")
        for tid, cls in self.layer_classes.items():
            if not 0 <= int(cls) <= P.LAYER_CLASS_MAX:
                raise UserError(f"policy: layer_classes[{tid}] = {cls} outside 0..{P.LAYER_CLASS_MAX}")

    # -- layer class ---------------------------------------------------------------------------
    def layer_class(self, position: int, num_layers: int, tensor_id: int | None = None) -> int:
        """Class of the layer at ``position`` (0 = first/front layer) among ``num_layers``.

        front_first: the layers are cut into 8 equal groups in model order; group 0 (front) gets 7,
        the last group 0. back_first reverses that; uniform gives every layer one class.
        """
        if tensor_id is not None and tensor_id in self.layer_classes:
            return int(self.layer_classes[tensor_id])
        if self.layer_order == "uniform":
            return self.uniform_layer_class
        if num_layers <= 0 or not 0 <= position < num_layers:
            raise ValueError(f"layer position {position} outside 0..{num_layers - 1}")
        group = (position * P.NUM_LAYER_CLASSES) // num_layers
        return P.LAYER_CLASS_MAX - group if self.layer_order == "front_first" else group

    # -- magnitude classes and critical flag ---------------------------------------------------
    def magnitude_classes(self, packet_magnitude: np.ndarray, droppable: np.ndarray | None = None) -> np.ndarray:
        """Per-packet magnitude class (uint8, 0..15) from the per-packet mean |g|.

        Without ``droppable`` (or with ``drop_within_bound`` off): the packets are ranked by
        magnitude within the tensor; rank r of n falls into quantile bin floor(r * k / n) of
        k = num_mag_classes bins, mapped onto 0..15 so the top bin is always 15. With a
        ``droppable`` mask (``droppable_mask``): droppable packets are ranked among themselves onto
        0..protected_mag_class-1, all others onto protected_mag_class..15, so the class still
        grows with magnitude but only what the loss bound can absorb is in a droppable class.
        """
        n = packet_magnitude.shape[0]
        if droppable is None or not self.drop_within_bound:
            return _rank_classes(packet_magnitude, self.num_mag_classes, 0, P.MAG_CLASS_MAX)
        out = np.empty(n, np.uint8)
        top = self.protected_mag_class
        out[droppable] = _rank_classes(packet_magnitude[droppable], self.num_mag_classes, 0, top - 1)
        out[~droppable] = _rank_classes(packet_magnitude[~droppable], self.num_mag_classes, top,
                                        P.MAG_CLASS_MAX)
        return out

    def droppable_count(self, n_noncritical: int) -> int:
        """Non-critical packets a receiver may do without: n_nc - ceil((1 - p) * n_nc).

        The same arithmetic as the receiver's completion rule (assembly.TensorAssembly), so a
        tensor that loses exactly its droppable packets still completes without a retransmission.
        """
        return n_noncritical - math.ceil((1.0 - self.loss_bound) * n_noncritical - 1e-9)

    def droppable_mask(self, packet_magnitude: np.ndarray, critical: np.ndarray) -> np.ndarray:
        """The ``droppable_count`` smallest non-critical packets (ties: earlier index first).

        The tensor's last packet (LAST) is never droppable: its arrival tells the receiver that
        the first transmission is through, which is what its PROBE hold-off waits for.
        """
        n = packet_magnitude.shape[0]
        mask = np.zeros(n, bool)
        candidates = ~critical
        k = self.droppable_count(int(candidates.sum()))
        if n:
            candidates[-1] = False
        noncrit = np.flatnonzero(candidates)
        k = min(k, int(noncrit.size))
        if k:
            order = np.argsort(packet_magnitude[noncrit], kind="stable")
            mask[noncrit[order[:k]]] = True
        return mask

    def critical_count(self, n_packets: int) -> int:
        """How many packets of a tensor are CRITICAL: ceil(critical_share * n)."""
        return min(n_packets, math.ceil(self.critical_share * n_packets - 1e-9))

    def critical_mask(self, packet_magnitude: np.ndarray) -> np.ndarray:
        """Boolean mask of the top ``critical_share`` packets by magnitude (ties: later index)."""
        n = packet_magnitude.shape[0]
        k = self.critical_count(n)
        mask = np.zeros(n, bool)
        if k:
            mask[np.argsort(packet_magnitude, kind="stable")[n - k:]] = True
        return mask

    def base_flags(self, pull: bool) -> int:
        flags = P.FLAG_ECN_CAPABLE if self.ecn_capable else 0
        if pull:
            flags |= P.FLAG_PULL
            if self.pull_critical:
                flags |= P.FLAG_CRITICAL
        return flags


def _rank_classes(values: np.ndarray, k: int, lo: int, hi: int) -> np.ndarray:
    """Rank ``values`` into min(k, hi - lo + 1) quantile bins mapped onto lo..hi (top bin = hi)."""
    n = values.shape[0]
    if n == 0:
        return np.zeros(0, np.uint8)
    bins_n = min(k, hi - lo + 1)
    if bins_n == 1:
        return np.full(n, hi, np.uint8)
    ranks = np.empty(n, np.int64)
    ranks[np.argsort(values, kind="stable")] = np.arange(n)
    bins = (ranks * bins_n) // n
    return (lo + (bins * (hi - lo)) // (bins_n - 1)).astype(np.uint8)


BASELINE_POLICY = TagPolicy(layer_order="uniform", uniform_layer_class=0, num_mag_classes=1,
                            critical_share=1.0, pull_critical=True, loss_bound=0.0, tagged=False)
"""Baseline mode: the same packets, one class (layer 0, magnitude 0), all CRITICAL (nothing
selectively droppable), loss bound 0 (full reliability)."""


def load_policy(path: str | Path) -> TagPolicy:
    """Read a policy file (JSON, or YAML by extension); one-line UserError naming file and key."""
    p = Path(path)
    try:
        text = p.read_text()
    except OSError as exc:
        raise UserError(f"{p}: cannot read policy file: {exc.strerror}") from None
    try:
        if p.suffix in (".yaml", ".yml"):
            import yaml
            data = yaml.safe_load(text)
        else:
            data = json.loads(text)
    except Exception as exc:  # noqa: BLE001 - any parse error becomes one line
        line = getattr(exc, "lineno", None) or getattr(getattr(exc, "problem_mark", None), "line", None)
        where = f"{p}:{line}" if line is not None else str(p)
        raise UserError(f"{where}: policy file does not parse: {str(exc).splitlines()[0]}") from None
    if not isinstance(data, dict):
        raise UserError(f"{p}: policy file must hold a mapping of policy fields")
    known = {f.name: f for f in fields(TagPolicy)}
    for key in data:
        if key not in known:
            raise UserError(f"{p}: unknown policy field {key!r} (known: {', '.join(sorted(known))})")
    if "layer_classes" in data:
        try:
            data["layer_classes"] = {int(k): int(v) for k, v in dict(data["layer_classes"]).items()}
        except (TypeError, ValueError):
            raise UserError(f"{p}: layer_classes must map tensor ids to classes") from None
    try:
        return TagPolicy(**data)
    except UserError as exc:
        raise UserError(f"{p}: {exc}") from None
    except TypeError as exc:
        raise UserError(f"{p}: {exc}") from None
