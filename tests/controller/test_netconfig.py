"""Network YAML validation: every mistake is one ConfigError naming file:line, key and value."""

from __future__ import annotations

import textwrap

import pytest
from ctl_support import P4INFO, three_switch_yaml

from controller import netconfig
from controller.errors import ConfigError


def _load(tmp_path, text: str) -> netconfig.NetConfig:
    path = tmp_path / "net.yaml"
    path.write_text(textwrap.dedent(text))
    return netconfig.load(path)


def _error(tmp_path, text: str) -> str:
    with pytest.raises(ConfigError) as err:
        _load(tmp_path, text)
    return str(err.value)


def test_valid_three_switch_network(tmp_path):
    net = _load(tmp_path, three_switch_yaml([50001, 50002, 50003]))
    assert list(net.switches) == ["s1", "s2", "s3"]
    assert net.switches["s2"].grpc == "127.0.0.1:50002"
    assert net.switches["s1"].pipeline.p4info == P4INFO
    assert net.peer("s1", 2) == ("switch", "s3", 1)
    assert net.peer("s1", 1) == ("host", "h1", None)
    assert net.policy.udp_ports == [9290]          # from the shipped default policy
    assert net.policy.spray is True


def test_default_policy_file_is_the_shipped_one(tmp_path):
    net = _load(tmp_path, three_switch_yaml([1, 2, 3]))
    if netconfig.DEFAULT_POLICY_FILE.exists():
        assert net.policy.source == str(netconfig.DEFAULT_POLICY_FILE)
        names = [r.name for r in net.policy.priority_map]
        assert len(names) == len(set(names)) and names
        priorities = [r.priority for r in net.policy.priority_map]
        assert priorities == sorted(priorities, reverse=True) and priorities[-1] == 1


def test_inline_policy_overrides_key_by_key(tmp_path):
    net = _load(tmp_path, three_switch_yaml([1, 2, 3], extra=textwrap.dedent("""\
        policy:
          spray: false
          dlcp_udp_ports: [9290, 9300]
          thresholds:
            - {queues: [1, 2], mag_classes: [0, 1], drop_depth: 10, ecn_depth: 5}
        """)))
    assert net.policy.spray is False
    assert net.policy.udp_ports == [9290, 9300]
    assert net.policy.thresholds == {(q, m): (10, 5) for q in (1, 2) for m in (0, 1)}
    assert net.policy.priority_map  # still the default rules


def test_malformed_yaml_names_the_line(tmp_path):
    msg = _error(tmp_path, "switches:\n  s1: {grpc: [\n")
    assert msg.startswith(f"{tmp_path}/net.yaml:")
    assert "malformed YAML" in msg
    assert "\n" not in msg


def test_schema_error_names_key_and_line(tmp_path):
    text = three_switch_yaml([1, 2, 3]).replace('"127.0.0.1:2"', '"localhost"')
    msg = _error(tmp_path, text)
    assert msg.startswith(f"{tmp_path}/net.yaml:6: switches.s2.grpc: 'localhost' does not match")


def test_unknown_key_is_named_with_allowed_keys(tmp_path):
    text = three_switch_yaml([1, 2, 3]).replace("device_id: 2}", "device_id: 2, devce: 3}")
    msg = _error(tmp_path, text)
    assert msg.startswith(f"{tmp_path}/net.yaml:6: switches.s2.devce: unknown key (allowed: ")


def test_semantic_errors(tmp_path):
    text = three_switch_yaml([1, 2, 3]).replace("[s3:3, s2:2]", "[s3:3, s9:2]")
    assert ": links.2.1: unknown switch 's9'" in _error(tmp_path, text)
    text = three_switch_yaml([1, 2, 3]).replace("[s1:3, s3:2]", "[s1:1, s3:2]")
    assert "port s1:1 already used by host h1" in _error(tmp_path, text)
    text = three_switch_yaml([1, 2, 3]).replace("ip: 10.0.0.2", "ip: 10.0.0.1")
    assert ": hosts.h2.ip: 10.0.0.1 is already host h1" in _error(tmp_path, text)
    text = three_switch_yaml([1, 2, 3]).replace('"127.0.0.1:2", device_id: 2', '"127.0.0.1:1", device_id: 1')
    assert "switches.s2.grpc: 127.0.0.1:1 device 1 is already switch s1" in _error(tmp_path, text)


