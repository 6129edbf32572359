/*
 * routing.p4 (v1model) -- IPv4 LPM routing, ECMP (per flow or per packet)
 * and next-hop rewrite (MACs, TTL, egress port).
 *
 * Why this file exists: forwarding is one feature; every table of it is
 * here so their shared actions (route_to_nexthop, drop) are declared once.
 * All names are global (@name(".DlcpIngress.x")) so P4Info shows exactly the
 * names of docs/contracts-dlcp.md and the Tofino program uses the same ones.
 */

control Routing(inout dlcp_headers_t hdr,
                inout dlcp_metadata_t meta,
                inout standard_metadata_t standard_metadata) {

    /* Per-member packet/byte counts: shows the controller how evenly a
     * group is used (and lets the spraying tests check it). */
    @name(".DlcpIngress.ecmp_member_packets")
    direct_counter(CounterType.packets_and_bytes) ecmp_member_packets;

    @name(".DlcpIngress.drop")
    action drop() {
        meta.drop = 1;
        mark_to_drop(standard_metadata);
    }

    @name(".DlcpIngress.route_to_nexthop")
    action route_to_nexthop(bit<16> nexthop_id) {
        meta.has_nexthop = 1;
        meta.nexthop_id = nexthop_id;
    }

    @name(".DlcpIngress.route_to_group")
    action route_to_group(bit<16> group_id) {
        meta.use_group = 1;
        meta.group_id = group_id;
    }

    @name(".DlcpIngress.set_ecmp_group")
    action set_ecmp_group(bit<8> num_members, bit<1> spray) {
        meta.ecmp_num_members = num_members;
        meta.ecmp_spray = spray;
    }

    @name(".DlcpIngress.set_nexthop")
    action set_nexthop(dlcp_port_t port, mac_addr_t smac, mac_addr_t dmac) {
        standard_metadata.egress_spec = port;
        hdr.ethernet.src_addr = smac;
        hdr.ethernet.dst_addr = dmac;
        hdr.ipv4.ttl = hdr.ipv4.ttl - 1;
    }

    /* Installed by the controller from the network YAML (one entry per
     * destination prefix): a prefix leads to one next hop or an ECMP group.
     * Misses are dropped: the switch is a router, not a flood domain. */
    @name(".DlcpIngress.ipv4_routes")
    table ipv4_routes {
        key = {
            hdr.ipv4.dst_addr : lpm @name("ipv4_dst");
        }
        actions = {
            route_to_nexthop;
            route_to_group;
            drop;
        }
        default_action = drop();
        size = IPV4_ROUTES_SIZE;
    }

    /* Installed by the controller from the network YAML: one entry per group
     * (member count, and whether DLCP DATA is sprayed per packet). */
    @name(".DlcpIngress.ecmp_groups")
    table ecmp_groups {
        key = {
            meta.group_id : exact @name("group_id");
        }
        actions = {
            set_ecmp_group;
            drop;
        }
        default_action = drop();
        size = ECMP_GROUPS_SIZE;
    }

    /* Installed by the controller: member_index 0..num_members-1 of each
     * group, each pointing at a next hop.  Changing membership = rewriting
     * these entries and the group's num_members; it applies to the next
     * packet. */
    @name(".DlcpIngress.ecmp_members")
    table ecmp_members {
        key = {
            meta.group_id          : exact @name("group_id");
            meta.ecmp_member_index : exact @name("member_index");
        }
        actions = {
            route_to_nexthop;
            drop;
        }
        default_action = drop();
        counters = ecmp_member_packets;
        size = ECMP_MEMBERS_SIZE;
    }

    /* Installed by the controller from the network YAML: one entry per
     * neighbour (port, our MAC, its MAC). */
    @name(".DlcpIngress.nexthops")
    table nexthops {
        key = {
            meta.nexthop_id : exact @name("nexthop_id");
        }
        actions = {
            set_nexthop;
            drop;
        }
        default_action = drop();
        size = NEXTHOPS_SIZE;
    }

    apply {
        if (hdr.ipv4.ttl <= 1) {
            drop();                 /* TTL would reach 0 */
            return;
        }
        ipv4_routes.apply();
        if (meta.use_group == 1) {
            ecmp_groups.apply();
            if (meta.ecmp_num_members == 0) {
                drop();             /* a group without members */
            }
            if (meta.drop == 0) {
                if (meta.ecmp_spray == 1 && meta.is_dlcp == 1
                        && meta.msg_type == DLCP_MSG_DATA) {
                    /* Per packet: DLCP DATA carries its own offset, so
                     * order does not matter; seq and offset differ per
                     * packet and give the entropy (BMv2 has no random
                     * hash algorithm). */
                    hash(meta.ecmp_member_index, HashAlgorithm.crc32, (bit<8>)0,
                         { hdr.ipv4.src_addr, hdr.ipv4.dst_addr, hdr.ipv4.protocol,
                           meta.l4_src_port, meta.l4_dst_port,
                           hdr.dlcp.seq, hdr.dlcp.offset },
                         (bit<16>)meta.ecmp_num_members);
                } else if (meta.is_dlcp == 1 && hdr.dlcp.isValid()) {
                    /* Per message: every DLCP endpoint uses the same UDP
                     * port, so the 5-tuple of all DLCP traffic between two
                     * hosts is one "flow" and per-flow ECMP has no entropy
                     * (ecmp-collision: all of a leaf's DLCP data on one
                     * uplink). A tensor (job, worker, iteration, tensor id)
                     * is DLCP's connection: its packets (and its PROBE) keep
                     * one path and their order, as a TCP flow's do. */
                    hash(meta.ecmp_member_index, HashAlgorithm.crc32, (bit<8>)0,
                         { hdr.ipv4.src_addr, hdr.ipv4.dst_addr, hdr.ipv4.protocol,
                           meta.l4_src_port, meta.l4_dst_port,
                           hdr.dlcp.job_id, hdr.dlcp.worker_id,
                           hdr.dlcp.iteration, hdr.dlcp.tensor_id },
                         (bit<16>)meta.ecmp_num_members);
                } else {
                    /* Per flow (5-tuple): TCP never sees reordering. */
                    hash(meta.ecmp_member_index, HashAlgorithm.crc16, (bit<8>)0,
                         { hdr.ipv4.src_addr, hdr.ipv4.dst_addr, hdr.ipv4.protocol,
                           meta.l4_src_port, meta.l4_dst_port },
                         (bit<16>)meta.ecmp_num_members);
                }
                ecmp_members.apply();
            }
        }
        if (meta.has_nexthop == 1 && meta.drop == 0) {
            nexthops.apply();
        }
        if (meta.has_nexthop == 0) {
            drop();                 /* a route that led nowhere */
        }
    }
}
