"""Run-time helpers the generated code of TNA programs calls (kept out of the v1model prelude).

Why it exists: TNA's ``Checksum`` extern sums a field list whose widths may be known only per
packet (varbit IPv4 options); packing it into bytes and summing byte pairs is the slow path the
v1model code generator avoids with compile-time shifts, which need every width at compile time.
``csum16_fields`` folds the fields into one int and reduces it modulo 0xFFFF (2**16 == 1), the
same value as ``p4sim.runtime.hashes.csum16`` over the packed bytes.
"""

from __future__ import annotations

from p4sim.backend.rt import csum16_int
from p4sim.runtime.externs import Register


def csum16_fields(fields: list[tuple[int, int]]) -> int:
    """The ones' complement checksum of ``fields`` ((value, bit width) in order), zero-padded to
    16-bit words at the end as the packed bytes would be. Unsigned field values are already within
    their width (the generated code masks every store); a signed field's negative value is taken
    as its two's complement bits; a width of 0 (a field of an invalid header) adds nothing."""
    acc = 0
    bits = 0
    for value, width in fields:
        if width:
            if value < 0:
                value &= (1 << width) - 1
            acc = (acc << width) | value
            bits += width
    return csum16_int(acc << (-bits % 16))


class DirectRegister:
    """``DirectRegister<T>``: one cell per table entry (0 until written), read and written by a
    ``DirectRegisterAction`` in an action of the owning table; keyed by the entry object, so a
    deleted and re-added entry starts from 0 again."""

    __slots__ = ("name", "bitwidth", "_cells")

    def __init__(self, name: str, bitwidth: int) -> None:
        self.name, self.bitwidth = name, bitwidth
        self._cells: dict[int, tuple[object, int]] = {}

    def read(self, entry: object | None) -> int:
        """The cell of ``entry`` (a miss, None, has no cell: 0)."""
        slot = self._cells.get(id(entry)) if entry is not None else None
        return slot[1] if slot is not None and slot[0] is entry else 0

    def write(self, entry: object | None, value: int) -> None:
        if entry is not None:
            self._cells[id(entry)] = (entry, value & ((1 << self.bitwidth) - 1))

    def reset(self) -> None:
        self._cells.clear()


class InitialisedRegister(Register):
    """``Register<T, I>(size, initial_value)``: every cell starts (and resets) at the initial value
    (a struct cell packed with its first field in the high bits)."""

    __slots__ = ("initial",)

    def __init__(self, name: str, size: int, bitwidth: int, initial: int) -> None:
        super().__init__(name, size, bitwidth)
        self.initial = initial & self._mask
        self.cells = [self.initial] * size

    def reset(self) -> None:
        self.cells = [self.initial] * self.size
