/*
 * priority_mapping.p4 (TNA) -- DLCP tags -> egress queue (ig_tm_md.qid),
 * mirrored into the IPv4 DSCP.  Same table/action names as on BMv2.
 *
 * Why this file exists: the layer-class -> queue policy is data, installed
 * by the controller; the TM's queues on the egress port must be configured
 * strict priority (queue 7 highest) by the SDE port setup.
 */

control PriorityMapping(inout dlcp_tna_headers_t hdr,
                        inout dlcp_metadata_t meta,
                        inout ingress_intrinsic_metadata_for_tm_t ig_tm_md) {

    @name(".DlcpIngress.set_queue")
    action set_queue(bit<3> queue) {
        meta.queue = queue;
        ig_tm_md.qid = (QueueId_t)queue;
    }

    /* Installed by the controller from the policy (default_policy.yaml). */
    @name(".DlcpIngress.priority_map")
    table priority_map {
        key = {
            meta.is_dlcp     : ternary @name("is_dlcp");
            meta.msg_type    : ternary @name("msg_type");
            meta.layer_class : ternary @name("layer_class");
            meta.mag_class   : ternary @name("mag_class");
            meta.flags       : ternary @name("flags");
        }
        actions = {
            set_queue;
        }
        default_action = set_queue(DLCP_DEFAULT_QUEUE);
        size = PRIORITY_MAP_SIZE;
    }

    apply {
        priority_map.apply();
        if (meta.is_dlcp == 1) {
            hdr.ipv4.dscp = ((bit<6>)meta.queue) << DSCP_CS_SHIFT;
        }
    }
}
