/* models/parallel/pipeline_schedule.c — pipeline stages (even, listed, or a Megatron layout
 * string) and the GPipe / 1F1B / interleaved 1F1B / ZB-H1 op orders per rank with their
 * cross-rank dependencies; see pipeline_schedule.h for the sources. */
#include "config.h"
#include "models/parallel/pipeline_schedule.h"

#include <string.h>

static gboolean
invalid (GError **error, const char *fmt, ...) G_GNUC_PRINTF (2, 3);

static gboolean
invalid (GError **error, const char *fmt, ...)
{
  va_list ap;
  va_start (ap, fmt);
  g_autofree char *msg = g_strdup_vprintf (fmt, ap);
  va_end (ap);
  g_set_error_literal (error, G_KEY_FILE_ERROR, G_KEY_FILE_ERROR_INVALID_VALUE, msg);
  return FALSE;
}

/* ---- Partitioning ------------------------------------------------------------------------ */

static ModelPpPartition *
partition_alloc (guint pp, guint vpp)
{
  ModelPpPartition *part = g_new0 (ModelPpPartition, 1);
  part->pp = pp;
  part->vpp = vpp;
  part->stages = g_array_sized_new (FALSE, TRUE, sizeof (ModelPpStage), pp * vpp);
  g_array_set_size (part->stages, pp * vpp);
  for (guint k = 0; k < pp * vpp; k++)
    {
      ModelPpStage *st = &g_array_index (part->stages, ModelPpStage, k);
      st->rank = k % pp;
      st->chunk = k / pp;
    }
  return part;
}

void
model_pp_partition_free (ModelPpPartition *part)
{
  if (part == NULL)
    return;
  g_array_unref (part->stages);
  g_free (part);
}

const ModelPpStage *
model_pp_partition_stage (const ModelPpPartition *part, guint k)
{
  g_return_val_if_fail (part != NULL && k < part->stages->len, NULL);
  return &g_array_index (part->stages, ModelPpStage, k);
}

/* first_layer from the counts, in model order. */
static void
number_layers (ModelPpPartition *part)
{
  guint next = 0;
  for (guint k = 0; k < part->stages->len; k++)
    {
      ModelPpStage *st = &g_array_index (part->stages, ModelPpStage, k);
      st->first_layer = next;
      next += st->n_layers;
    }
}

/* One character of the expanded layout and where it was written (1-based). */
typedef struct
{
  char c;
  guint pos;
} LayoutChar;

static gboolean
layout_error (GError **error, const char *layout, guint pos, const char *what)
{
  return invalid (error, MODEL_PP_KEY_LAYOUT " = \"%s\": %s at position %u (Megatron-LM's "
                  "layout: 'E' embedding, 't' transformer layer, 'm' MTP layer, 'L' loss, "
                  "'|' between stages, \"(...)*n\" and \"x*n\" repeat, ',' is ignored)",
                  layout, what, pos);
}

/* The longest unrolled layout accepted (layers and separators): far above any model, low
 * enough that a typo in a repeat count cannot exhaust memory. */
#define LAYOUT_MAX_LAYERS 100000

/* Reads "*n" at layout[*i] (n >= 1), advancing *i past it. */
static gboolean
layout_repeat (const char *layout, gsize *i, guint *n, GError **error)
{
  gsize at = *i;
  if (layout[at] != '*')
    {
      *n = 1;
      return TRUE;
    }
  if (!g_ascii_isdigit (layout[at + 1]))
    return layout_error (error, layout, (guint) at + 1, "'*' not followed by a repeat count");
  char *end = NULL;
  guint64 v = g_ascii_strtoull (layout + at + 1, &end, 10);
  if (v < 1 || v > 100000)
    return layout_error (error, layout, (guint) at + 2, "repeat count not in 1..100000");
  *n = (guint) v;
  *i = (gsize) (end - layout);
  return TRUE;
}

static gboolean
layout_char_known (char c)
{
  return c == 'E' || c == 't' || c == 'm' || c == 'L' || c == '|';
}

/* The layout with its repeats unrolled and commas dropped, as parse_str_to_list (first
 * "(…)*n", then "x*n"), each character keeping its position. GArray of LayoutChar. */
