/*
 * priority_mapping.p4 (v1model) -- DLCP tags -> strict-priority egress queue,
 * mirrored into the IPv4 DSCP.
 *
 * Why this file exists: the layer-class -> queue policy is data (the
 * priority_map table), not code, so operators can re-rank layers per job.
 */

control PriorityMapping(inout dlcp_headers_t hdr,
                        inout dlcp_metadata_t meta,
                        inout standard_metadata_t standard_metadata) {

    @name(".DlcpIngress.set_queue")
    action set_queue(bit<3> queue) {
        meta.queue = queue;
        standard_metadata.priority = queue;
    }

    /* Installed by the controller from controller/data/default_policy.yaml
     * (or an operator's policy): ternary rules over the DLCP tags with
     * priorities, e.g. "control messages -> 7", "layer class 6 -> queue 6".
     * Non-DLCP traffic (is_dlcp = 0) hits the default, queue 0. */
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
            /* Class selector CS<queue>: fixed-function DSCP-queueing
             * switches downstream keep a useful subset of the order. */
            hdr.ipv4.dscp = ((bit<6>)meta.queue) << DSCP_CS_SHIFT;
        }
    }
}
