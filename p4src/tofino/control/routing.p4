/*
 * routing.p4 (TNA) -- IPv4 LPM routing, ECMP (per flow or per packet) and
 * next-hop rewrite.  Same tables, keys, actions and @names as
 * p4src/bmv2/control/routing.p4, so one controller drives both.
 *
 * Why this file exists: forwarding is one feature.  TNA differences:
 *  - member index: Tofino has no run-time modulo, so a 16-bit Hash is cut
 *    into num_members equal ranges by the const table ecmp_member_select
 *    (uniform like BMv2's hash % n, not bit-identical);
 *  - spraying entropy: Hash over 5-tuple + dlcp.seq + dlcp.offset (as on
 *    BMv2), or the Random extern when compiled with -DDLCP_SPRAY_RANDOM;
 *  - ecmp_member_packets is an indexed Counter (index group_id*16 +
 *    member_index) instead of a direct counter: a TNA DirectCounter must be
 *    counted inside its table's actions, and route_to_nexthop is shared with
 *    ipv4_routes (one P4Info action for both, as the contract requires);
 *  - drops set ig_dprsr_md.drop_ctl.
 */

control Routing(inout dlcp_tna_headers_t hdr,
                inout dlcp_metadata_t meta,
                in ingress_intrinsic_metadata_t ig_intr_md,
                inout ingress_intrinsic_metadata_for_deparser_t ig_dprsr_md,
                inout ingress_intrinsic_metadata_for_tm_t ig_tm_md) {

    Hash<bit<16>>(HashAlgorithm_t.CRC16) flow_hash;
    Hash<bit<16>>(HashAlgorithm_t.CRC32) msg_hash;     /* DLCP per message (tensor) */
#ifdef DLCP_SPRAY_RANDOM
    Random<bit<16>>() spray_random;
#else
    Hash<bit<16>>(HashAlgorithm_t.CRC32) spray_hash;
#endif
    bit<16> member_hash;

    /* index group_id*16 + member_index (groups 0..255, members 0..15) */
    @name(".DlcpIngress.ecmp_member_packets")
    Counter<bit<64>, bit<12>>(ECMP_MEMBERS_SIZE, CounterType_t.PACKETS_AND_BYTES) ecmp_member_packets;

    @name(".DlcpIngress.drop")
    action drop() {
        meta.drop = 1;
        ig_dprsr_md.drop_ctl = 1;
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
    action set_nexthop(PortId_t port, mac_addr_t smac, mac_addr_t dmac) {
        ig_tm_md.ucast_egress_port = port;
        hdr.ethernet.src_addr = smac;
        hdr.ethernet.dst_addr = dmac;
        hdr.ipv4.ttl = hdr.ipv4.ttl - 1;
    }

    action set_member_index(bit<8> index) {
        meta.ecmp_member_index = index;
    }

    /* Installed by the controller from the network YAML. */
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

    /* Installed by the controller: member count and spray flag per group. */
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

    /* Compiled in (const): hash range -> member index for 1..16 members.
     * Tofino only; nobody installs it. */
    table ecmp_member_select {
        key = {
            meta.ecmp_num_members : exact;
            member_hash           : range;
        }
        actions = {
            set_member_index;
        }
        const entries = {
#include "ecmp_index_entries.p4"
        }
        size = 256;
    }

    /* Installed by the controller: one entry per (group, member index). */
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
        size = ECMP_MEMBERS_SIZE;
    }

    /* Installed by the controller from the network YAML: one per neighbour. */
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
            drop();
            return;
        }
        ipv4_routes.apply();
        if (meta.use_group == 1) {
            ecmp_groups.apply();
            if (meta.ecmp_spray == 1 && meta.is_dlcp == 1
                    && meta.msg_type == DLCP_MSG_DATA) {
#ifdef DLCP_SPRAY_RANDOM
                member_hash = spray_random.get();
#else
                member_hash = spray_hash.get({ hdr.ipv4.src_addr, hdr.ipv4.dst_addr,
                                               hdr.ipv4.protocol,
                                               meta.l4_src_port, meta.l4_dst_port,
                                               hdr.dlcp.seq, hdr.dlcp.offset });
#endif
            } else if (meta.is_dlcp == 1 && hdr.dlcp.isValid()) {
                /* Per message, as on BMv2: all DLCP endpoints share one UDP
                 * port, so the 5-tuple gives per-flow ECMP no entropy; a
                 * tensor (job, worker, iteration, tensor id) keeps one path. */
                member_hash = msg_hash.get({ hdr.ipv4.src_addr, hdr.ipv4.dst_addr,
                                             hdr.ipv4.protocol,
                                             meta.l4_src_port, meta.l4_dst_port,
                                             hdr.dlcp.job_id, hdr.dlcp.worker_id,
                                             hdr.dlcp.iteration, hdr.dlcp.tensor_id });
            } else {
                member_hash = flow_hash.get({ hdr.ipv4.src_addr, hdr.ipv4.dst_addr,
                                              hdr.ipv4.protocol,
                                              meta.l4_src_port, meta.l4_dst_port });
            }
            if (ecmp_member_select.apply().hit) {
                if (ecmp_members.apply().hit) {
                    ecmp_member_packets.count(meta.group_id[7:0] ++ meta.ecmp_member_index[3:0]);
                }
            } else {
                drop();             /* 0 or more than 16 members */
            }
        }
        if (meta.has_nexthop == 1 && meta.drop == 0) {
            nexthops.apply();
        }
        if (meta.has_nexthop == 0) {
            drop();
        }
    }
}
