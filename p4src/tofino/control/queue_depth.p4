/*
 * queue_depth.p4 (TNA) -- queue-depth recording.
 *
 * Why this file exists: the selective-drop rule needs the depth of the queue
 * a packet is headed for.  Two sources, chosen at compile time:
 *  - Tofino2 (__TARGET_TOFINO__ == 2): the ghost thread reports every
 *    queue's length to the ingress pipe; DlcpGhost writes it into
 *    ghost_qdepth (index = physical queue id), which ingress reads
 *    (selective_drop.p4).  Declared at top level so both controls share it.
 *  - Both: egress records deq_qdepth per (port, queue) in queue_depth_reg,
 *    the same observability register as on BMv2 (for the controller; on
 *    Tofino1 ingress cannot read an egress register, so Tofino1 drops in
 *    egress instead, against the exact enq_qdepth).
 * Both are the packet's OWN queue's depth (Tofino has per-queue depth
 * natively) and neither can go stale, so BMv2's estimate from deq_timedelta
 * and the port's drain rate, and its timestamped records (queue_depth_ts_reg,
 * port_depth_reg, port_depth_ts_reg), have no Tofino counterpart;
 * DlcpIngress.depth_settings and DlcpEgress.port_drain exist here for API
 * symmetry only (the controller installs both the same way; values unused).
 */

#if __TARGET_TOFINO__ == 2
Register<bit<32>, bit<11>>(2048) ghost_qdepth;

control DlcpGhost(in ghost_intrinsic_metadata_t gh_intr_md) {
    RegisterAction<bit<32>, bit<11>, bit<32>>(ghost_qdepth) update_depth = {
        void apply(inout bit<32> value) {
            value = (bit<32>)gh_intr_md.qlength;
        }
    };

    apply {
        update_depth.execute(gh_intr_md.qid);
    }
}
#endif

control QueueDepthRecord(in dlcp_tna_headers_t hdr,
                         in dlcp_eg_metadata_t meta,
                         in egress_intrinsic_metadata_t eg_intr_md) {

    /* index port*8 + queue; value = last deq_qdepth (cells) */
    @name(".queue_depth_reg")
    Register<bit<32>, bit<12>>(PORT_QUEUE_CELLS) queue_depth_reg;

    RegisterAction<bit<32>, bit<12>, bit<32>>(queue_depth_reg) record_depth = {
        void apply(inout bit<32> value) {
            value = (bit<32>)eg_intr_md.deq_qdepth;
        }
    };

    @name(".DlcpEgress.set_port_drain")
    action set_port_drain(bit<32> pkts_per_s) {
    }

    /* Installed by the controller as on BMv2 (one entry per port it knows
     * the rate of).  API symmetry only: BMv2 estimates a queue's depth from
     * the time its packets waited and this rate; Tofino reads real per-queue
     * depths, so the value is unused. */
    @name(".DlcpEgress.port_drain")
    table port_drain {
        key = {
            eg_intr_md.egress_port : exact @name("egress_port");
        }
        actions = {
            set_port_drain;
            @defaultonly NoAction;
        }
        default_action = NoAction();
        size = PORT_DRAIN_SIZE;
    }

    apply {
        port_drain.apply();
        record_depth.execute(eg_intr_md.egress_port ++ hdr.bridged_md.queue);
    }
}
