"""Values the control plane sets and a TNA program only reads: ``RegisterParam`` and the
port-metadata table (``$PORT_METADATA``), plus the constructor for every TNA-only runtime object.

Why it exists: a ``RegisterParam<T>(initial)`` is a constant of the stateful ALUs that the
control plane may rewrite while packets flow (Intel's tna_register PTF test does); the port
metadata is what Tofino's per-port table (keyed by ``ig_intr_md.ingress_port``) puts in front of
each packet for ``port_metadata_unpack``. Both live on the pipeline; the generated code reads
``RegisterParam.value`` per packet and ``TnaPath`` reads the port-metadata dict, the same dict
``PortMetadataTable`` writes.
"""

from __future__ import annotations

from typing import Any

from p4sim.errors import UserError

PORTS = 1 << 9              # PortId_t is 9 bits


class RegisterParam:
    """``RegisterParam<T>(initial_value)``: ``value`` is what ``read()`` gives."""

    __slots__ = ("name", "bitwidth", "initial", "value")

    def __init__(self, name: str, bitwidth: int, initial: int) -> None:
        self.name, self.bitwidth = name, bitwidth
        self.initial = self.value = initial & ((1 << bitwidth) - 1)

    def write(self, value: int) -> None:
        if not 0 <= value < (1 << self.bitwidth):
            raise UserError(f"RegisterParam '{self.name}': value {value} does not fit in {self.bitwidth} bits")
        self.value = value

    def reset(self) -> None:
        self.value = self.initial


class PortMetadataTable:
    """Tofino's port-metadata table: ingress port -> the ``data_width`` bits the ingress parser
    finds first in the ``md_bits`` of port metadata (the rest zero). ``values`` (port -> the
    ``md_bits``-bit int) is the one store: the dict ``TnaPath`` reads per packet and writes in
    ``set_port_metadata``, and what P4Runtime reads list (an entry is a port in ``values``; its
    data the ``data_width`` bits the program's header gets); a port without an entry gets zeros."""

    def __init__(self, name: str, data_width: int, md_bits: int) -> None:
        if data_width > md_bits:
            raise UserError(f"port metadata '{name}': {data_width} bits, the architecture has {md_bits}")
        self.name, self.data_width, self.md_bits = name, data_width, md_bits
        self._shift = md_bits - data_width
        self.values: dict[int, int] = {}

    def _check(self, port: int, value: int | None = None) -> None:
        if not 0 <= port < PORTS:
            raise UserError(f"port metadata '{self.name}': ingress port {port} outside 0..{PORTS - 1}")
        if value is not None and not 0 <= value < (1 << self.data_width):
            raise UserError(f"port metadata '{self.name}': value {value:#x} does not fit in {self.data_width} bits")

    def set(self, port: int, value: int) -> None:
        self._check(port, value)
        self.values[port] = value << self._shift

    def delete(self, port: int) -> None:
        self._check(port)
        self.values.pop(port, None)

    def get(self, port: int) -> int | None:
        """The port's entry (None: no entry, the parser sees zeros), however it was set."""
        bits = self.values.get(port)
        return None if bits is None else bits >> self._shift

    def ports(self) -> list[int]:
        return sorted(self.values)

    def reset(self) -> None:
        self.values.clear()


def make_tna_extern(kind: str, name: str, params: Any) -> Any:
    """The runtime object of one ``tna_objects`` entry of these kinds (see ``TNA_EXTERN_KINDS``)."""
    from p4sim.tna import lpf_wred

    if kind == "lpf":
        return lpf_wred.Lpf(name, params["size"], params["width"])
    if kind == "direct_lpf":
        return lpf_wred.DirectLpf(name, params["width"])
    if kind == "wred":
        return lpf_wred.Wred(name, params["size"], params["drop_value"], params["no_drop_value"])
    if kind == "direct_wred":
        return lpf_wred.DirectWred(name, params["drop_value"], params["no_drop_value"])
    if kind == "register_param":
        return RegisterParam(name, params["width"], params["initial"])
    if kind == "port_metadata":
        return PortMetadataTable(name, params["width"], params["md_bits"])
    raise ValueError(f"not a TNA extern kind: {kind}")


TNA_EXTERN_KINDS = frozenset({"lpf", "direct_lpf", "wred", "direct_wred", "register_param", "port_metadata"})

__all__ = ["PORTS", "PortMetadataTable", "RegisterParam", "TNA_EXTERN_KINDS", "make_tna_extern"]
