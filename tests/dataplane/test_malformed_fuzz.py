"""Random DLCP-shaped packets against an oracle written from docs/protocol.md
("Well-formedness and what the switch does"): every packet is either forwarded or dropped
exactly as the table says, the malformed counter counts each reason, and nothing raises.
"""

from __future__ import annotations

import random

from tests.dataplane.packets import ELEM_SIZE, dlcp_header, udp_packet
from tests.dataplane.tables import DlcpTables

TRUNCATED, BAD_LENGTH, BAD_DTYPE = 0, 1, 2


def oracle(payload: bytes) -> int | None:
    """None = forwarded, else the malformed reason (UDP to port 9290 carrying ``payload``)."""
    if not payload or payload[0] >> 4 != 1:
        return None if payload else TRUNCATED   # empty: the version nibble itself is missing
    if len(payload) < 24:
        return TRUNCATED
    msg_type, dtype = payload[0] & 0xF, payload[3] >> 4
    if msg_type != 0:
        return None
    if dtype not in ELEM_SIZE:
        return BAD_DTYPE
    count = int.from_bytes(payload[14:16], "big")
    return None if len(payload) == 24 + count * ELEM_SIZE[dtype] else BAD_LENGTH


def random_payload(rng: random.Random) -> bytes:
    shape = rng.random()
    if shape < 0.15:                                        # short: 0..23 bytes
        return bytes(rng.getrandbits(8) for _ in range(rng.randrange(24)))
    dtype = rng.choice([0, 1, 2, 3, 0, 1, rng.randrange(16)])
    count = rng.randrange(0, 40)
    header = dlcp_header(version=rng.choice([1, 1, 1, 2, 0, 15]), msg_type=rng.choice([0, 0, 0, 1, 2, 3, 4, 9]),
                         layer_class=rng.randrange(8), mag_class=rng.randrange(16),
                         flags=rng.getrandbits(8), dtype=dtype, count=count, seq=rng.getrandbits(32))
    body = count * ELEM_SIZE.get(dtype, 1)
    if rng.random() < 0.4:
        body = max(0, body + rng.choice([-3, -1, 1, 2, 7]))
    return header + bytes(rng.getrandbits(8) for _ in range(body))


def test_random_dlcp_packets_follow_the_spec(dlcp_program) -> None:
    from p4sim.v1model.pipeline import V1ModelPath

    pipeline = dlcp_program.instantiate()
    tables = DlcpTables(pipeline)
    tables.nexthop(2, 2)
    tables.route(int.from_bytes(bytes([10, 0, 2, 0]), "big"), 24, 2)
    path = V1ModelPath(pipeline)
    rng = random.Random(4242)
    expected_counts = [0, 0, 0]
    for i in range(600):
        payload = random_payload(rng)
        want = oracle(payload)
        sent = path.process(udp_packet(dport=9290, sport=1000 + i, payload=payload), 1)
        if want is None:
            assert [p for p, _ in sent] == [2], (i, payload.hex())
        else:
            assert sent == [], (i, payload.hex(), want)
            expected_counts[want] += 1
    cells = pipeline.counters["DlcpIngress.malformed"].cells
    assert [cells[r][0] for r in range(3)] == expected_counts
    assert all(expected_counts), expected_counts             # the generator reached every reason
