"""The per-pipe headers struct of generated TNA code (p4sim.tna.pipe_structs) on the Tofino DLCP
program: the egress pipe builds only the headers its code names, and a header it left out is
built fresh and invalid when something touches it (issue 15: the TNA path's per-packet cost).

Why this exists: the egress pipe used to build all nine headers per packet; leaving some out must
never change what a program sees, even when the source scan misses a use.
"""

from __future__ import annotations

from tests.dataplane.targets import compiled


def _egress_headers_class():
    ns = compiled("tna").instantiate().namespace
    return ns, ns["_NEW_egress_parser"][1]


def test_the_egress_pipe_builds_only_the_headers_its_code_names() -> None:
    ns, cls = _egress_headers_class()
    h = cls()
    built = {f for f in ("bridged_md", "ethernet", "ipv4", "ipv4_options", "tcp", "udp", "dlcp",
                         "packet_in", "packet_out") if _is_set(h, f)}
    assert built == {"bridged_md", "ethernet", "ipv4", "ipv4_options"}
    assert ns["_NEW_ingress_parser"][1] is ns["S_dlcp_tna_headers_t"]      # ingress names all nine


def _is_set(obj: object, slot: str) -> bool:
    descriptor = type(obj).__mro__[1].__dict__[slot]
    try:
        descriptor.__get__(obj)
    except AttributeError:
        return False
    return True


def test_a_header_left_out_is_built_fresh_and_invalid_on_first_use() -> None:
    ns, cls = _egress_headers_class()
    h = cls()
    tcp = h.tcp
    assert type(tcp) is ns["H_tcp_h"] and tcp._v is False and tcp.src_port == 0 and tcp.flags == 0
    tcp.src_port = 80
    assert h.tcp is tcp and h.tcp.src_port == 80          # built once, then an ordinary slot
    assert cls().tcp.src_port == 0                         # each packet's struct has its own
    copy = h._copy()                                       # whole-struct copy and compare still work
    assert copy._eq(h) and copy.udp._v is False
    h.udp._v = True
    assert not copy._eq(h)


def _fields(obj: object) -> dict[str, object]:
    """Every slot of ``obj`` (headers as their own field dicts), reading lazily built headers too."""
    out = {}
    for cls in type(obj).__mro__:
        for slot in getattr(cls, "__slots__", ()):
            value = getattr(obj, slot)
            out[slot] = _fields(value) if hasattr(type(value), "__slots__") else value
    return out


def test_fresh_builds_each_pipes_objects_as_their_classes_do_with_the_unwritten_presets() -> None:
    ns, _ = _egress_headers_class()
    for pipe, classes in (("ingress", ns["_NEW_ingress_parser"][1:] + (ns["_NEW_ingress"][4],)),
                          ("egress", ns["_NEW_egress_parser"][1:] + (ns["_NEW_egress"][5],))):
        first, second = ns[f"_FRESH_{pipe}"](), ns[f"_FRESH_{pipe}"]()
        assert [type(o) for o in first] == list(classes)
        assert all(a is not b for a, b in zip(first, second, strict=True))      # fresh per packet
        expected = [_fields(cls()) for cls in classes]
        if pipe == "ingress":       # Tofino: no unicast copy, no resubmission unless ingress writes them
            assert first[3].ucast_egress_port == 1 << 9 and first[5].resubmit_type == 1 << 3
            expected[3]["ucast_egress_port"], expected[5]["resubmit_type"] = 1 << 9, 1 << 3
        assert [_fields(o) for o in first] == expected


def test_an_egress_intrinsic_header_filled_beforehand_is_not_read_back_from_the_bytes() -> None:
    """``_PREFILL_egress``: the egress parser's first extract of eg_intr_md is skipped when the
    header comes valid (TnaPath filled it with what it would have packed in front of the packet);
    an invalid one is extracted from the bytes as before."""
    ns, _ = _egress_headers_class()
    assert ns["_PREFILL_egress"] is True
    parse = ns["_BLOCK_egress_parser"]
    eth = bytes.fromhex("0000000000aa" "0000000000bb" "86dd") + b"not ipv4"
    prefix = bytearray(27)
    prefix[0:2] = (7).to_bytes(2, "big")                    # egress_port 7 in the bytes
    bridged = bytes(9)
    for filled in (False, True):
        h, m, eg, prs, dpr, oport = ns["_FRESH_egress"]()
        if filled:
            eg.egress_port, eg.enq_qdepth, eg._v = 5, 1234, True
        off = parse(bytes(prefix) + bridged + eth, h, m, eg)
        assert off == 27 + 9 + 14 and h.ethernet._v and h.ethernet.ether_type == 0x86DD
        assert (eg._v, eg.egress_port, eg.enq_qdepth) == ((True, 5, 1234) if filled else (True, 7, 0))


def test_intrinsic_fields_nothing_reads_are_made_on_first_read_only() -> None:
    """``ingress_intrinsic_metadata_for_tm_t`` has 17 fields; the DLCP program and the TM model read
    six: only those are set per packet; another reads 0 when something asks."""
    ns, _ = _egress_headers_class()
    tm = ns["_FRESH_ingress"]()[3]
    assert {f for f in ("ucast_egress_port", "qid", "bypass_egress", "mcast_grp_a", "mcast_grp_b",
                        "copy_to_cpu", "rid", "level1_mcast_hash", "icos_for_copy_to_cpu") if _is_set(tm, f)} == {
        "ucast_egress_port", "qid", "bypass_egress", "mcast_grp_a", "mcast_grp_b", "copy_to_cpu"}
    assert tm.rid == 0 and _is_set(tm, "rid") and tm.ucast_egress_port == 1 << 9