static GArray *
layout_expand (const char *layout, GError **error)
{
  g_autoptr (GArray) out = g_array_new (FALSE, FALSE, sizeof (LayoutChar));
  gsize i = 0;
  while (layout[i] != '\0')
    {
      char c = layout[i];
      if (c == ',')
        {
          i++;
          continue;
        }
      if (c == '(')
        {
          gsize open = i, close = i + 1;
          while (layout[close] != '\0' && layout[close] != ')')
            {
              if (layout[close] == '(')
                {
                  layout_error (error, layout, (guint) close + 1, "nested '('");
                  return NULL;
                }
              close++;
            }
          if (layout[close] != ')')
            {
              layout_error (error, layout, (guint) open + 1, "'(' without its ')'");
              return NULL;
            }
          if (layout[close + 1] != '*')
            {
              layout_error (error, layout, (guint) open + 1,
                            "a group \"(...)\" not followed by \"*n\"");
              return NULL;
            }
          i = close + 1;
          guint n;
          if (!layout_repeat (layout, &i, &n, error))
            return NULL;
          /* the group's body, expanded (x*n inside it too), n times */
          g_autoptr (GArray) body = g_array_new (FALSE, FALSE, sizeof (LayoutChar));
          for (gsize j = open + 1; j < close; j++)
            {
              char b = layout[j];
              if (b == ',')
                continue;
              if (!layout_char_known (b))
                {
                  g_autofree char *what = g_strdup_printf ("unknown character '%c'", b);
                  layout_error (error, layout, (guint) j + 1, what);
                  return NULL;
                }
              LayoutChar lc = { b, (guint) j + 1 };
              gsize after = j + 1;
              guint r;
              if (!layout_repeat (layout, &after, &r, error))
                return NULL;
              for (guint t = 0; t < r; t++)
                g_array_append_val (body, lc);
              j = after - 1;
            }
          if (body->len == 0)
            {
              layout_error (error, layout, (guint) open + 1, "an empty group \"()\"");
              return NULL;
            }
          if ((guint64) body->len * n + out->len > LAYOUT_MAX_LAYERS)
            {
              layout_error (error, layout, (guint) open + 1, "a repeat past "
                            G_STRINGIFY (LAYOUT_MAX_LAYERS) " characters");
              return NULL;
            }
          for (guint t = 0; t < n; t++)
            g_array_append_vals (out, body->data, body->len);
          continue;
        }
      if (!layout_char_known (c))
        {
          g_autofree char *what = g_strdup_printf ("unknown character '%c'", c);
          layout_error (error, layout, (guint) i + 1, what);
          return NULL;
        }
      LayoutChar lc = { c, (guint) i + 1 };
      i++;
      guint n;
      if (!layout_repeat (layout, &i, &n, error))
        return NULL;
      if ((guint64) n + out->len > LAYOUT_MAX_LAYERS)
        {
          layout_error (error, layout, lc.pos, "a repeat past "
                        G_STRINGIFY (LAYOUT_MAX_LAYERS) " characters");
          return NULL;
        }
      for (guint t = 0; t < n; t++)
        g_array_append_val (out, lc);
    }
  return g_steal_pointer (&out);
}

