"""Per-packet spraying end to end through P4Runtime on a p4sim switch: DLCP DATA of one flow
spreads over all members of a 4-way group (chi-square, 3 degrees of freedom, significance
0.001), a TCP flow stays on one member, the per-member direct counters read over P4Runtime
add up, and a membership change written over P4Runtime applies to the next packets.
"""

from __future__ import annotations

import pytest
from p4.v1 import p4runtime_pb2

from tests.dataplane.p4rt_rig import Rig
from tests.dataplane.packets import SWITCH_MAC, dlcp_packet, host_mac, tcp_packet

CHI2_3DOF_P001 = 16.266
MEMBERS = [3, 4, 5, 6]          # next hop id = port


def mac(text: str) -> int:
    return int(text.replace(":", ""), 16)


@pytest.fixture
def rig(dlcp_program):
    r = Rig(dlcp_program)
    yield r
    r.close()


def test_spraying_and_membership_change_over_p4runtime(rig) -> None:
    from controller import dlcp_tables as dt

    ix = rig.index
    insert, modify, delete = (p4runtime_pb2.Update.INSERT, p4runtime_pb2.Update.MODIFY,
                              p4runtime_pb2.Update.DELETE)
    rig.write(insert, [dt.nexthop(ix, p, p, mac(SWITCH_MAC), mac(host_mac(p))) for p in MEMBERS])
    rig.write(insert, [dt.ecmp_group(ix, 1, len(MEMBERS), True)])
    rig.write(insert, [dt.ecmp_member(ix, 1, i, p) for i, p in enumerate(MEMBERS)])
    rig.write(insert, [dt.route(ix, "10.0.9.0/24", group=1)])

    n = 400
    for i in range(n):
        rig.peers[1].send(dlcp_packet(dst_port=9, seq=i, offset=i * 64))
    sprayed = rig.received_on(MEMBERS, n, timeout=10.0)
    assert sum(sprayed.values()) == n
    expected = n / len(MEMBERS)
    chi2 = sum((c - expected) ** 2 / expected for c in sprayed.values())
    assert min(sprayed.values()) > 0 and chi2 < CHI2_3DOF_P001, (sprayed, chi2)

    for i in range(100):
        rig.peers[1].send(tcp_packet(dst_port=9, seq=1000 + 1460 * i))
    tcp = rig.received_on(MEMBERS, 100, timeout=10.0)
    assert sorted(tcp.values()) == [0, 0, 0, 100]

    table_id = ix.table(dt.ECMP_MEMBERS).preamble.id
    entries = rig.client.read_table_entries(table_id, counter_data=True)
    assert len(entries) == 4
    assert sum(e.counter_data.packet_count for e in entries) == n + 100

    # shrink the group to members (5, 6): group size first, then the member entries
    rig.write(modify, [dt.ecmp_group(ix, 1, 2, True)])
    rig.write(modify, [dt.ecmp_member(ix, 1, 0, 5), dt.ecmp_member(ix, 1, 1, 6)])
    rig.write(delete, [dt.ecmp_member(ix, 1, 2, 5), dt.ecmp_member(ix, 1, 3, 6)])
    for i in range(100):
        rig.peers[1].send(dlcp_packet(dst_port=9, seq=n + i, offset=(n + i) * 64))
    after = rig.received_on(MEMBERS, 100, timeout=10.0)
    assert after[3] == after[4] == 0 and after[5] > 0 and after[6] > 0 and after[5] + after[6] == 100
