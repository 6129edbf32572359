"""How STF expectations are matched, and how STF names find tables, actions and keys.

Packet matching is ``bmv2stf.py``'s ``comparePacket``/``checkOutputs``: ``*`` nibbles match
anything, a received packet may be longer than the expectation (prefix match) unless the
expectation ends with ``$``, packets are compared per port in order, and only ports named by a
``packet`` or ``expect`` line are observed. Names resolve like the harness: the exact name, else
a unique suffix (tables, actions), and for keys the exact name or a ``.``-separated suffix (with
``$valid$`` and ``$N`` stack spellings accepted).
"""

from __future__ import annotations

import re
from collections.abc import Iterable

from p4sim.runtime.tables import Table

# -- packet comparison (bmv2stf.comparePacket / checkOutputs) ----------------------------------

def compare_packet(pattern: str, data: bytes) -> str | None:
    """None when ``data`` matches the STF expectation ``pattern``, else why not."""
    received = data.hex().upper()
    expected = "".join(pattern.split()).upper()
    strict = expected.endswith("$")
    if strict:
        expected = expected[:-1]
    if len(received) < len(expected):
        return (f"received packet too short: {len(received)} vs {len(expected)} hex digits; "
                f"expected {expected}, received {received}")
    for i, c in enumerate(expected):
        if c != "*" and c != received[i]:
            return (f"packet differs at hex digit {i}: expected {c}, received {received[i]}; "
                    f"expected {expected}, received {received}")
    if strict and len(received) > len(expected):
        return (f"received packet too long: {len(received)} vs {len(expected)} hex digits; "
                f"expected {expected}$, received {received}")
    return None


def compare_outputs(ports: Iterable[int], expected: dict[int, list[str]], expect_any: set[int],
                    outputs: dict[int, list[bytes]]) -> list[str]:
    """Every mismatch between expectations and outputs on the observed ``ports`` (empty = pass)."""
    errors: list[str] = []
    for port in sorted(set(ports)):
        got = outputs.get(port, [])
        if port in expect_any:
            continue
        want = expected.get(port, [])
        if len(want) != len(got):
            kind = "unexpected packet(s)" if len(got) > len(want) else "missing packet(s)"
            errors.append(f"port {port}: expected {len(want)} packet(s), got {len(got)} ({kind})")
            for i, p in enumerate(want):
                errors.append(f"  expected #{i + 1}: {p}")
            for i, d in enumerate(got):
                errors.append(f"  received #{i + 1}: {d.hex().upper()}")
            continue
        for i, (p, d) in enumerate(zip(want, got, strict=True)):
            why = compare_packet(p, d)
            if why:
                errors.append(f"port {port}: packet #{i + 1}: {why}")
    return errors


# -- name resolution ---------------------------------------------------------------------------

def resolve_name(name: str, candidates: Iterable[str], what: str) -> str:
    """Exact name, else the unique candidate ending with ``name`` (preferring a '.' boundary)."""
    cands = list(candidates)
    if name in cands:
        return name
    matches = [c for c in cands if c.endswith(name)]
    if len(matches) > 1:
        dotted = [c for c in matches if c.endswith("." + name)]
        if len(dotted) == 1:
            return dotted[0]
        raise ValueError(f"{what} name {name!r} is ambiguous: {', '.join(sorted(matches))}")
    if not matches:
        known = ", ".join(sorted(cands)) or "none"
        raise ValueError(f"no {what} {name!r} (known: {known})")
    return matches[0]


def _key_aliases(name: str) -> list[str]:
    """The spellings of ``name`` a key may carry: a validity key is ``x.$valid$`` in p4c's and
    p4sim's P4Info; STF files write it ``x.$valid$``, ``x.valid`` or ``x.isValid()``."""
    out = [name]
    base = None
    if name.endswith(".isValid()"):
        base = name[:-len(".isValid()")]
    elif "$valid$" in name or name.endswith(".valid"):
        base = name.replace(".$valid$", "").replace("$valid$", "")
        if base.endswith(".valid"):
            base = base[:-6]
    if base is not None:
        out += [f"{base}.$valid$" if base else "$valid$", f"{base}.isValid()" if base else "isValid()"]
    if "$" in name:

        out.append(re.sub(r"\$([0-9]+)", r"[\1]", name))
    return out


def resolve_key(name: str, table: Table) -> int:
    names = [k.name for k in table.keys]
    for alias in _key_aliases(name):
        if alias in names:
            return names.index(alias)
    for alias in _key_aliases(name):
        hits = [i for i, n in enumerate(names) if n.endswith("." + alias)]
        if len(hits) == 1:
            return hits[0]
        if len(hits) > 1:
            raise ValueError(f"key {name!r} is ambiguous in table {table.name}")
    raise ValueError(f"table {table.name} has no key {name!r} (keys: {', '.join(names) or 'none'})")