static ModelPpPartition *
partition_from_layout (const ModelPpPartitionSpec *spec, GError **error)
{
  const char *layout = spec->layout;
  g_autoptr (GArray) chars = layout_expand (layout, error);
  if (chars == NULL)
    return NULL;
  guint n_stages = 1;
  for (guint j = 0; j < chars->len; j++)
    if (g_array_index (chars, LayoutChar, j).c == '|')
      n_stages++;
  /* PipelineParallelLayerLayout.__init__: len(layout) % pipeline_model_parallel_size == 0 */
  if (n_stages % spec->pp != 0)
    {
      invalid (error, MODEL_PP_KEY_LAYOUT " = \"%s\" has %u stage%s, not a multiple of "
               MODEL_PP_KEY_PP " = %u (each rank holds the same number of chunks)", layout,
               n_stages, n_stages == 1 ? "" : "s", spec->pp);
      return NULL;
    }
  guint vpp = n_stages / spec->pp;
  if (spec->vpp != 0 && spec->vpp != vpp)
    {
      invalid (error, MODEL_PP_KEY_LAYOUT " = \"%s\" has %u stages, %u chunk%s per rank over "
               MODEL_PP_KEY_PP " = %u, but " MODEL_PP_KEY_VIRTUAL " = %u", layout, n_stages,
               vpp, vpp == 1 ? "" : "s", spec->pp, spec->vpp);
      return NULL;
    }
  g_autoptr (ModelPpPartition) part = partition_alloc (spec->pp, vpp);
  guint k = 0, n_e = 0, n_l = 0, n_t = 0, n_m = 0;
  gboolean mtp_seen = FALSE;
  for (guint j = 0; j < chars->len; j++)
    {
      const LayoutChar *lc = &g_array_index (chars, LayoutChar, j);
      ModelPpStage *st = &g_array_index (part->stages, ModelPpStage, k);
      gboolean first = TRUE, last = TRUE; /* first / last layer of the model */
      for (guint q = 0; q < j; q++)
        if (g_array_index (chars, LayoutChar, q).c != '|')
          first = FALSE;
      for (guint q = j + 1; q < chars->len; q++)
        if (g_array_index (chars, LayoutChar, q).c != '|')
          last = FALSE;
      switch (lc->c)
        {
        case '|':
          k++;
          break;
        case 'E':
          /* validate_layer_layout: flatten_layout[0] == embedding, exactly once */
          if (!first || n_e > 0)
            {
              layout_error (error, layout, lc->pos,
                            "'E' not the first layer of the model, or twice");
              return NULL;
            }
          n_e++;
          st->embedding = TRUE;
          break;
        case 'L':
          if (!last || n_l > 0)
            {
              layout_error (error, layout, lc->pos, "'L' not the last layer of the model");
              return NULL;
            }
          n_l++;
          st->loss = TRUE;
          break;
        case 't':
          if (mtp_seen)
            {
              layout_error (error, layout, lc->pos,
                            "a transformer layer after an MTP layer (Megatron places the "
                            "decoder layers before the MTP layers)");
              return NULL;
            }
          n_t++;
          st->n_layers++;
          break;
        case 'm':
          /* validate_layer_layout: MTP only in a rank's last virtual stage */
          if (st->chunk + 1 != vpp)
            {
              layout_error (error, layout, lc->pos,
                            "an MTP layer outside its rank's last chunk (Megatron-LM keeps "
                            "the MTP layers in the last virtual stage of a rank)");
              return NULL;
            }
          mtp_seen = TRUE;
          n_m++;
          st->n_mtp++;
          break;
        default:
          g_assert_not_reached ();
        }
    }
  if (n_e != 1 || n_l != 1)
    {
      invalid (error, MODEL_PP_KEY_LAYOUT " = \"%s\" must start with 'E' (the embedding) and "
               "end with 'L' (the loss), once each (Megatron-LM validate_layer_layout)", layout);
      return NULL;
    }
  if (n_t != spec->n_layers)
    {
      invalid (error, MODEL_PP_KEY_LAYOUT " = \"%s\" places %u transformer layers ('t'), but "
               "the model's num_hidden_layers is %u", layout, n_t, spec->n_layers);
      return NULL;
    }
  if (n_m != spec->n_mtp)
    {
      /* megatron/core/transformer/multi_token_prediction.py get_mtp_num_layers_to_build
       * asserts the layout's count equals mtp_num_layers */
      invalid (error, MODEL_PP_KEY_LAYOUT " = \"%s\" places %u MTP layer%s ('m'), but "
               MODEL_PP_KEY_MTP " = %u trains %u", layout, n_m, n_m == 1 ? "" : "s",
               spec->n_mtp, spec->n_mtp);
      return NULL;
    }
  number_layers (part);
  return g_steal_pointer (&part);
}

