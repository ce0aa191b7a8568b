/* hardware/collective_lower.c — collective algorithms lowered to phases of flows.
 *
 * Ring (Patarasuk & Yuan, "Bandwidth optimal all-reduce algorithms for clusters of
 * workstations", JPDC 2009; NCCL's ring): p ranks in the given order, rank i sending to
 * rank i+1 mod p. A ring all-reduce is 2(p−1) steps, each moving S/p over every ring edge;
 * NCCL cuts the buffer into many chunks and pipelines them, so in the limit of small chunks
 * every edge carries its total 2(p−1)/p·S as one continuous stream, and each step still costs
 * the latency α once. We lower it to that limit: ONE phase of p concurrent neighbour flows,
 * each of 2(p−1)/p·S bytes with start latency 2(p−1)·α (α: the largest hop latency of the
 * ring). Flow counts stay O(p), and alone on links of bandwidth B the phase takes
 * 2(p−1)·α + 2(p−1)/p·S/B = 2(p−1)(α + S/(pB)), the textbook cost (Thakur et al., IJHPCA
 * 2005, §4). All-gather and reduce-scatter: p−1 steps, (p−1)/p·S per edge. Broadcast: a
 * pipelined chain root → … → last, S per edge, p−1 steps of α to fill the pipeline.
 *
 * Tree (all-reduce only, as NCCL): the double binary tree of Sanders, Speck & Träff
 * ("Two-tree algorithms for full bandwidth broadcast, reduction and scan", Parallel
 * Computing 2009) as NCCL builds it (src/graph/trees.cc): tree 1 is the in-order binary tree
 * over positions 0..p−1 (leaves are the odd positions), tree 2 its mirror (p even) or its
 * shift by one (p odd), so each rank is internal in at most one tree. Each tree reduces and
 * broadcasts half the buffer. Pipelined, every tree edge carries S/2 up (reduce) and S/2
 * down (broadcast); we lower it to two phases, "up" (child → parent in both trees) and
 * "down" (parent → child), each with latency depth·α. A rank sends ≤ S/2 + S/2 and receives
 * ≤ 2·S/2 per phase, so on a non-blocking switch each phase takes depth·α + S/B and the
 * all-reduce 2(depth·α + S/B), depth = ⌈log2 p⌉. Other kinds with TREE use the ring.
 *
 * Hierarchical (two-level, as NCCL's CollNet/"2D" and Horovod's hierarchical all-reduce):
 * ranks grouped by node in order of first appearance; every node must hold the same number
 * p_l of them (else the ring is used), and position j of every node forms an inter-node
 * group of m ranks. All-reduce: intra-node ring reduce-scatter of S (each rank then holds
 * S/p_l), p_l concurrent inter-node ring all-reduces of S/p_l, intra-node ring all-gather
 * of S. All-gather (output S): inter-node all-gathers of output S/p_l, then intra-node
 * all-gather of S. Reduce-scatter (input S): intra-node reduce-scatter of S, then
 * inter-node reduce-scatters of S/p_l. Broadcast: a chain among the nodes' first ranks (the
 * root first), then a chain inside every node. The levels are pipelined, as NCCL pipelines
 * chunks through its channels: all their flows run at once in one phase, each starting
 * after the sum of the levels' latencies (the pipeline fill), so the time is that sum plus
 * the most loaded link's bytes over its capacity — the same chunked-pipelining limit as the
 * ring's single phase (e.g. all-reduce: Σα + max(2(p_l−1)S/(p_l·B_nvlink),
 * 2(m−1)S/(p_l·m·B_nic))).
 *
 * All-to-all: n(n−1) direct flows of S/n (each rank's send buffer split evenly), one phase,
 * each with its own route latency. Send/recv: one flow. AUTO: the ring when every rank is on
 * one node, hierarchical otherwise. Units: B, s.
 */
#include "config.h"
#include "hardware/collective-private.h"
#include "hardware/topology.h"

#include <string.h>

static double
hop_latency (const HwCluster *c, guint a, guint b)
{
  SimResourceId route[HW_ROUTE_MAX];
  double lat = 0;
  hw_topology_route (hw_cluster_topology (c), a, b, route, &lat);
  return lat;
}

static GArray *
new_phase (void)
{
  return g_array_new (FALSE, FALSE, sizeof (HwFlow));
}

/* Appends `phase` to `plan`, or drops it when empty. */
static void
push_phase (GPtrArray *plan, GArray *phase)
{
  if (phase->len > 0)
    g_ptr_array_add (plan, phase);
  else
    g_array_unref (phase);
}

