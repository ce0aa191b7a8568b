/* hardware/cluster_spec-private.h — helpers shared by the two halves of the scenario
 * hardware parser: [cluster] (hardware/cluster_spec.c) and [node.NAME]
 * (hardware/cluster_spec_node.c); defined in the leaf hardware/cluster_spec_keys.c. Not a
 * public header: nothing outside those files includes it. Errors are GErrors as described
 * in cluster_spec.h, prefixed "group [G], key 'K': " unless said otherwise.
 */
#pragma once

#include <glib.h>
#include "hardware/cluster.h"
#include "hardware/cluster_spec.h"

/* The stripped value of `key` in `group`; NULL + error (prefixed with group and key). */
char *hw_spec_get_value (GKeyFile *kf, const char *group, const char *key, GError **error);
/* Applies every figure key among `keys` of `group` to `spec`, in file order; other keys
 * (node, gpu, base, nodes, …) are skipped. */
gboolean hw_spec_apply_figures (HwNodeSpec *spec, GKeyFile *kf, const char *group, char **keys,
                                GError **error);
/* Fails on the first of `keys` not in `valid` (NULL-terminated), naming the nearest one. */
gboolean hw_spec_check_known_keys (char **keys, const char *group, const char *const *valid,
                                   GError **error);
/* The GPU named by `key` of `group`: a [gpu.NAME] group of the file, else a catalog GPU;
 * new spec or NULL + error (prefixed with group and key). */
HwGpuSpec *hw_spec_gpu_from_key (GKeyFile *kf, const char *group, const char *key,
                                 GError **error);
/* A node built around a bare GPU takes the α of its final intra-node connection unless
 * `group` sets intra_latency itself. */
void hw_spec_default_intra_latency (HwNodeSpec *spec, GKeyFile *kf, const char *group);
/* The range of the node figure `key` (a bandwidth, capacity, latency, power or
 * link_efficiency; SI units): NULL when it accepts `v`, else the accepted values in words
 * ("0 (none) or from 100 MB/s to 1000 TB/s"), what both the reader's message ("'TEXT' must
 * be …") and hw_node_spec_validate's state. *unit (may be NULL) receives the figure's SI
 * unit ("B/s"; "" for link_efficiency). */
const char *hw_spec_figure_range (const char *key, double v, const char **unit);
/* Sets G_KEY_FILE_ERROR "'TEXT' WHY" (no group or key: the caller prefixes them); FALSE. */
gboolean hw_spec_out_of_range (const char *text, const char *why, GError **error);
/* `text` as a plain count (sim_units_parse_count) within [min, max] into *out; FALSE + error
 * (the caller prefixes group and key). */
gboolean hw_spec_parse_count (const char *text, guint64 min, guint64 max, guint *out,
                              GError **error);