ModelPpPartition *
model_pp_partition_new (const ModelPpPartitionSpec *spec, GError **error)
{
  g_return_val_if_fail (spec != NULL, NULL);
  if (spec->pp < 1)
    {
      invalid (error, MODEL_PP_KEY_PP " = 0: at least one pipeline stage");
      return NULL;
    }
  if (spec->n_layers < 1)
    {
      invalid (error, "model key num_hidden_layers = 0: nothing to place on "
               MODEL_PP_KEY_PP " = %u stages", spec->pp);
      return NULL;
    }
  if (spec->layout != NULL && spec->layers_per_stage != NULL)
    {
      invalid (error, MODEL_PP_KEY_LAYOUT " and " MODEL_PP_KEY_LAYERS " are both given: one "
               "of them places the layers");
      return NULL;
    }
  if (spec->layout != NULL)
    return partition_from_layout (spec, error);
  guint vpp = spec->vpp ? spec->vpp : 1;
  guint n_stages = spec->pp * vpp;
  g_autoptr (ModelPpPartition) part = partition_alloc (spec->pp, vpp);
  if (spec->layers_per_stage != NULL)
    {
      if (spec->n_layers_per_stage != n_stages)
        {
          invalid (error, MODEL_PP_KEY_LAYERS " has %u entr%s, but " MODEL_PP_KEY_PP
                   " = %u × " MODEL_PP_KEY_VIRTUAL " = %u is %u stages", spec->n_layers_per_stage,
                   spec->n_layers_per_stage == 1 ? "y" : "ies", spec->pp, vpp, n_stages);
          return NULL;
        }
      guint64 sum = 0;
      for (guint k = 0; k < n_stages; k++)
        sum += spec->layers_per_stage[k];
      if (sum != spec->n_layers)
        {
          invalid (error, MODEL_PP_KEY_LAYERS " places %" G_GUINT64_FORMAT " layer%s, but the "
                   "model's num_hidden_layers is %u", sum, sum == 1 ? "" : "s", spec->n_layers);
          return NULL;
        }
      for (guint k = 0; k < n_stages; k++)
        g_array_index (part->stages, ModelPpStage, k).n_layers = spec->layers_per_stage[k];
    }
  else
    {
      /* megatron/core/transformer/transformer_block.py get_num_layers_to_build: L / p per
       * rank, then / v per chunk, both asserted divisible */
      if (spec->n_layers % n_stages != 0)
        {
          invalid (error, "model key num_hidden_layers = %u is not a multiple of "
                   MODEL_PP_KEY_PP " = %u × " MODEL_PP_KEY_VIRTUAL " = %u: place the layers "
                   "unevenly with " MODEL_PP_KEY_LAYERS " or " MODEL_PP_KEY_LAYOUT,
                   spec->n_layers, spec->pp, vpp);
          return NULL;
        }
      for (guint k = 0; k < n_stages; k++)
        g_array_index (part->stages, ModelPpStage, k).n_layers = spec->n_layers / n_stages;
    }
  g_array_index (part->stages, ModelPpStage, 0).embedding = TRUE;
  g_array_index (part->stages, ModelPpStage, n_stages - 1).loss = TRUE;
  /* without a layout the MTP layers are on the last (virtual) stage, beside the loss
   * (multi_token_prediction.py mtp_on_this_rank / get_mtp_num_layers_to_build) */
  g_array_index (part->stages, ModelPpStage, n_stages - 1).n_mtp = spec->n_mtp;
  number_layers (part);
  return g_steal_pointer (&part);
}

/* ---- Schedules ------------------------------------------------------------------------- */

const char *
model_pp_schedule_name (ModelPpScheduleKind kind)
{
  switch (kind)
    {
    case MODEL_PP_GPIPE: return "gpipe";
    case MODEL_PP_INTERLEAVED: return "interleaved";
    case MODEL_PP_ZB_H1: return "zb-h1";
    case MODEL_PP_1F1B:
    default: return "1f1b";
    }
}

gboolean
model_pp_schedule_from_name (const char *name, ModelPpScheduleKind *out)
{
  static const ModelPpScheduleKind kinds[] = { MODEL_PP_GPIPE, MODEL_PP_1F1B,
                                               MODEL_PP_INTERLEAVED, MODEL_PP_ZB_H1 };
  for (guint j = 0; j < G_N_ELEMENTS (kinds); j++)
    if (g_strcmp0 (name, model_pp_schedule_name (kinds[j])) == 0)
      {
        *out = kinds[j];
        return TRUE;
      }
  return FALSE;
}

const char *
model_pp_op_name (ModelPpOpKind kind)
{
  switch (kind)
    {
    case MODEL_PP_OP_F: return "F";
    case MODEL_PP_OP_B: return "B";
    case MODEL_PP_OP_W: return "W";
    case MODEL_PP_OP_BW:
    default: return "BW";
    }
}

void
model_pp_schedule_free (ModelPpSchedule *sched)
{
  if (sched == NULL)
    return;
  g_ptr_array_unref (sched->ranks);
  g_ptr_array_unref (sched->warnings);
  g_free (sched);
}