static void
add_flow (GArray *phase, guint src, guint dst, double bytes, double latency)
{
  HwFlow f = { src, dst, bytes, latency };
  if (bytes > 0)
    g_array_append_val (phase, f);
}

/* Ring over ring[0..n): n neighbour flows of `bytes` each, latency steps × the largest hop
 * latency (every pipelined step waits for the slowest hop). `chain` drops the edge back to
 * ring[0] (broadcast pipeline). */
static void
add_ring (GArray *phase, const HwCluster *c, const guint *ring, guint n, double bytes, guint steps,
          gboolean chain)
{
  if (n < 2)
    return;
  guint edges = chain ? n - 1 : n;
  double alpha = 0;
  for (guint i = 0; i < edges; i++)
    alpha = MAX (alpha, hop_latency (c, ring[i], ring[(i + 1) % n]));
  for (guint i = 0; i < edges; i++)
    add_flow (phase, ring[i], ring[(i + 1) % n], bytes, steps * alpha);
}

/* Adds the ring form of `kind` over ring[0..n) on `bytes` (size convention of
 * collective.h) to `phase`. */
static void
add_ring_kind (GArray *phase, const HwCluster *c, HwCollectiveKind kind, const guint *ring, guint n,
               double bytes)
{
  double frac = (double) (n - 1) / n;
  switch (kind)
    {
    case HW_COLLECTIVE_ALL_REDUCE:
      add_ring (phase, c, ring, n, 2 * frac * bytes, 2 * (n - 1), FALSE);
      break;
    case HW_COLLECTIVE_ALL_GATHER:
    case HW_COLLECTIVE_REDUCE_SCATTER:
      add_ring (phase, c, ring, n, frac * bytes, n - 1, FALSE);
      break;
    case HW_COLLECTIVE_BROADCAST:
      add_ring (phase, c, ring, n, bytes, n - 1, TRUE);
      break;
    default:
      g_assert_not_reached ();
    }
}

/* ---- double binary tree --------------------------------------------------------------- */

/* Parent position in NCCL's in-order binary tree over 0..n−1 (ncclGetBtree): the lowest set
 * bit b of i; parent (i ^ b) | 2b, or i ^ b if that is out of range. Root 0: G_MAXUINT. */
static guint
btree_parent (guint i, guint n)
{
  if (i == 0)
    return G_MAXUINT;
  guint bit = i & (~i + 1);
  guint up = (i ^ bit) | (bit << 1);
  return up < n ? up : (i ^ bit);
}

/* Parent in tree `t` (0 or 1): tree 1 mirrors tree 0 for even n and shifts it by one for
 * odd n, so that leaves of one tree are internal nodes of the other. */
static guint
dbtree_parent (guint t, guint i, guint n)
{
  if (t == 0)
    return btree_parent (i, n);
  if (n % 2 == 0)
    {
      guint p = btree_parent (n - 1 - i, n);
      return p == G_MAXUINT ? p : n - 1 - p;
    }
  guint p = btree_parent ((i + n - 1) % n, n);
  return p == G_MAXUINT ? p : (p + 1) % n;
}

static guint
dbtree_depth (guint t, guint i, guint n)
{
  guint d = 0;
  for (guint p = dbtree_parent (t, i, n); p != G_MAXUINT; p = dbtree_parent (t, p, n))
    d++;
  return d;
}

static void
lower_tree_all_reduce (GPtrArray *plan, const HwCluster *c, const guint *ranks, guint n,
                       double bytes)
{
  guint depth = 0;
  double alpha = 0;
  for (guint t = 0; t < 2; t++)
    for (guint i = 0; i < n; i++)
      {
        guint p = dbtree_parent (t, i, n);
        if (p == G_MAXUINT)
          continue;
        depth = MAX (depth, dbtree_depth (t, i, n));
        alpha = MAX (
            alpha, MAX (hop_latency (c, ranks[i], ranks[p]), hop_latency (c, ranks[p], ranks[i])));
      }
  GArray *up = new_phase (), *down = new_phase ();
  for (guint t = 0; t < 2; t++)
    for (guint i = 0; i < n; i++)
      {
        guint p = dbtree_parent (t, i, n);
        if (p == G_MAXUINT)
          continue;
        add_flow (up, ranks[i], ranks[p], bytes / 2, depth * alpha);
        add_flow (down, ranks[p], ranks[i], bytes / 2, depth * alpha);
      }
  push_phase (plan, up);
  push_phase (plan, down);
}

/* ---- hierarchical --------------------------------------------------------------------- */