def test_routes_and_policy_errors(tmp_path):
    extra = "routes:\n  - {switch: s1, prefix: 10.9.0.0/16, ports: [7]}\n"
    msg = _error(tmp_path, three_switch_yaml([1, 2, 3], extra=extra))
    assert msg.endswith("routes.0.ports: port s1:7 is connected to nothing (no host or link)")
    extra = "routes:\n  - {switch: s1, prefix: 10.9.0.1/16, ports: [2]}\n"
    assert "routes.0.prefix: 10.9.0.1/16 has host bits set" in _error(tmp_path, three_switch_yaml([1, 2, 3], extra=extra))
    extra = ("policy:\n  thresholds:\n    - {queues: [1], mag_classes: [0], drop_depth: 1, ecn_depth: 1}\n"
             "    - {queues: [1], mag_classes: [0], drop_depth: 2, ecn_depth: 1}\n")
    msg = _error(tmp_path, three_switch_yaml([1, 2, 3], extra=extra))
    assert "policy.thresholds.1: (queue 1, mag_class 0) already set by an earlier block" in msg
    extra = "policy:\n  thresholds:\n    - {queues: [1], mag_classes: [0], drop_depth: 600000, ecn_depth: 1}\n"
    msg = _error(tmp_path, three_switch_yaml([1, 2, 3], extra=extra))
    assert "policy.thresholds.0.drop_depth: 600000 is greater than the maximum of 524287" in msg
    extra = "policy:\n  priority_map:\n    - {match: {layer_class: 9}, queue: 1}\n"
    msg = _error(tmp_path, three_switch_yaml([1, 2, 3], extra=extra))
    assert "policy.priority_map.0.match.layer_class: value 0x9 mask 0x7 does not fit the 3-bit field" in msg


def test_missing_pipeline_and_target_files(tmp_path):
    text = textwrap.dedent("""\
        switches:
          s1: {grpc: "127.0.0.1:1", device_id: 1}
        """)
    assert "switches.s1.pipeline: no p4info" in _error(tmp_path, text)
    text = textwrap.dedent("""\
        switches:
          s1: {grpc: "127.0.0.1:1", device_id: 1, target: tofino, pipeline: {p4info: a.txtpb}}
        """)
    assert "target tofino needs pipeline.program_name" in _error(tmp_path, text)


def test_duplicate_key_and_missing_file(tmp_path):
    msg = _error(tmp_path, "switches:\n  s1: {grpc: 'a:1', device_id: 1}\n  s1: {grpc: 'a:2', device_id: 2}\n")
    assert msg == f"{tmp_path}/net.yaml:3: switches.s1: duplicate key"
    with pytest.raises(ConfigError, match="missing.yaml: cannot read"):
        netconfig.load(tmp_path / "missing.yaml")


def test_relative_paths_resolve_against_the_yaml(tmp_path):
    text = textwrap.dedent("""\
        defaults: {pipeline: {p4info: build/dlcp.p4info.txtpb, config: build/dlcp.p4sim.json}}
        switches:
          s1: {grpc: "127.0.0.1:1", device_id: 1}
        """)
    net = _load(tmp_path, text)
    assert net.switches["s1"].pipeline.config == tmp_path / "build" / "dlcp.p4sim.json"


def test_route_errors_name_the_route_index_in_the_file(tmp_path):
    extra = ("routes:\n  - {switch: s1, prefix: 10.9.0.0/16, ports: [2]}\n"
             "  - {switch: s1, prefix: 10.8.0.0/16, ports: [2], sprey: true}\n")
    msg = _error(tmp_path, three_switch_yaml([1, 2, 3], extra=extra))
    assert msg == f"{tmp_path}/net.yaml:17: routes.1.sprey: unknown key (allowed: ports, prefix, spray, switch)"
    extra = "routes:\n  - {switch: s1, prefix: 10.9.0.0/16, ports: [2]}\n  - {switch: s1, prefix: 10.8.0.0/16, ports: [600]}\n"
    assert ": routes.1.ports.0: 600 is greater than the maximum of 510" in _error(tmp_path, three_switch_yaml([1, 2, 3], extra=extra))
