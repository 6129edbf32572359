/*
 * queue_depth.p4 (v1model) -- the per (port, queue) depth estimate, the
 * egress code that records it, the port drain-rate table it needs and the
 * egress repeat of the selective-drop check.
 *
 * Why this file exists: v1model ingress cannot see queue depths, so egress
 * records one for every packet it sends, and ingress (selective_drop.p4)
 * reads the last record of the packet's (egress port, queue).
 *
 * What is recorded: BMv2 (and p4sim, which follows it) report in
 * enq_qdepth/deq_qdepth the whole PORT's occupancy, all 8 priority queues
 * together; a backlog of ordinary traffic in queue 0 then looked like
 * congestion to DLCP packets in strict-priority queue 6, which are served
 * first and barely wait (measured in Mininet: selective drops and ECN marks
 * of queue 6 caused by queue 0).  The per-queue signal BMv2 does have is
 * deq_timedelta, the microseconds the packet waited in ITS queue: under
 * strict priority it reflects only what is served before that queue.  Egress
 * converts it into packets of queue depth with the port's drain rate
 * (DlcpEgress.port_drain, full-size packets per second):
 *     depth = (deq_timedelta_us * pkts_per_s) >> 20      (~ / 1,000,000)
 * so the policy's thresholds keep their unit (packets of queue depth).  The
 * record is stamped with egress_global_timestamp; ingress treats a record
 * older than DlcpIngress.depth_settings' max age as 0, so a queue that went
 * quiet after a deep record cannot black-hole its own traffic.
 * Declared at top level so both controls share them.  The controller only
 * reads them (p4sim; BMv2's P4Runtime cannot read registers).
 */

/* index port*8 + queue; value = depth estimate (packets) from the deq_timedelta
 * of the last packet of that (port, queue): what ingress drops and marks on */
register<qdepth_t>(PORT_QUEUE_CELLS) queue_depth_reg;
/* index port*8 + queue; value = egress_global_timestamp (us) of that record */
register<bit<48>>(PORT_QUEUE_CELLS) queue_depth_ts_reg;
/* index port; value = deq_qdepth (whole port, all queues) of the last packet
 * dequeued on the port, and its time.  Display only (controller stats). */
register<qdepth_t>(PORT_CELLS) port_depth_reg;
register<bit<48>>(PORT_CELLS) port_depth_ts_reg;

control QueueDepthRecord(inout dlcp_headers_t hdr,
                         inout dlcp_metadata_t meta,
                         inout standard_metadata_t standard_metadata) {

    /* index queue*16 + mag_class */
    @name(".DlcpEgress.egress_safety_drops")
    counter(QUEUE_MAG_CELLS, CounterType.packets_and_bytes) egress_safety_drops;

    bit<32> drain_pps = DLCP_PORT_DRAIN_PPS_DEFAULT;

    @name(".DlcpEgress.set_port_drain")
    action set_port_drain(bit<32> pkts_per_s) {
        drain_pps = pkts_per_s;
    }

    /* Installed by the controller, one entry per port whose rate it knows:
     * full-size (MTU) packets the port transmits per second.  No entry: the
     * compiled-in DLCP_PORT_DRAIN_PPS_DEFAULT (20 Mbit/s, 1500-byte packets). */
    @name(".DlcpEgress.port_drain")
    table port_drain {
        key = {
            standard_metadata.egress_port : exact @name("egress_port");
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
        bit<64> product = (bit<64>)standard_metadata.deq_timedelta * (bit<64>)drain_pps;
        bit<64> estimate = product >> 20;
        qdepth_t depth = (qdepth_t)estimate;
        if (estimate > 64w0x7FFFF) {
            depth = 19w0x7FFFF;             /* saturate at the bit<19> maximum */
        }
        bit<32> depth_index = ((bit<32>)standard_metadata.egress_port << DLCP_QUEUE_SHIFT)
                              + (bit<32>)meta.queue;
        queue_depth_reg.write(depth_index, depth);
        queue_depth_ts_reg.write(depth_index, standard_metadata.egress_global_timestamp);
        bit<32> port_index = (bit<32>)standard_metadata.egress_port;
        port_depth_reg.write(port_index, (qdepth_t)standard_metadata.deq_qdepth);
        port_depth_ts_reg.write(port_index, standard_metadata.egress_global_timestamp);

        /* Safety net: the ingress record is one packet stale (or aged out);
         * this packet's own wait is exact.  Same rule as ingress, same
         * thresholds (carried in metadata from the ingress drop_thresholds
         * lookup), same estimate. */
        if (meta.has_thresholds == 1
                && meta.msg_type == DLCP_MSG_DATA
                && (meta.flags & DLCP_FLAG_CRITICAL) == 0
                && depth > meta.drop_depth) {
            meta.drop = 1;
            mark_to_drop(standard_metadata);
            egress_safety_drops.count(((bit<32>)meta.queue << DLCP_MAG_CLASS_SHIFT)
                                      + (bit<32>)meta.mag_class);
        }
    }
}
