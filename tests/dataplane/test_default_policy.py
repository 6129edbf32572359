"""The default policy data file (controller/data/default_policy.yaml) is well formed and
encodes the documented intent: 8 queues, control and critical on top, front layers above
back layers, lower magnitudes dropped earlier, ECN before drop, thresholds as queueing delay
(issue 10 item 6: right at any link speed), and nothing ambiguous.
"""

from __future__ import annotations

from pathlib import Path

import yaml

from tests.dataplane import p4text

POLICY = Path(__file__).resolve().parents[2] / "controller" / "data" / "default_policy.yaml"
KEY_WIDTHS = {"is_dlcp": 1, "msg_type": 4, "layer_class": 3, "mag_class": 4, "flags": 8}
NEVER_US = 4_000_000_000            # drop_delay_us that means "never": > 64 packets at any rate
PACKET_TIME_20M_US = 600            # a full-size packet at 20 Mbit/s, the Mininet link


def load() -> dict:
    return yaml.safe_load(POLICY.read_text())


def ternary(value: object, width: int) -> tuple[int, int]:
    full = (1 << width) - 1
    if isinstance(value, int):
        return value, full
    assert isinstance(value, dict) and set(value) == {"value", "mask"}, value
    return value["value"], value["mask"]


def first_queue(policy: dict, tags: dict[str, int]) -> int:
    """The queue the first matching rule names (the controller's priority order)."""
    for rule in policy["priority_map"]:
        if all((tags[k] & m) == v for k, (v, m) in
               ((k, ternary(val, KEY_WIDTHS[k])) for k, val in rule["match"].items())):
            return rule["queue"]
    return 0


def test_schema() -> None:
    policy = load()
    assert set(policy) == {"version", "queues", "queue_depth", "dlcp_udp_ports", "priority_map", "thresholds"}
    assert policy["version"] == 1
    assert policy["queues"] == 8
    assert policy["queue_depth"] == 64
    assert policy["dlcp_udp_ports"] == [p4text.constants()["DLCP_UDP_PORT_DEFAULT"][1]]
    names = set()
    for rule in policy["priority_map"]:
        assert set(rule) == {"name", "match", "queue"}, rule
        assert rule["name"] not in names
        names.add(rule["name"])
        assert 0 <= rule["queue"] < 8
        for key, value in rule["match"].items():
            v, m = ternary(value, KEY_WIDTHS[key])
            assert 0 <= m < (1 << KEY_WIDTHS[key]) and v & ~m == 0, (rule["name"], key)
    for block in policy["thresholds"]:
        assert set(block) == {"queues", "mag_classes", "drop_delay_us", "ecn_delay_us"}
        assert all(0 <= q < 8 for q in block["queues"])
        assert all(0 <= c < 16 for c in block["mag_classes"])
        assert 0 <= block["ecn_delay_us"] <= block["drop_delay_us"] <= NEVER_US


def test_threshold_pairs_are_unique() -> None:
    seen = set()
    for block in load()["thresholds"]:
        for q in block["queues"]:
            for c in block["mag_classes"]:
                assert (q, c) not in seen
                seen.add((q, c))


def test_top_queue_is_for_control_only_and_probe_follows_its_data() -> None:
    """Issue 10 (H2, H4): no DATA in queue 7 (critical data and promoted retransmissions stay in
    their layer's queue), and a PROBE travels in the queue of the DATA it follows."""
    policy = load()
    for msg in (2, 3, 4):
        for layer in range(8):
            assert first_queue(policy, dict(is_dlcp=1, msg_type=msg, layer_class=layer, mag_class=0, flags=0x80)) == 7
    for layer in range(8):
        data = first_queue(policy, dict(is_dlcp=1, msg_type=0, layer_class=layer, mag_class=15, flags=0x08))
        assert data != 7
        for flags in (0x80, 0x80 | 0x20, 0x80 | 0x10, 0x80 | 0x40):
            tags = dict(is_dlcp=1, msg_type=0, layer_class=layer, mag_class=0, flags=flags)
            assert first_queue(policy, tags) == data
        assert first_queue(policy, dict(is_dlcp=1, msg_type=1, layer_class=layer, mag_class=0, flags=0x80)) == data


def test_front_layers_get_higher_queues_and_non_dlcp_the_lowest() -> None:
    policy = load()
    queues = [first_queue(policy, dict(is_dlcp=1, msg_type=0, layer_class=c, mag_class=5, flags=0))
              for c in range(8)]
    assert queues == sorted(queues)            # monotone in layer class
    assert queues[7] == 6 and min(queues) >= 1
    assert first_queue(policy, dict(is_dlcp=0, msg_type=0, layer_class=0, mag_class=0, flags=0)) == 0


def test_lower_magnitudes_drop_earlier_and_ecn_precedes_drop() -> None:
    per_class: dict[int, tuple[int, int]] = {}
    covered_queues = set()
    for block in load()["thresholds"]:
        covered_queues.update(block["queues"])
        for c in block["mag_classes"]:
            per_class[c] = (block["drop_delay_us"], block["ecn_delay_us"])
    assert sorted(per_class) == list(range(16))
    drops = [per_class[c][0] for c in range(16)]
    assert drops == sorted(drops)
    assert per_class[15][0] == NEVER_US               # largest magnitudes never dropped
    assert all(ecn < drop for drop, ecn in per_class.values())
    assert 7 not in covered_queues and 0 not in covered_queues
    # at 20 Mbit/s: a quarter, half, three quarters of the 64-packet queue (the former packets)
    assert [per_class[c][0] // PACKET_TIME_20M_US for c in (0, 4, 8)] == [16, 32, 48]