const GArray *
model_pp_schedule_rank (const ModelPpSchedule *sched, guint r)
{
  g_return_val_if_fail (sched != NULL && r < sched->ranks->len, NULL);
  return g_ptr_array_index (sched->ranks, r);
}

const ModelPpOp *
model_pp_schedule_op (const ModelPpSchedule *sched, guint r, guint index)
{
  const GArray *ops = model_pp_schedule_rank (sched, r);
  g_return_val_if_fail (ops != NULL && index < ops->len, NULL);
  return &g_array_index (ops, ModelPpOp, index);
}

static void
push (ModelPpSchedule *s, guint r, ModelPpOpKind kind, guint mb, guint chunk)
{
  ModelPpOp op = { .kind = kind, .mb = mb, .chunk = chunk, .stage = r + chunk * s->pp };
  g_array_append_val ((GArray *) g_ptr_array_index (s->ranks, r), op);
}

/* GPipe: F of every micro-batch, then their backwards (ScheduleGPipe runs the backwards in
 * micro-batch order too). */
static void
gen_gpipe (ModelPpSchedule *s)
{
  for (guint r = 0; r < s->pp; r++)
    {
      for (guint i = 0; i < s->n_micro; i++)
        push (s, r, MODEL_PP_OP_F, i, 0);
      for (guint i = 0; i < s->n_micro; i++)
        push (s, r, MODEL_PP_OP_BW, i, 0);
    }
}

/* 1F1B and ZB-H1 (pipeline_schedule.h): warm-up min(p − r − 1, m) F, then (F, B) pairs,
 * then the cool-down B; with `zb`, B is the input gradient and rank r's W passes follow
 * their B from the (r + 1)-th B on, oldest first, the rest after the last B. */
static void
gen_1f1b (ModelPpSchedule *s, gboolean zb)
{
  ModelPpOpKind b = zb ? MODEL_PP_OP_B : MODEL_PP_OP_BW;
  for (guint r = 0; r < s->pp; r++)
    {
      guint m = s->n_micro, warmup = MIN (s->pp - r - 1, m), fwd = 0, bwd = 0, w = 0;
      for (; fwd < warmup; fwd++)
        push (s, r, MODEL_PP_OP_F, fwd, 0);
      while (bwd < m)
        {
          if (fwd < m)
            push (s, r, MODEL_PP_OP_F, fwd++, 0);
          push (s, r, b, bwd++, 0);
          /* _get_1f1b_rank_ops: a W after each B once op − warmup_ops >= rank */
          if (zb && bwd > r)
            push (s, r, MODEL_PP_OP_W, w++, 0);
        }
      while (zb && w < m)
        push (s, r, MODEL_PP_OP_W, w++, 0);
    }
}

/* Megatron's interleaved order (schedules.py get_schedule_table, get_model_chunk_id): the
 * virtual micro-batch k runs micro-batch table_mb[k] on chunk table_chunk[k] forward, and
 * its backward runs chunk v − 1 − table_chunk[k]; a chunk's backwards take its micro-batches
 * in forward order (input_tensors[chunk].pop(0)). */
static void
gen_interleaved (ModelPpSchedule *s, gboolean a2a_overlap)
{
  guint p = s->pp, v = s->vpp, m = s->n_micro, total = m * v;
  g_autofree guint *tmb = g_new (guint, total);
  g_autofree guint *tch = g_new (guint, total);
  guint n = 0;
  for (guint g = 0; g < m; g += p) /* groups of p micro-batches (m is a multiple of p) */
    for (guint c = 0; c < v; c++)
      for (guint i = g; i < g + p; i++)
        {
          tmb[n] = i;
          tch[n] = c;
          n++;
        }
  for (guint r = 0; r < p; r++)
    {
      /* get_pp_rank_microbatches */
      guint warmup = MIN ((p - r - 1) * 2 + (v - 1) * p + (a2a_overlap ? 1 : 0), total);
      guint remaining = total - warmup;
      for (guint k = 0; k < warmup; k++)
        push (s, r, MODEL_PP_OP_F, tmb[k], tch[k]);
      GArray *ops = g_ptr_array_index (s->ranks, r);
      for (guint k = 0; k < remaining; k++)
        {
          push (s, r, MODEL_PP_OP_F, tmb[k + warmup], tch[k + warmup]);
          push (s, r, MODEL_PP_OP_BW, tmb[k], v - 1 - tch[k]);
          /* schedules.py's steady loop: forward_k with backward_k, one combined step */
          g_array_index (ops, ModelPpOp, ops->len - 1).combined = a2a_overlap;
          g_array_index (ops, ModelPpOp, ops->len - 2).combined = a2a_overlap;
        }
      for (guint k = remaining; k < total; k++)
        push (s, r, MODEL_PP_OP_BW, tmb[k], v - 1 - tch[k]);
    }
}

