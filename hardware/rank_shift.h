/* hardware/rank_shift.h — the rank translations rank classes are built on
 * (models/plan/rank_classes.h): a leaf of value helpers, no state.
 *
 * The n ranks fall into consecutive blocks of `block` ranks (with pipeline stages, one
 * stage's ranks: the device mesh puts pp outermost, models/parallel/mesh.h; otherwise one
 * block of all n). The shift by `d` (dividing `block`) moves every rank d places forward
 * inside its block, wrapping around:
 *     σ(b·B + j) = b·B + (j + d) mod B        (B = block, 0 ≤ j < B).
 * Its orbits, the rank classes, are {b·B + (j + k·d) mod B : k}, B / d ranks each; the
 * representatives are the ranks b·B + j with j < d, numbered densely by
 * index(b·B + j) = b·d + (j mod d), n / B · d of them. block = n is the plain cyclic shift
 * r → (r + d) mod n; d = block is the identity (every rank its own class).
 * Invariants (hw_rank_shift_valid): n ≥ 1, block divides n, d ≥ 1 divides block.
 */
#pragma once

#include <glib.h>

typedef struct
{
  guint n;     /* ranks */
  guint block; /* ranks per block (divides n) */
  guint d;     /* shift inside each block (divides block) */
} HwRankShift;

/* The identity on n ranks: one block, d = n. */
static inline HwRankShift
hw_rank_shift_identity (guint n)
{
  return (HwRankShift){ n, n, n };
}

static inline gboolean
hw_rank_shift_valid (const HwRankShift *s)
{
  return s->n >= 1 && s->block >= 1 && s->n % s->block == 0 && s->d >= 1
         && s->block % s->d == 0;
}

static inline gboolean
hw_rank_shift_is_identity (const HwRankShift *s)
{
  return s->d == s->block;
}

/* σ(r), r < n. */
static inline guint
hw_rank_shift_image (const HwRankShift *s, guint r)
{
  guint j = r % s->block;
  return r - j + (j + s->d) % s->block;
}

/* The representative of r's class (itself for a representative). */
static inline guint
hw_rank_shift_rep (const HwRankShift *s, guint r)
{
  guint j = r % s->block;
  return r - j + j % s->d;
}

static inline gboolean
hw_rank_shift_is_rep (const HwRankShift *s, guint r)
{
  return r % s->block < s->d;
}

/* The dense index (< hw_rank_shift_n_reps) of r's representative, and back. */
static inline guint
hw_rank_shift_index (const HwRankShift *s, guint r)
{
  return r / s->block * s->d + r % s->block % s->d;
}

static inline guint
hw_rank_shift_rank (const HwRankShift *s, guint index)
{
  return index / s->d * s->block + index % s->d;
}

static inline guint
hw_rank_shift_n_reps (const HwRankShift *s)
{
  return s->n / s->block * s->d;
}

/* Ranks per class: block / d. */
static inline guint
hw_rank_shift_multiplicity (const HwRankShift *s)
{
  return s->block / s->d;
}
