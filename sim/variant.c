/* sim/variant.c — GVariants from bytes checked once, then trusted; see variant.h. */
#include "config.h"
#include "sim/variant.h"

GVariant *
sim_variant_new_checked (const GVariantType *type, GBytes *bytes)
{
  g_return_val_if_fail (type != NULL && bytes != NULL, NULL);
  g_autoptr (GVariant) untrusted = g_variant_ref_sink (g_variant_new_from_bytes (type, bytes,
                                                                                 FALSE));
  if (!g_variant_is_normal_form (untrusted))
    return NULL;
  return g_variant_ref_sink (g_variant_new_from_bytes (type, bytes, TRUE));
}