/* Ranks grouped by node in order of first appearance: an m × p_l table, node-major
 * (table[k·p_l + j] = j-th rank of the k-th node). NULL when the nodes hold different
 * numbers of ranks. */
static guint *
group_by_node (const HwCluster *c, const guint *ranks, guint n, guint *p_l_out, guint *m_out)
{
  const HwTopology *topo = hw_cluster_topology (c);
  g_autofree guint *group = g_new (guint, n); /* node group of ranks[i] */
  g_autofree guint *nodes = g_new (guint, n); /* distinct nodes, first-appearance order */
  g_autofree guint *count = g_new0 (guint, n);
  guint m = 0;
  for (guint i = 0; i < n; i++)
    {
      guint node = hw_topology_node_of (topo, ranks[i]), k = 0;
      while (k < m && nodes[k] != node)
        k++;
      if (k == m)
        nodes[m++] = node;
      group[i] = k;
      count[k]++;
    }
  guint p_l = n / m;
  for (guint k = 0; k < m; k++)
    if (count[k] != p_l)
      return NULL;
  guint *table = g_new (guint, n);
  memset (count, 0, n * sizeof (guint));
  for (guint i = 0; i < n; i++)
    table[group[i] * p_l + count[group[i]]++] = ranks[i];
  *p_l_out = p_l;
  *m_out = m;
  return table;
}

/* One phase holding `kind` on every node's ranks (intra: the rows of `table`) or on every
 * position's ranks across nodes (inter: the columns), all concurrently. */
static GArray *
grouped_phase (const HwCluster *c, HwCollectiveKind kind, const guint *table, guint p_l, guint m,
               gboolean inter, double bytes)
{
  GArray *phase = new_phase ();
  guint n_groups = inter ? p_l : m, size = inter ? m : p_l;
  g_autofree guint *ring = g_new (guint, size);
  for (guint g = 0; g < n_groups; g++)
    {
      for (guint i = 0; i < size; i++)
        ring[i] = inter ? table[i * p_l + g] : table[g * p_l + i];
      add_ring_kind (phase, c, kind, ring, size, bytes);
      if (kind == HW_COLLECTIVE_BROADCAST && inter)
        break; /* only the root's column crosses nodes */
    }
  return phase;
}

/* Appends the levels of `levels` as one pipelined phase (file comment): every flow starts
 * after the sum of the levels' largest latencies. Frees `levels`. */
static void
push_pipelined (GPtrArray *plan, GPtrArray *levels)
{
  double fill = 0;
  GArray *phase = new_phase ();
  for (guint i = 0; i < levels->len; i++)
    {
      GArray *level = g_ptr_array_index (levels, i);
      double alpha = 0;
      for (guint k = 0; k < level->len; k++)
        alpha = MAX (alpha, g_array_index (level, HwFlow, k).latency);
      fill += alpha;
      g_array_append_vals (phase, level->data, level->len);
    }
  for (guint k = 0; k < phase->len; k++)
    g_array_index (phase, HwFlow, k).latency = fill;
  g_ptr_array_unref (levels);
  push_phase (plan, phase);
}

/* FALSE when the ranks are not spread evenly over nodes (the caller then uses the ring). */
static gboolean
lower_hierarchical (GPtrArray *plan, const HwCluster *c, HwCollectiveKind kind, const guint *ranks,
                    guint n, double bytes)
{
  guint p_l = 0, m = 0;
  g_autofree guint *t = group_by_node (c, ranks, n, &p_l, &m);
  if (t == NULL)
    return FALSE;
  const HwCollectiveKind RS = HW_COLLECTIVE_REDUCE_SCATTER, AG = HW_COLLECTIVE_ALL_GATHER;
  GPtrArray *levels = g_ptr_array_new_with_free_func ((GDestroyNotify) g_array_unref);
  GPtrArray *final = plan;
  plan = levels;
  switch (kind)
    {
    case HW_COLLECTIVE_ALL_REDUCE:
      push_phase (plan, grouped_phase (c, RS, t, p_l, m, FALSE, bytes));
      push_phase (plan, grouped_phase (c, kind, t, p_l, m, TRUE, bytes / p_l));
      push_phase (plan, grouped_phase (c, AG, t, p_l, m, FALSE, bytes));
      break;
    case HW_COLLECTIVE_ALL_GATHER:
      push_phase (plan, grouped_phase (c, AG, t, p_l, m, TRUE, bytes / p_l));
      push_phase (plan, grouped_phase (c, AG, t, p_l, m, FALSE, bytes));
      break;
    case HW_COLLECTIVE_REDUCE_SCATTER:
      push_phase (plan, grouped_phase (c, RS, t, p_l, m, FALSE, bytes));
      push_phase (plan, grouped_phase (c, RS, t, p_l, m, TRUE, bytes / p_l));
      break;
    case HW_COLLECTIVE_BROADCAST:
      push_phase (plan, grouped_phase (c, kind, t, p_l, m, TRUE, bytes));
      push_phase (plan, grouped_phase (c, kind, t, p_l, m, FALSE, bytes));
      break;
    default:
      g_assert_not_reached ();
    }
  push_pipelined (final, levels);
  return TRUE;
}

