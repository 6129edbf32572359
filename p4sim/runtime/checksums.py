"""v1model ``verify_checksum`` / ``update_checksum`` (and ``_with_payload``) over field lists.

Contract 2 of docs/architecture.md. BMv2 computes a checksum like a hash: the field list is
serialised with ``hashes.pack_fields`` (fields of invalid headers are left out by the caller,
as BMv2's ``BufBuilder`` skips them), the unparsed payload is appended for the ``_with_payload``
forms, and the algorithm is one of the v1model hash algorithms (``csum16`` for IPv4/UDP/TCP).
"""

from __future__ import annotations

from p4sim.runtime.hashes import compute, csum16_int, pack_fields, pack_int


def compute_checksum(algorithm: str, fields: list[tuple[int, int]], payload: bytes = b"",
                     width: int = 16) -> int:
    """The checksum of ``fields`` (then ``payload``), truncated to ``width`` bits."""
    if algorithm == "csum16" and not payload:
        return _csum16_fields(fields) & ((1 << width) - 1)
    data = pack_fields(fields)
    if payload:
        data += payload
    return compute(algorithm, data) & ((1 << width) - 1)


def _csum16_fields(fields: list[tuple[int, int]]) -> int:
    """``csum16(pack_fields(fields))`` without the bytes in between (the IPv4 header checksum, verified
    and recomputed for every packet): the packed fields as one integer padded to whole 16-bit words
    (pack_fields pads to bytes, csum16 an odd byte count to words)."""
    acc, nbits = pack_int(fields)
    return csum16_int(acc << (-nbits % 16))


def verify_checksum(condition: bool, fields: list[tuple[int, int]], checksum: int, algorithm: str,
                    payload: bytes = b"", width: int = 16) -> bool:
    """True when the checksum is right or ``condition`` is false (nothing to verify).

    v1model sets ``standard_metadata.checksum_error = 1`` when this returns False.
    """
    if not condition:
        return True
    return compute_checksum(algorithm, fields, payload, width) == checksum


def update_checksum(condition: bool, fields: list[tuple[int, int]], current: int, algorithm: str,
                    payload: bytes = b"", width: int = 16) -> int:
    """The new value of the checksum field: recomputed if ``condition``, else ``current``."""
    if not condition:
        return current
    return compute_checksum(algorithm, fields, payload, width)