/* Where each (kind class, stage, mb) op lies: index = (cls·S + stage)·m + mb, cls 0 F,
 * 1 B/BW (the input gradient), 2 W/BW (the weight gradient). */
typedef struct
{
  guint rank, index;
  gboolean set;
} OpWhere;

static void
resolve_deps (ModelPpSchedule *s)
{
  guint S = s->pp * s->vpp, m = s->n_micro;
  g_autofree OpWhere *where = g_new0 (OpWhere, 3 * S * m);
#define WHERE(cls, stage, mb) where[((cls) * S + (stage)) * m + (mb)]
  for (guint r = 0; r < s->pp; r++)
    {
      GArray *ops = g_ptr_array_index (s->ranks, r);
      for (guint j = 0; j < ops->len; j++)
        {
          const ModelPpOp *op = &g_array_index (ops, ModelPpOp, j);
          OpWhere w = { r, j, TRUE };
          if (op->kind == MODEL_PP_OP_F)
            WHERE (0, op->stage, op->mb) = w;
          if (op->kind == MODEL_PP_OP_B || op->kind == MODEL_PP_OP_BW)
            WHERE (1, op->stage, op->mb) = w;
          if (op->kind == MODEL_PP_OP_W || op->kind == MODEL_PP_OP_BW)
            WHERE (2, op->stage, op->mb) = w;
        }
    }
  for (guint r = 0; r < s->pp; r++)
    {
      GArray *ops = g_ptr_array_index (s->ranks, r);
      for (guint j = 0; j < ops->len; j++)
        {
          ModelPpOp *op = &g_array_index (ops, ModelPpOp, j);
          OpWhere need[2];
          guint n = 0;
          switch (op->kind)
            {
            case MODEL_PP_OP_F:
              if (op->stage > 0)
                need[n++] = WHERE (0, op->stage - 1, op->mb);
              break;
            case MODEL_PP_OP_B:
            case MODEL_PP_OP_BW:
              need[n++] = WHERE (0, op->stage, op->mb);
              if (op->stage + 1 < S)
                need[n++] = WHERE (1, op->stage + 1, op->mb);
              break;
            case MODEL_PP_OP_W:
              need[n++] = WHERE (1, op->stage, op->mb);
              break;
            }
          op->n_deps = n;
          for (guint d = 0; d < n; d++)
            {
              g_assert (need[d].set); /* every generator emits every op */
              op->deps[d] = (ModelPpDep){ need[d].rank, need[d].index, need[d].rank != r };
            }
        }
    }
#undef WHERE
}

ModelPpSchedule *
model_pp_schedule_new (ModelPpScheduleKind kind, guint pp, guint n_micro, guint vpp,
                       GError **error)
{
  return model_pp_schedule_new_with (kind, pp, n_micro, vpp, FALSE, error);
}

