"""Random DLCP-shaped packets against an oracle written from docs/protocol.md
("Well-formedness and what the switch does"): every packet is either forwarded or dropped
exactly as the table says, the malformed counter counts each reason, and nothing raises. Both
programs (BMv2, and the Tofino one on p4sim's TNA model for Tofino1 and Tofino2).
"""

from __future__ import annotations

import random

import pytest

from tests.dataplane.packets import ELEM_SIZE, dlcp_header, udp_packet
from tests.dataplane.targets import DlcpTarget

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


@pytest.fixture(params=["bmv2", "tna", "t2na"])
def target(request) -> DlcpTarget:
    return DlcpTarget(request.param)


def test_random_dlcp_packets_follow_the_spec(target) -> None:
    pipeline, path = target.pipeline, target.path
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


def test_random_ipv4_headers_follow_the_spec(target) -> None:
    """Issue 11: IPv4 with options and a correct checksum (over the whole header) is ordinary
    IPv4 (options leave unchanged); version != 4 or IHL < 5 is dropped and counted in
    malformed[3]; a checksum over the base header only is corrupt and dropped uncounted."""
    from tests.dataplane.packets import routed, with_ipv4_fields

    pipeline, path = target.pipeline, target.path
    rng = random.Random(1111)
    bad_ipv4 = forwarded = 0
    for i in range(400):
        version = rng.choice([4, 4, 4, 4, 6, 0, 15])
        words = rng.randrange(0, 11)
        options = bytes(rng.getrandbits(8) for _ in range(4 * words))
        ihl = rng.choice([None, None, None, rng.randrange(0, 5)])
        base_only = words and rng.random() < 0.15
        pkt = with_ipv4_fields(udp_packet(sport=2000 + i, payload=bytes(rng.randrange(0, 30))),
                               options=options, version=version, ihl=ihl, checksum_over=20 if base_only else None)
        sent = path.process(pkt, 1)
        if version != 4 or (ihl is not None and ihl < 5):
            assert sent == [], (i, pkt.hex())
            bad_ipv4 += 1
        elif base_only:
            assert sent == [], (i, pkt.hex())
        else:
            assert [(p, bytes(d)) for p, d in sent] == [(2, routed(pkt, 2))], (i, pkt.hex())
            forwarded += 1
    assert pipeline.counters["DlcpIngress.malformed"].cells[3][0] == bad_ipv4 > 0 and forwarded > 100
