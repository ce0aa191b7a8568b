/* sim/variant.h — GVariants rebuilt from the bytes another stepsim process serialised (a
 * guarded HDF5 reader's answer, sim/h5out_read.c; an MPI rank's batch results,
 * cli/cmd_batch.c), read in time linear in their size.
 *
 * Why not g_variant_new_from_bytes (…, trusted = FALSE) alone: for a value built that way
 * GLib 2.74 (Debian 12) checks the offset table of an array of variable-size elements
 * ("as", "a(smsdms)") from its start again for every child taken, so iterating n of them
 * costs O(n^2): 262,265 /summary entries took 18 s of `stepsim plot` (bench/RESULTS.md,
 * 2026-12-07). The documented way to read bytes one does not trust is to load them
 * untrusted, check g_variant_is_normal_form (one linear pass over every offset, size and
 * string, GLib's gvariant-serialiser.c g_variant_serialised_is_normal), and only then treat
 * them as trusted (GLib's g_variant_new_from_bytes documentation: "trusted: if the contents
 * of data are trusted", i.e. known to be in normal form).
 */
#pragma once

#include <glib.h>

/* The value of type `type` serialised in `bytes` (borrowed; the result holds a reference),
 * as a trusted GVariant (a full reference, not floating: caller unrefs) when the bytes are
 * in GLib's normal form for `type`; NULL when they are not (wrong size, offsets out of
 * order, a string without its NUL, ... : a truncated or corrupt answer), so nothing reads a
 * default value in their place. O(size of `bytes`). */
GVariant *sim_variant_new_checked (const GVariantType *type, GBytes *bytes);
