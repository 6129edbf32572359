"""Match-action tables: the match engine every generated pipeline and the control plane share.

This is Contract 1 of docs/architecture.md. Match values are plain ints; an entry's match is a
tuple with one item per key field (``Exact``, ``Lpm``, ``Ternary``, ``Range``, ``Optional_`` or
``None`` for a wildcard). Three lookup structures, chosen once from the key's match kinds:

* exact-only tables: one dict from the key tuple to the entry;
* one lpm field plus exact fields: one dict per prefix length, searched longest first;
* anything else (ternary, range, optional, several lpm): a scan in priority order (larger
  priority wins, then insertion order), with a small memo of recent keys.

Every entry is validated canonically before it is stored (values fit their bitwidth, ternary
value has no bits outside its mask, lpm host bits are zero, range low <= high), so a bad entry
is rejected whole with a ``TableError`` naming the table, the field and the value.
"""

from __future__ import annotations

import bisect
import itertools
from collections.abc import Iterator
from dataclasses import dataclass
from typing import NamedTuple

from p4sim.errors import UserError

MATCH_KINDS = ("exact", "lpm", "ternary", "range", "optional")
_MEMO_LIMIT = 4096


class TableError(UserError):
    """A control-plane operation a table refuses (bad entry, duplicate, missing, full...)."""


class InvalidEntry(TableError):
    """The entry is malformed for this table (arity, width, mask, action)."""


class EntryExists(TableError):
    """An entry with the same match (and priority) is already installed."""


class EntryNotFound(TableError):
    """No installed entry has this match (and priority)."""


class TableFull(TableError):
    """The table already holds ``size`` entries."""


class ConstDefaultAction(TableError):
    """The program declared the default action ``const``; it cannot be changed."""


class ConstEntry(TableError):
    """The entry comes from the program's ``const entries`` and cannot be modified or deleted."""


class Exact(NamedTuple):
    value: int


class Lpm(NamedTuple):
    value: int
    prefix_len: int


class Ternary(NamedTuple):
    value: int
    mask: int


class Range(NamedTuple):
    low: int
    high: int


class Optional_(NamedTuple):  # noqa: N801 - name fixed by the contract
    value: int


@dataclass(frozen=True)
class KeyField:
    name: str
    match_kind: str
    bitwidth: int


@dataclass(frozen=True, slots=True)
class ActionCall:
    name: str
    args: tuple[int, ...] = ()


@dataclass(slots=True, eq=False)
class TableEntry:
    match: tuple
    action: ActionCall | None
    priority: int = 0
    member_id: int | None = None
    group_id: int | None = None
    packets: int = 0
    bytes: int = 0
    meter_config: object | None = None
    is_const: bool = False


_MODE_EXACT, _MODE_LPM, _MODE_SCAN = "exact", "lpm", "scan"


