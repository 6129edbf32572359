"""Port metadata set on the packet path (``TnaPath.set_port_metadata``) is what P4Runtime reads of
the ``$PORT_METADATA`` table return, over real gRPC (issue 15's loose end).

Why this exists: the table kept its entries apart from the dict the packet path reads, so port
metadata set through ``set_port_metadata`` steered packets while reads listed nothing (and an
INSERT for that port was accepted, a MODIFY refused). Now the dict is the table's only store.
Runs tna_resubmit (its parser reads (f1, f2) with port_metadata_unpack) on Tofino1, where the
header fills the 64 bits of port metadata, and Tofino2, where it is the first 64 of 192.
"""

from __future__ import annotations

import pytest
from scapy.layers.inet import IP
from scapy.layers.l2 import Ether

from tests.tna.test_public_tna_examples import P4, PUBLIC, entity, extern_entity, port_md_update, unpacked

F1, F2 = 0x11223344, 0x55667788


@pytest.mark.parametrize("arch", ["tna", "t2na"])
def test_port_metadata_from_the_packet_path_is_what_p4runtime_reads(arch: str) -> None:
    from p4.v1 import p4runtime_pb2

    from controller.errors import WriteError
    from p4sim.tna import extern_messages as xm
    from p4sim.tna.program import compile_tna
    from tests.dataplane.p4rt_rig import Rig

    Update = p4runtime_pb2.Update
    rig = Rig(compile_tna(str(PUBLIC / "tna_resubmit" / "tna_resubmit.p4"), [str(PUBLIC)], arch))
    try:
        p4 = P4(rig)
        (pm,) = [i.preamble.id for e in p4.info.externs if e.extern_type_id == xm.PORT_METADATA_TYPE_ID
                 for i in e.instances]

        def table() -> dict[int, int]:
            got = p4.read(extern_entity(xm.PORT_METADATA_TYPE_ID, pm))
            return {e.ingress_port: int.from_bytes(e.data.bitstring, "big")
                    for e in (unpacked(g, xm.PortMetadataEntry) for g in got)}

        # pass_one(ingress port 1, f1, f2) -> no_resub: forwarded only with that port metadata
        hit = p4runtime_pb2.TableEntry(table_id=p4.table("pass_one"))
        hit.action.action.action_id = p4.action("no_resub")
        for fid, value in enumerate(((1).to_bytes(2, "big"), F1.to_bytes(4, "big"), F2.to_bytes(4, "big")), 1):
            hit.match.add(field_id=fid).exact.value = value
        p4.write(Update.INSERT, [entity(table_entry=hit)])
        pkt = bytes(Ether(dst="00:01:02:03:04:05", src="00:06:07:08:09:0a") / IP(src="192.168.0.1", dst="192.168.0.2"))
        assert table() == {} and rig.send_and_collect(pkt, 1.0, port=1) == []

        rig.device.path.set_port_metadata(1, ((F1 << 32) | F2).to_bytes(8, "big"))
        assert len(rig.send_and_collect(pkt, 5.0, port=1)) == 1                # the data plane uses it
        assert table() == {1: (F1 << 32) | F2}                                   # ... and reads show it
        with pytest.raises(WriteError, match="ingress port 1 already has an entry"):
            rig.client.write([port_md_update(pm, Update.INSERT, 1, b"\x01")])
        rig.client.write([port_md_update(pm, Update.MODIFY, 1, ((F1 << 32) | 9).to_bytes(8, "big"))])
        assert table() == {1: (F1 << 32) | 9} and rig.send_and_collect(pkt, 1.0, port=1) == []
        rig.client.write([port_md_update(pm, Update.DELETE, 1)])
        assert table() == {} and 1 not in rig.device.path.port_metadata
    finally:
        rig.close()
