/* sim/arith.h — integer arithmetic the layers share: the greatest common divisor and least
 * common multiple of GPU counts, degrees and sequence multiples. */
#pragma once

#include <glib.h>

/* Greatest common divisor of a and b (Euclid; b may be 0: a, and gcd (0, 0) = 0). */
static inline guint64
sim_gcd64 (guint64 a, guint64 b)
{
  while (b != 0)
    {
      guint64 t = a % b;
      a = b;
      b = t;
    }
  return a;
}

/* Least common multiple of a and b, both > 0 (the caller keeps it below 2^64). */
static inline guint64
sim_lcm64 (guint64 a, guint64 b)
{
  return a / sim_gcd64 (a, b) * b;
}
