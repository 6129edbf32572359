/* p4sim's declaration of the Tofino2 Native Architecture (T2NA): tna.p4's declarations with
 * Tofino2's widths plus the ghost thread (GhostT, ghost_intrinsic_metadata_t) and Pipeline's
 * optional ghost control, as in the public t2na.p4 / tofino2_arch.p4. */
#ifndef _P4SIM_T2NA_P4_
#define _P4SIM_T2NA_P4_
#ifndef __TARGET_TOFINO__
#define __TARGET_TOFINO__ 2
#endif
#if __TARGET_TOFINO__ != 2
#error Target does not support tofino2 native architecture
#endif
#define P4SIM_TNA_GHOST 1
#include "tna.p4"
#endif
