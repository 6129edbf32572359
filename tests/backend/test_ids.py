"""P4Runtime ids and aliases exactly as p4c assigns them (no front end needed)."""

from __future__ import annotations

import pytest

from p4sim.backend import ids
from p4sim.errors import UserError


def test_jenkins_hash_matches_p4c_ids_of_the_p4_tutorials_basic_program():
    # ids p4c printed in p4lang/tutorials exercises/basic (basic.p4info.txtpb)
    assert ids.ACTION << 24 | ids.jenkins_one_at_a_time("NoAction") & 0xFFFFFF == 21257015
    assert ids.TABLE << 24 | ids.jenkins_one_at_a_time("MyIngress.ipv4_lpm") & 0xFFFFFF == 37375156
    assert ids.ACTION << 24 | ids.jenkins_one_at_a_time("MyIngress.drop") & 0xFFFFFF == 25652968
    assert ids.ACTION << 24 | ids.jenkins_one_at_a_time("MyIngress.ipv4_forward") & 0xFFFFFF == 28792405


def test_prefixes_come_from_p4info_proto():
    assert (ids.ACTION, ids.TABLE, ids.VALUE_SET, ids.CONTROLLER_HEADER) == (1, 2, 3, 4)
    assert (ids.ACTION_PROFILE, ids.COUNTER, ids.DIRECT_COUNTER, ids.METER, ids.DIRECT_METER,
            ids.REGISTER, ids.DIGEST) == (0x11, 0x12, 0x13, 0x14, 0x15, 0x16, 0x17)


def test_explicit_id_gets_prefix_and_hashed_names_probe_past_it():
    alloc = ids.IdAllocator()
    hashed = ids.TABLE << 24 | ids.jenkins_one_at_a_time("c.t") & 0xFFFFFF
    alloc.add(ids.TABLE, "c.t")
    alloc.add(ids.TABLE, "c.u", explicit=hashed & 0xFFFFFF)   # steals c.t's natural id
    alloc.finish()
    assert alloc.get(ids.TABLE, "c.u") == hashed
    assert alloc.get(ids.TABLE, "c.t") == hashed + 1


def test_explicit_id_with_wrong_prefix_is_a_user_error():
    alloc = ids.IdAllocator()
    with pytest.raises(UserError, match="wrong 8-bit prefix"):
        alloc.add(ids.TABLE, "c.t", explicit=0x01000005)


def test_duplicate_explicit_id_is_a_user_error():
    alloc = ids.IdAllocator()
    alloc.add(ids.TABLE, "a", explicit=5)
    with pytest.raises(UserError, match="multiple declarations"):
        alloc.add(ids.TABLE, "b", explicit=5)


def test_aliases_are_shortest_unique_suffixes():
    al = ids.shortest_unique_suffixes(["MyIngress.t", "MyEgress.t", "MyIngress.drop", "NoAction"])
    assert al == {"MyIngress.t": "MyIngress.t", "MyEgress.t": "MyEgress.t", "MyIngress.drop": "drop",
                  "NoAction": "NoAction"}
