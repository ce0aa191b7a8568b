/* sim/variant.h — GVariants rebuilt from the bytes another stepsim process serialised (a
 * guarded HDF5 reader's answer, sim/h5out_read.c; an MPI rank's batch results,
 * cli/cmd_batch.c), read in time linear in their size.
 *
 * Why not g_variant_new_from_bytes (…, trusted = FALSE) alone: for a value loaded that way
 * GLib 2.74.6 (Debian 12) takes each child of an array of variable-size elements ("as",
 * "a(smsdms)") in time that grows with its index, so iterating n of them costs O(n^2)
 * (measured: 0.38 s for 40,000 "a(smsdms)" entries, 18.7 s for 262,000; trusted, 0.05 s and
 * 0.37 s): the 262,265 /summary entries of a 131,072-GPU run took ~18 s of `stepsim plot`
 * (bench/RESULTS.md, 2026-12-07). GLib's documentation gives the way out: "to detect if a
 * given chunk of serialized data is in normal form: load the data into a GVariant using
 * g_variant_new_from_data() and then use [g_variant_is_normal_form] to check" (one linear
 * pass over every offset, size and string), and "if data is trusted to be serialized data
 * in normal form then trusted should be TRUE" (g_variant_new_from_data).
 */
#pragma once

#include <glib.h>

/* The value of type `type` serialised in `bytes` (borrowed; the result holds a reference),
 * as a trusted GVariant (a full reference, not floating: caller unrefs) when the bytes are
 * in GLib's normal form for `type`; NULL when they are not (wrong size, offsets out of
 * order, a string without its NUL, ... : a truncated or corrupt answer), so nothing reads a
 * default value in their place. O(size of `bytes`). */
GVariant *sim_variant_new_checked (const GVariantType *type, GBytes *bytes);