ModelPpSchedule *
model_pp_schedule_new_with (ModelPpScheduleKind kind, guint pp, guint n_micro, guint vpp,
                            gboolean a2a_overlap, GError **error)
{
  const char *name = model_pp_schedule_name (kind);
  if (pp < 1)
    {
      invalid (error, MODEL_PP_KEY_PP " = 0: at least one pipeline stage");
      return NULL;
    }
  if (n_micro < 1)
    {
      invalid (error, MODEL_PP_KEY_MICRO_BATCHES " = 0: the pipeline needs at least one "
               "micro-batch");
      return NULL;
    }
  if (kind == MODEL_PP_INTERLEAVED && vpp < 2)
    {
      invalid (error, MODEL_PP_KEY_SCHEDULE " = %s needs " MODEL_PP_KEY_VIRTUAL " >= 2 "
               "(got %u): with one chunk per rank it is 1f1b", name, vpp);
      return NULL;
    }
  if (kind != MODEL_PP_INTERLEAVED && vpp != 1)
    {
      invalid (error, MODEL_PP_KEY_VIRTUAL " = %u needs " MODEL_PP_KEY_SCHEDULE " = "
               "interleaved (%s runs one chunk per rank)", vpp, name);
      return NULL;
    }
  /* schedules.py forward_backward_pipelining_with_interleaving: a last micro-batch group
   * of 0 < m mod N < p micro-batches raises (N = microbatch_group_size_per_vp_stage = p) */
  if (kind == MODEL_PP_INTERLEAVED && n_micro % pp != 0)
    {
      invalid (error, MODEL_PP_KEY_MICRO_BATCHES " = %u micro-batches is not a multiple of "
               MODEL_PP_KEY_PP " = %u, which the interleaved schedule requires (Megatron-LM "
               "raises: the last micro-batch group would leave dependency bubbles)", n_micro,
               pp);
      return NULL;
    }
  ModelPpSchedule *s = g_new0 (ModelPpSchedule, 1);
  s->kind = kind;
  s->pp = pp;
  s->vpp = vpp;
  s->n_micro = n_micro;
  s->ranks = g_ptr_array_new_with_free_func ((GDestroyNotify) g_array_unref);
  for (guint r = 0; r < pp; r++)
    g_ptr_array_add (s->ranks, g_array_new (FALSE, TRUE, sizeof (ModelPpOp)));
  s->warnings = g_ptr_array_new_with_free_func (g_free);
  /* With equal stages a rank idles (p − 1)·(t_f + t_b) of (m + p − 1)·(t_f + t_b) (the
   * tests derive it): over half the step once m < p. */
  if (kind != MODEL_PP_INTERLEAVED && kind != MODEL_PP_GPIPE && n_micro < pp)
    g_ptr_array_add (s->warnings,
                     g_strdup_printf (MODEL_PP_KEY_MICRO_BATCHES " = %u micro-batches is fewer "
                                      "than " MODEL_PP_KEY_PP " = %u stages: %s runs, but "
                                      "with equal stages each rank idles %u of every %u "
                                      "micro-batch slots (the bubble dominates the step; "
                                      "raise grad_accum to at least pp)",
                                      n_micro, pp, name, pp - 1, n_micro + pp - 1));
  switch (kind)
    {
    case MODEL_PP_GPIPE: gen_gpipe (s); break;
    case MODEL_PP_1F1B: gen_1f1b (s, FALSE); break;
    case MODEL_PP_ZB_H1: gen_1f1b (s, TRUE); break;
    case MODEL_PP_INTERLEAVED: gen_interleaved (s, a2a_overlap); break;
    }
  resolve_deps (s);
  return s;
}

/* ---- Per-rank view ----------------------------------------------------------------------- */

void
model_pp_rank_memory (const ModelPpPartition *part, const ModelPpSchedule *sched, GArray *out)
{
  g_return_if_fail (part != NULL && sched != NULL && out != NULL);
  g_return_if_fail (part->pp == sched->pp && part->vpp == sched->vpp);
  for (guint r = 0; r < sched->pp; r++)
    {
      ModelPpRankMemory x = { .rank = r };
      for (guint c = 0; c < part->vpp; c++)
        {
          const ModelPpStage *st = model_pp_partition_stage (part, r + c * part->pp);
          x.n_layers += st->n_layers;
          x.n_mtp += st->n_mtp;
          x.embedding |= st->embedding;
          x.loss |= st->loss;
        }
      const GArray *ops = model_pp_schedule_rank (sched, r);
      gint live = 0, pending_w = 0;
      double layers_live = 0;
      for (guint j = 0; j < ops->len; j++)
        {
          const ModelPpOp *op = &g_array_index (ops, ModelPpOp, j);
          double nl = model_pp_partition_stage (part, op->stage)->n_layers;
          switch (op->kind)
            {
            case MODEL_PP_OP_F:
              live++;
              pending_w++;
              layers_live += nl;
              break;
            case MODEL_PP_OP_B:
              live--;
              layers_live -= nl;
              break;
            case MODEL_PP_OP_W:
              pending_w--;
              break;
            case MODEL_PP_OP_BW:
              live--;
              pending_w--;
              layers_live -= nl;
              break;
            }
          x.peak_in_flight = MAX (x.peak_in_flight, (guint) live);
          x.peak_pending_w = MAX (x.peak_pending_w, (guint) pending_w);
          x.peak_layer_micro = MAX (x.peak_layer_micro, layers_live);
        }
      g_array_append_val (out, x);
    }
}
