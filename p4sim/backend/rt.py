"""Support code that generated pipelines call at packet time.

The code generator (``p4sim.backend.codegen``) emits specialised Python per program; whatever is
generic and not worth inlining lives here: the exceptions that model ``reject``/``exit``/assert
failures, header stacks and their out-of-bounds rules, value sets, lookahead, and the generic
(slow) extract/emit used only for headers with a ``varbit`` field.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from p4sim.errors import UserError
from p4sim.runtime.hashes import compute as _hash_compute  # per packet: imported once, not per call
from p4sim.runtime.hashes import csum16_int as csum16_int  # the generated code's checksum fold, re-exported


class ParserReject(Exception):
    """The parser stopped in ``reject`` (or failed); ``code`` is the ``error`` index, or None
    when the program transitioned to ``reject`` without setting an error."""

    def __init__(self, code: int | None) -> None:
        super().__init__(code)
        self.code = code


class ExitBlock(Exception):
    """P4 ``exit``: terminates the top-level block (parser/control) being executed."""


class AssertionFailed(Exception):
    """A v1model ``assert``/``assume`` whose condition was false (BMv2 aborts; we drop)."""


# Parser work bound: state visits per packet, over the top-level parser and its sub-parsers.
# A 9,000-byte jumbo frame parsed one byte per state needs 9,000; a state that loops without
# advancing (``state start { transition start; }``) would otherwise spin forever.
PARSER_STATE_LIMIT = 16384


class ParserLoopLimit(AssertionFailed):
    """The parser visited ``PARSER_STATE_LIMIT`` states without ending (P4's ``ParserTimeout``):
    the packet is dropped and counted, and the switch keeps running."""

    def __init__(self) -> None:
        super().__init__(f"parser did not end within {PARSER_STATE_LIMIT} state visits (ParserTimeout)")


class ValueSetError(UserError):
    """A control-plane write a value set refuses (full, wrong arity or width)."""


class HeaderStack:
    """A header stack: ``h`` holds the elements, ``n`` is ``nextIndex``."""

    __slots__ = ("h", "n", "size")

    def __init__(self, elements: list[Any]) -> None:
        self.h = elements
        self.n = 0
        self.size = len(elements)

    def _copy(self) -> HeaderStack:
        new = HeaderStack([e._copy() for e in self.h])
        new.n = self.n
        return new

    def _eq(self, other: HeaderStack) -> bool:
        return all(a._eq(b) for a, b in zip(self.h, other.h, strict=True))

    def _invalidate(self) -> None:
        for e in self.h:
            e._setinvalid()
        self.n = 0


def stack_at(stack: HeaderStack, index: int, factory: Callable[[], Any]) -> Any:
    """``stack[i]`` with a run-time index; out of range reads an invalid scratch header."""
    if 0 <= index < stack.size:
        return stack.h[index]
    return factory()


def stack_last(stack: HeaderStack, factory: Callable[[], Any]) -> Any:
    """``stack.last`` outside a parser: undefined when empty; we read an invalid header."""
    if stack.n == 0 or stack.n > stack.size:
        return factory()
    return stack.h[stack.n - 1]


def push_front(stack: HeaderStack, count: int, factory: Callable[[], Any]) -> None:
    """Shift elements up by ``count``; the first ``count`` become invalid (P4_16 spec 8.18)."""
    size = stack.size
    if count <= 0:
        return
    count = min(count, size)
    stack.h[:] = [factory() for _ in range(count)] + stack.h[:size - count]
    stack.n = min(stack.n + count, size)


def pop_front(stack: HeaderStack, count: int, factory: Callable[[], Any]) -> None:
    """Shift elements down by ``count``; the last ``count`` become invalid."""
    size = stack.size
    if count <= 0:
        return
    count = min(count, size)
    stack.h[:] = stack.h[count:] + [factory() for _ in range(count)]
    stack.n = max(stack.n - count, 0)


def lookahead_bits(data: bytes, bitpos: int, width: int, nbits: int, too_short: int) -> int:
    """``lookahead<bit<W>>()`` at ``bitpos`` (raises ``PacketTooShort`` past the end)."""
    if bitpos + width > nbits:
        raise ParserReject(too_short)
    start = bitpos >> 3
    skip = bitpos & 7
    nbytes = (skip + width + 7) >> 3
    value = int.from_bytes(data[start:start + nbytes], "big")
    return (value >> (nbytes * 8 - skip - width)) & ((1 << width) - 1)


class ValueSet:
    """A parser ``value_set``: up to ``size`` members, each a tuple of (value, mask) per field.

    The control plane (P4Runtime ``ValueSetEntry``) replaces the whole contents with ``set``.
    """

    def __init__(self, name: str, bitwidths: list[int], size: int) -> None:
        self.name = name
        self.bitwidths = list(bitwidths)
        self.size = size
        self.members: list[tuple[tuple[int, int], ...]] = []

    def set(self, members: list[tuple[tuple[int, int], ...]]) -> None:
        if len(members) > self.size:
            raise ValueSetError(f"value_set {self.name}: {len(members)} members exceed its size {self.size}")
        checked = []
        for m in members:
            if len(m) != len(self.bitwidths):
                raise ValueSetError(f"value_set {self.name}: member {m} has {len(m)} fields, "
                                    f"expected {len(self.bitwidths)}")
            for (value, mask), width in zip(m, self.bitwidths, strict=True):
                if value >> width or mask >> width:
                    raise ValueSetError(f"value_set {self.name}: value {value:#x} does not fit bit<{width}>")
            checked.append(tuple((v & mk, mk) for v, mk in m))
        self.members = checked

    def add(self, member: tuple[tuple[int, int], ...]) -> None:
        self.set(self.members + [member])

    def clear(self) -> None:
        self.members = []

    def matches(self, key: tuple[int, ...]) -> bool:
        for member in self.members:
            for k, (v, m) in zip(key, member, strict=True):
                if k & m != v:
                    break
            else:
                return True
        return False

    def __len__(self) -> int:
        return len(self.members)


def format_log(fmt: str, values: tuple[Any, ...]) -> str:
    """``log_msg("x={}", {x})``: BMv2 replaces each ``{}`` by the next value, in decimal."""
    parts = fmt.split("{}")
    out = [parts[0]]
    for i, rest in enumerate(parts[1:]):
        out.append(str(int(values[i])) if i < len(values) else "{}")
        out.append(rest)
    return "".join(out)


ONCE = (0,)


def assign_into(dst: Any, src: Any) -> None:
    """Whole-aggregate assignment to an ``out``/``inout`` parameter: the caller's object is
    updated in place (``src`` is already a fresh copy, so a shallow slot copy suffices)."""
    for slot in type(dst).__slots__:
        setattr(dst, slot, getattr(src, slot))


def extract_generic(h: Any, data: bytes, bitpos: int, nbits: int, layout: tuple, size: int, max_width: int,
                    fixed: int, too_short: int, header_too_short: int, invalid_arg: int) -> int:
    """Two-argument ``extract(h, size)`` for a header with a ``varbit`` field; returns the new
    cursor. Errors as BMv2: size beyond the maximum -> HeaderTooShort, not whole bytes ->
    ParserInvalidArgument, past the end -> PacketTooShort."""
    if size > max_width:
        raise ParserReject(header_too_short)
    if size % 8:
        raise ParserReject(invalid_arg)
    total = fixed + size
    if bitpos + total > nbits:
        raise ParserReject(too_short)
    start = bitpos >> 3
    value = int.from_bytes(data[start:start + (total >> 3)], "big") if total else 0
    shift = total
    for name, width, signed in layout:
        w = size if width < 0 else width
        shift -= w
        v = (value >> shift) & ((1 << w) - 1)
        if signed and w:
            v = (v ^ (1 << (w - 1))) - (1 << (w - 1))
        setattr(h, name, v)
        if width < 0:
            setattr(h, name + "_len", size)
    h._v = True
    return bitpos + total


def emit_generic(h: Any, layout: tuple) -> bytes:
    """``emit`` for a header with a ``varbit`` field (its current length is ``<field>_len``)."""
    acc = 0
    total = 0
    for name, width, _signed in layout:
        w = getattr(h, name + "_len") if width < 0 else width
        acc = (acc << w) | (int(getattr(h, name)) & ((1 << w) - 1))
        total += w
    return acc.to_bytes(total >> 3, "big")


def csum16_tail(value: int, width: int, before: int) -> int:
    """The last field of a checksum input whose width is known only at run time (an IPv4
    header's options, ``varbit``), as a term of ``csum16_int``'s sum: ``value`` masked to
    ``width`` bits and shifted to where the 16-bit padding puts it after ``before`` fixed bits
    (pack_fields pads to bytes, csum16 to words: together to words). A width of 0 (the header
    is invalid or has no options) adds nothing, as pack_fields leaves the field out."""
    if width <= 0:
        return 0
    return (value & ((1 << width) - 1)) << (-(before + width) % 16)


def hash_packed(algorithm: str, base: int, data: bytes, max_: int) -> int:
    """v1model ``hash`` over already packed field bytes: ``base + h % max`` (max 0 acts as 1),
    the same arithmetic as ``p4sim.runtime.hashes.v1model_hash``."""
    return base + _hash_compute(algorithm, data) % (max_ if max_ else 1)