/* ---- entry ---------------------------------------------------------------------------- */

static gboolean
on_one_node (const HwCluster *c, const guint *ranks, guint n)
{
  const HwTopology *topo = hw_cluster_topology (c);
  for (guint i = 1; i < n; i++)
    if (hw_topology_node_of (topo, ranks[i]) != hw_topology_node_of (topo, ranks[0]))
      return FALSE;
  return TRUE;
}

static void
lower_direct (GPtrArray *plan, const HwCluster *c, HwCollectiveKind kind, const guint *ranks,
              guint n, double bytes)
{
  GArray *phase = new_phase ();
  if (kind == HW_COLLECTIVE_SEND_RECV)
    add_flow (phase, ranks[0], ranks[1], bytes, hop_latency (c, ranks[0], ranks[1]));
  else
    for (guint i = 0; i < n; i++)
      for (guint j = 0; j < n; j++)
        if (i != j)
          add_flow (phase, ranks[i], ranks[j], bytes / n, hop_latency (c, ranks[i], ranks[j]));
  push_phase (plan, phase);
}

/* A ring across nodes as NCCL runs it: one channel per NIC (at most one per local rank),
 * each a ring over the same nodes whose local order is rotated by the channel, so channel k
 * leaves every node from its k-th rank and its node-crossing edges use that rank's NIC
 * (NCCL builds a ring per channel over the rails). Each channel carries 1/K of the bytes.
 * FALSE (nothing added) for ranks on one node or not evenly spread over nodes. */
static gboolean
add_ring_channels (GArray *phase, const HwCluster *c, HwCollectiveKind kind, const guint *ranks,
                   guint n, double bytes)
{
  guint p_l = 0, m = 0;
  g_autofree guint *t = group_by_node (c, ranks, n, &p_l, &m);
  if (t == NULL || m < 2)
    return FALSE;
  guint k_max = MAX (1u, MIN (hw_cluster_node_spec (c)->n_nics, p_l));
  g_autofree guint *ring = g_new (guint, n);
  for (guint k = 0; k < k_max; k++)
    {
      for (guint j = 0; j < m; j++)
        for (guint i = 0; i < p_l; i++)
          ring[j * p_l + i] = t[j * p_l + (k + i) % p_l];
      add_ring_kind (phase, c, kind, ring, n, bytes / k_max);
    }
  return TRUE;
}

GPtrArray *
hw_collective_lower (const HwCluster *cluster, HwCollectiveKind kind,
                     HwCollectiveAlgorithm algorithm, const guint *ranks, guint n_ranks,
                     double bytes)
{
  GPtrArray *plan = g_ptr_array_new_with_free_func ((GDestroyNotify) g_array_unref);
  if (n_ranks < 2 || bytes <= 0)
    return plan;
  if (kind == HW_COLLECTIVE_ALL_TO_ALL || kind == HW_COLLECTIVE_SEND_RECV)
    {
      lower_direct (plan, cluster, kind, ranks, n_ranks, bytes);
      return plan;
    }
  if (algorithm == HW_ALGORITHM_AUTO)
    algorithm
        = on_one_node (cluster, ranks, n_ranks) ? HW_ALGORITHM_RING : HW_ALGORITHM_HIERARCHICAL;
  if (algorithm == HW_ALGORITHM_TREE && kind == HW_COLLECTIVE_ALL_REDUCE)
    {
      lower_tree_all_reduce (plan, cluster, ranks, n_ranks, bytes);
      return plan;
    }
  if (algorithm == HW_ALGORITHM_HIERARCHICAL
      && lower_hierarchical (plan, cluster, kind, ranks, n_ranks, bytes))
    return plan;
  GArray *phase = new_phase ();
  if (!add_ring_channels (phase, cluster, kind, ranks, n_ranks, bytes))
    add_ring_kind (phase, cluster, kind, ranks, n_ranks, bytes);
  push_phase (plan, phase);
  return plan;
}
