/* models/arch/attention_window.c — how many keys a query attends to under a sliding window
 * (arch.h: model_arch_causal_pairs, model_arch_attention_keys).
 *
 * A causal sliding window of w keys (Mistral: Jiang et al. 2023, arXiv 2310.06825 §2; HF
 * masking_utils.py sliding_window_causal_mask: key j is visible to query i iff
 * i − w < j ≤ i; flash-attn 2 window_size = (w − 1, 0)) lets query i (1-based) score
 * min(i, w) keys. Over a sequence of s tokens:
 *   K(s, w) = Σ_{i=1..s} min(i, w)
 *           = s(s + 1)/2                       when w ≥ s (the whole causal triangle)
 *           = w(w + 1)/2 + (s − w)·w           when w < s (the first w queries fill a
 *                                               triangle, the other s − w see w keys each).
 * E.g. s = 16, w = 4: 10 + 12·4 = 58 pairs (the triangle would be 136).
 *
 * The attention cost (models/ops/graph_layer.c flash_attention) counts the full square,
 * 4·b·s·s_kv·a·d FLOPs, and hardware/kernel.c rates a causal kernel twice as efficient
 * (it skips the masked half). So a windowed causal layer's s_kv is 2·K(s, w)/s: the halving
 * leaves exactly its K(s, w) pairs; a full causal layer's is s (s²/2 after halving, the
 * triangle's s(s + 1)/2 up to the diagonal). gpt_oss alternates the two (config
 * layer_types); FLOPs are linear in s_kv, so the layer mean of s_kv gives the stack's
 * attention FLOPs exactly while the cost model keeps one layer template.
 */
#include "config.h"
#include "models/arch/arch.h"

double
model_arch_causal_pairs (guint64 seq_len, guint64 window)
{
  double s = (double) seq_len, w = (double) window;
  if (window == 0 || window >= seq_len)
    return s * (s + 1) / 2;
  return w * (w + 1) / 2 + (s - w) * w;
}

double
model_arch_attention_keys (const ModelArch *arch, guint64 seq_len, gboolean causal)
{
  g_return_val_if_fail (arch != NULL, 0);
  double s = (double) seq_len;
  if (arch->sliding_window == 0 || arch->sliding_window >= seq_len || seq_len == 0
      || arch->n_layers == 0)
    return s;
  double windowed = causal ? 2 * model_arch_causal_pairs (seq_len, arch->sliding_window) / s
                           : (double) arch->sliding_window;
  guint64 full = MIN (arch->n_full_attention_layers, arch->n_layers);
  double L = (double) arch->n_layers;
  return ((L - (double) full) * windowed + (double) full * s) / L;
}