class Table:
    """One table instance: entries, default action, and the lookup structure for its key."""

    def __init__(self, name: str, keys: list[KeyField], size: int, actions: list[str],
                 default_action: ActionCall | None, default_is_const: bool = False,
                 implementation: str | None = None) -> None:
        for k in keys:
            if k.match_kind not in MATCH_KINDS:
                raise InvalidEntry(f"table {name}: key {k.name}: unknown match kind {k.match_kind!r}")
        self.name = name
        self.keys = list(keys)
        self.size = size
        self.actions = list(actions)
        self.implementation = implementation
        self.default_action = default_action
        self.default_is_const = default_is_const
        self._initial_default = default_action
        kinds = [k.match_kind for k in keys]
        n_lpm = kinds.count("lpm")
        if all(kd == "exact" for kd in kinds):
            self._mode = _MODE_EXACT
        elif n_lpm == 1 and all(kd in ("exact", "lpm") for kd in kinds):
            self._mode = _MODE_LPM
            self._lpm_index = kinds.index("lpm")
            self._lpm_width = keys[self._lpm_index].bitwidth
        else:
            self._mode = _MODE_SCAN
        self.needs_priority = self._mode == _MODE_SCAN
        self._full = tuple((1 << k.bitwidth) - 1 for k in keys)
        # bit offset of each key field when the whole key is packed into one int (scan mode)
        self._shifts = []
        off = 0
        for k in reversed(keys):
            self._shifts.append(off)
            off += k.bitwidth
        self._shifts.reverse()
        self._seq = itertools.count()
        self._clear_structures()

    # -- structures -------------------------------------------------------------------------

    def _clear_structures(self) -> None:
        self._entries: dict[tuple, TableEntry] = {}   # identity -> entry
        # exact tables: the identity dict *is* the lookup dict (key tuple -> entry), one copy only
        self._exact: dict[tuple, TableEntry] = self._entries
        self._by_len: dict[int, dict[object, TableEntry]] = {}
        # (prefix mask, bucket) longest prefix first; a one-field lpm table keys buckets by int
        self._lpm_order: list[tuple[int, dict[object, TableEntry]]] = []
        # scan: list of (sort key, packed mask, packed value, ranges, entry)
        self._scan: list[tuple] = []
        self._memo: dict[tuple, TableEntry | None] = {}
        if self._mode == _MODE_EXACT:
            # the data-plane hot path: ``t.lookup(key)`` is the dict's own get
            self.lookup = self._exact.get  # type: ignore[method-assign]

    # -- validation -------------------------------------------------------------------------

    def _where(self, i: int) -> str:
        return f"table {self.name}: key {self.keys[i].name}"

    def _normalize(self, match: tuple) -> tuple:
        """Validate ``match`` and return its canonical identity: one tuple of ints per field."""
        if not isinstance(match, tuple) or len(match) != len(self.keys):
            got = len(match) if isinstance(match, tuple) else type(match).__name__
            raise InvalidEntry(f"table {self.name}: match has {got} fields, table key has "
                               f"{len(self.keys)}")
        out = []
        for i, (key, m) in enumerate(zip(self.keys, match, strict=True)):
            full = self._full[i]
            kind = key.match_kind
            if kind == "exact":
                v = m.value if isinstance(m, Exact) else (m if isinstance(m, int) else None)
                if v is None:
                    raise InvalidEntry(f"{self._where(i)}: exact field needs Exact(value), got {m!r}")
                self._fits(i, v)
                out.append((v,))
            elif kind == "lpm":
                if m is None:
                    out.append((0, 0))
                    continue
                if not isinstance(m, Lpm):
                    raise InvalidEntry(f"{self._where(i)}: lpm field needs Lpm(value, prefix_len), got {m!r}")
                self._fits(i, m.value)
                if not 0 <= m.prefix_len <= key.bitwidth:
                    raise InvalidEntry(f"{self._where(i)}: prefix length {m.prefix_len} outside "
                                       f"0..{key.bitwidth}")
                mask = _prefix_mask(m.prefix_len, key.bitwidth)
                if m.value & ~mask & full:
                    raise InvalidEntry(f"{self._where(i)}: lpm value {m.value:#x}/{m.prefix_len} has "
                                       f"bits set beyond the prefix")
                out.append((m.value, m.prefix_len))
            elif kind == "ternary":
                if m is None:
                    out.append((0, 0))
                    continue
                if not isinstance(m, Ternary):
                    raise InvalidEntry(f"{self._where(i)}: ternary field needs Ternary(value, mask), got {m!r}")
                self._fits(i, m.value)
                self._fits(i, m.mask)
                if m.value & ~m.mask:
                    raise InvalidEntry(f"{self._where(i)}: ternary value {m.value:#x} has bits outside "
                                       f"mask {m.mask:#x}")
                out.append((m.value, m.mask))
            elif kind == "range":
                if m is None:
                    out.append((0, full))
                    continue
                if not isinstance(m, Range):
                    raise InvalidEntry(f"{self._where(i)}: range field needs Range(low, high), got {m!r}")
                self._fits(i, m.low)
                self._fits(i, m.high)
                if m.low > m.high:
                    raise InvalidEntry(f"{self._where(i)}: range low {m.low} > high {m.high}")
                out.append((m.low, m.high))
            else:  # optional
                if m is None:
                    out.append(())
                    continue
                if not isinstance(m, Optional_):
                    raise InvalidEntry(f"{self._where(i)}: optional field needs Optional_(value) or None, "
                                       f"got {m!r}")
                self._fits(i, m.value)
                out.append((m.value,))
        return tuple(out)

    def _fits(self, i: int, v: object) -> None:
        if not isinstance(v, int) or v < 0 or v > self._full[i]:
            raise InvalidEntry(f"{self._where(i)}: value {v!r} does not fit in "
                               f"bit<{self.keys[i].bitwidth}>")

    def _check_action(self, entry: TableEntry) -> None:
        if entry.action is None:
            if entry.member_id is None and entry.group_id is None:
                raise InvalidEntry(f"table {self.name}: entry has no action")
            if self.implementation is None:
                raise InvalidEntry(f"table {self.name}: member/group given but the table has no "
                                   f"action profile")
            return
        if self.implementation is not None:
            raise InvalidEntry(f"table {self.name}: table uses action profile {self.implementation}; "
                               f"entries give a member or group, not an action")
        if self.actions and entry.action.name not in self.actions:
            raise InvalidEntry(f"table {self.name}: action {entry.action.name} is not one of "
                               f"{', '.join(self.actions)}")

    def _identity(self, norm: tuple, priority: int) -> tuple:
        if self._mode == _MODE_EXACT:
            return tuple(f[0] for f in norm)
        return (norm, priority) if self.needs_priority else (norm,)

    # -- control plane ----------------------------------------------------------------------

    def insert(self, entry: TableEntry) -> None:
        norm = self._normalize(entry.match)
        self._check_action(entry)
        ident = self._identity(norm, entry.priority)
        if ident in self._entries:
            raise EntryExists(f"table {self.name}: an entry with this match"
                              f"{' and priority' if self.needs_priority else ''} already exists")
        if len(self._entries) >= self.size:
            raise TableFull(f"table {self.name}: full ({self.size} entries)")
        self._entries[ident] = entry
        self._add_to_structure(norm, entry)

    def modify(self, entry: TableEntry) -> None:
        norm = self._normalize(entry.match)
        self._check_action(entry)
        ident = self._identity(norm, entry.priority)
        old = self._entries.get(ident)
        if old is None:
            raise EntryNotFound(f"table {self.name}: no entry with this match to modify")
        if old.is_const:
            raise ConstEntry(f"table {self.name}: entry is a const entry of the program")
        old.action = entry.action
        old.member_id = entry.member_id
        old.group_id = entry.group_id
        if entry.meter_config is not None:
            old.meter_config = entry.meter_config
        self._memo.clear()

    def delete(self, entry: TableEntry) -> None:
        norm = self._normalize(entry.match)
        ident = self._identity(norm, entry.priority)
        old = self._entries.get(ident)
        if old is None:
            raise EntryNotFound(f"table {self.name}: no entry with this match to delete")
        if old.is_const:
            raise ConstEntry(f"table {self.name}: entry is a const entry of the program")
        del self._entries[ident]
        self._remove_from_structure(norm, old)

    def find(self, match: tuple, priority: int = 0) -> TableEntry | None:
        return self._entries.get(self._identity(self._normalize(match), priority))

    def set_default(self, action: ActionCall) -> None:
        if self.default_is_const:
            raise ConstDefaultAction(f"table {self.name}: default action is const")
        if self.actions and action.name not in self.actions:
            raise InvalidEntry(f"table {self.name}: action {action.name} is not one of "
                               f"{', '.join(self.actions)}")
        self.default_action = action

    def reset_default(self) -> None:
        self.default_action = self._initial_default

    def clear(self) -> None:
        """Remove every entry the control plane added (const entries stay)."""
        keep = [e for e in self._entries.values() if e.is_const]
        self._clear_structures()
        for e in keep:
            self.insert(e)

    def __iter__(self) -> Iterator[TableEntry]:
        return iter(list(self._entries.values()))

    def __len__(self) -> int:
        return len(self._entries)

    # -- structure maintenance ---------------------------------------------------------------

    def _add_to_structure(self, norm: tuple, entry: TableEntry) -> None:
        if self._mode == _MODE_EXACT:
            pass  # already stored: _exact is _entries
        elif self._mode == _MODE_LPM:
            plen = norm[self._lpm_index][1]
            bucket = self._by_len.get(plen)
            if bucket is None:
                bucket = self._by_len[plen] = {}
                self._reorder_lpm()
            bucket[self._lpm_key(norm)] = entry
        else:
            seq = next(self._seq)
            masks, values, ranges = self._compile(norm)
            pm = pv = 0
            for sh, m, v in zip(self._shifts, masks, values, strict=True):
                pm |= m << sh
                pv |= v << sh
            bisect.insort(self._scan, ((-entry.priority, seq), pm, pv, ranges, entry), key=_row_order)
            self._memo.clear()

    def _remove_from_structure(self, norm: tuple, entry: TableEntry) -> None:
        if self._mode == _MODE_EXACT:
            pass  # already removed: _exact is _entries
        elif self._mode == _MODE_LPM:
            plen = norm[self._lpm_index][1]
            bucket = self._by_len[plen]
            del bucket[self._lpm_key(norm)]
            if not bucket:
                del self._by_len[plen]
                self._reorder_lpm()
        else:
            self._scan = [row for row in self._scan if row[4] is not entry]
            self._memo.clear()

    def _lpm_key(self, norm: tuple) -> object:
        return norm[0][0] if len(norm) == 1 else tuple(f[0] for f in norm)

    def _reorder_lpm(self) -> None:
        w = self._lpm_width
        self._lpm_order = [(_prefix_mask(p, w), self._by_len[p]) for p in sorted(self._by_len, reverse=True)]

    def _compile(self, norm: tuple) -> tuple[tuple[int, ...], tuple[int, ...], tuple]:
        masks, values, ranges = [], [], []
        for i, (key, f) in enumerate(zip(self.keys, norm, strict=True)):
            kind = key.match_kind
            if kind == "exact":
                masks.append(self._full[i])
                values.append(f[0])
            elif kind == "lpm":
                masks.append(_prefix_mask(f[1], key.bitwidth))
                values.append(f[0])
            elif kind == "ternary":
                masks.append(f[1])
                values.append(f[0])
            elif kind == "optional":
                if f:
                    masks.append(self._full[i])
                    values.append(f[0])
                else:
                    masks.append(0)
                    values.append(0)
            else:
                masks.append(0)
                values.append(0)
                if f != (0, self._full[i]):
                    ranges.append((i, f[0], f[1]))
        return tuple(masks), tuple(values), tuple(ranges)

    # -- data plane -------------------------------------------------------------------------

    def lookup(self, key: tuple[int, ...]) -> TableEntry | None:
        """The matching entry with the highest priority (longest prefix for lpm), or None."""
        if self._mode == _MODE_EXACT:
            return self._exact.get(key)
        if self._mode == _MODE_LPM:
            if len(key) == 1:
                v = key[0]
                for mask, bucket in self._lpm_order:
                    hit = bucket.get(v & mask)
                    if hit is not None:
                        return hit
                return None
            i = self._lpm_index
            v = key[i]
            head, tail = key[:i], key[i + 1:]
            for mask, bucket in self._lpm_order:
                hit = bucket.get(head + (v & mask,) + tail)
                if hit is not None:
                    return hit
            return None
        memo = self._memo
        if key in memo:
            return memo[key]
        found = None
        packed = 0
        for sh, k in zip(self._shifts, key, strict=True):
            packed |= k << sh
        for _, pm, pv, ranges, entry in self._scan:
            if packed & pm != pv:
                continue
            if ranges:
                for i, lo, hi in ranges:
                    if not lo <= key[i] <= hi:
                        break
                else:
                    found = entry
                    break
            else:
                found = entry
                break
        if len(memo) >= _MEMO_LIMIT:
            memo.clear()
        memo[key] = found
        return found


def _row_order(row: tuple) -> tuple[int, int]:
    return row[0]


def _prefix_mask(prefix_len: int, width: int) -> int:
    return ((1 << prefix_len) - 1) << (width - prefix_len)
