"""The hand-written DLCP P4Info (``fixtures/dlcp.p4info.txtpb``, used by the pure unit tests) is
the P4Info p4sim compiles from ``p4src/bmv2/dlcp.p4`` on everything the controller programs or
reads: tables, their match fields and actions with every field/param id and width, table sizes,
action scopes, direct counters, counters, registers, the (absent) value sets and depth_settings' default.

Only ids of top-level objects may differ (p4c/p4sim hash names into ids; the fixture numbers them
in order): every reference is compared by name, so the unit tests' encodings hold on the switch.
"""

from __future__ import annotations

from ctl_support import P4INFO
from device_switch import dlcp_program
from p4.config.v1 import p4info_pb2

from controller import dlcp_tables as api
from controller.p4info_index import P4InfoIndex, load_p4info

TABLES = (*api.TABLE_ORDER, api.DEPTH_SETTINGS)
COUNTERS = (api.PORT_QUEUE_TX, api.SELECTIVE_DROPS, api.ECN_MARKS, api.MALFORMED, api.EGRESS_SAFETY_DROPS)
REGISTERS = (api.QUEUE_DEPTH_REG, api.PORT_DEPTH_REG)


def _action(idx: P4InfoIndex, action_id: int) -> tuple:
    a = next(a for a in idx.p4info.actions if a.preamble.id == action_id)
    return a.preamble.name, tuple((p.id, p.name, p.bitwidth) for p in a.params)


def controller_view(p4info: p4info_pb2.P4Info) -> dict:
    """Everything the controller relies on, ids of top-level objects replaced by their names."""
    idx = P4InfoIndex(p4info)
    view: dict = {}
    for name in TABLES:
        t = idx.table(name)
        view[name] = {
            "match": [(m.id, m.name, m.bitwidth, m.match_type) for m in t.match_fields],
            "actions": sorted((_action(idx, r.id), r.scope) for r in t.action_refs),
            "direct": sorted(idx.name_of(d) for d in t.direct_resource_ids),
            "size": t.size, "const": t.is_const_table, "const_default": t.const_default_action_id != 0,
        }
    d = idx.table(api.DEPTH_SETTINGS).initial_default_action   # the controller MODIFYs this default
    view["depth_settings default"] = (_action(idx, d.action_id)[0],
                                      [(a.param_id, a.value) for a in d.arguments])
    for name in COUNTERS:
        c = idx.counter(name)
        view[name] = (c.spec.unit, c.size)
    dc = idx.direct_counter(api.ECMP_MEMBER_PACKETS)
    view[api.ECMP_MEMBER_PACKETS] = (dc.spec.unit, idx.name_of(dc.direct_table_id))
    for name in REGISTERS:
        r = idx.register(name)
        view[name] = (r.type_spec.bitstring.bit.bitwidth, r.size)
    view["value_sets"] = [v.preamble.name for v in p4info.value_sets]   # none: P4Runtime cannot write them on BMv2
    return view


def test_fixture_p4info_is_what_p4sim_compiles_for_the_controller():
    compiled = controller_view(dlcp_program().p4info)
    fixture = controller_view(load_p4info(P4INFO))
    assert fixture.keys() == compiled.keys()
    for key in compiled:
        assert fixture[key] == compiled[key], key


def test_the_comparison_sees_a_one_bit_difference():
    changed = p4info_pb2.P4Info()
    changed.CopyFrom(load_p4info(P4INFO))
    action = next(a for a in changed.actions if a.preamble.name == "DlcpIngress.set_thresholds")
    action.params[1].bitwidth += 1
    assert controller_view(changed)[api.DROP_THRESHOLDS] != controller_view(dlcp_program().p4info)[api.DROP_THRESHOLDS]
