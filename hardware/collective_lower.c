/* hardware/collective_lower.c — collective algorithms lowered to phases of flows, with
 * NCCL's latency, protocol and channel model (hardware/collective_nccl.c).
 *
 * Every flow carries its payload divided by the protocol's wire efficiency (LL 0.5, LL128
 * 0.92, Simple 1), has a rate bound (the protocol's NCCL bus bandwidth over that efficiency,
 * split over the flows one rank drives at once), and the first phase's flows wait the
 * collective's latency: the node's collective_overhead (call to first byte) plus NCCL's
 * latency for the algorithm and protocol. The links' capacities and the sharing come from
 * the fluid, so the slowest of NVLink, NIC or spine still bounds the collective.
 *
 * Ring (Patarasuk & Yuan, JPDC 2009; NCCL's ring): p ranks in the given order, rank i
 * sending to i+1; all-reduce is 2(p−1) steps of S/p per edge, pipelined in chunks, so in the
 * limit every edge carries 2(p−1)/p·S as one stream: ONE phase of p neighbour flows. Alone on
 * links of bandwidth B: T = L + 2(p−1)/p·S/min(B, cap). All-gather and reduce-scatter:
 * (p−1)/p·S per edge. Broadcast: a pipelined chain, S per edge. Across nodes NCCL runs one
 * channel per NIC (at most one per local rank), each a ring over the same nodes whose local
 * order is rotated by the channel, so every NIC carries one boundary edge (rings per rail).
 *
 * Tree (all-reduce only, as NCCL): the double binary tree of Sanders, Speck & Träff
 * (Parallel Computing 2009) as NCCL builds it (src/graph/trees.cc): over the nodes, tree 1 is
 * the in-order binary tree over node positions 0..m−1, tree 2 its mirror (m even) or shift
 * (m odd); inside each node a chain of its GPUs, towards its first GPU in tree 1 and its last
 * in tree 2. Across nodes NCCL builds one such pair per channel, a channel per NIC, with the
 * chain rotated so every NIC carries a chain's end (as the ring's channels). Each tree reduces and broadcasts half the buffer: phase "up" (child → parent,
 * S/2 per edge per tree) then "down"; a rank drives at most two flows per phase (plus its
 * node's inter-node edges at a chain's end), each bounded by half the tree's NCCL bus
 * bandwidth (NCCL's algorithm bandwidth is busBw × 0.5).
 *
 * NVLS (NVLink SHARP, all-reduce in one NVSwitch node): the switch reduces what every GPU
 * pushes and multicasts the result, so each GPU port carries (n+1)/n·S each way. The switch
 * is not a rank of the topology; the port load is placed as a ring of flows of (n+1)/n·S
 * (GPU i → i+1), which loads every GPU's NVLink tx and rx exactly that much.
 *
 * Hierarchical (two-level, Horovod's HOROVOD_HIERARCHICAL_ALLREDUCE: NCCL reduce-scatter
 * inside the node, all-reduce of each shard across nodes, NCCL all-gather inside; horovod/
 * common/ops/nccl_operations.cc NCCLHierarchicalAllreduce): ranks grouped by node in order of
 * first appearance, every node holding the same p_l (else the ring is used). The levels are
 * separate collectives run one after the other — a shard can cross nodes only once reduced,
 * and be gathered only once reduced across nodes — so they are sequential phases (until
 * 2026-12 they were merged into one pipelined phase, which let 2 DGX-A100 nodes reach 250
 * GB/s busbw, above one node's 234: impossible, since the intra-node levels alone move
 * 2(p_l−1)/p_l·S per NVLink). All-gather: inter-node of S/p_l, then intra-node; reduce-scatter
 * the reverse; broadcast: a chain among the nodes' first ranks, then inside each node.
 *
 * AUTO on a node whose collective_tuner is a platform plugin (AWS's aws-ofi-nccl region
 * tuner on P5en and P6-B200, hardware/collective_tuner.c): the plugin's region at (size,
 * ranks) names the algorithm and protocol, costed by this model; where it leaves the choice
 * to NCCL (at most 2 nodes, no region, or only regions of algorithms not lowered here), and on
 * every other node, AUTO is NCCL's own tuner (ncclTopoGetAlgoInfo picks the (algorithm,
 * protocol) of least estimated time): every enabled candidate — ring with LL, LL128 and Simple, the tree for
 * all-reduce, NVLS where eligible — is lowered with NCCL's estimate terms (the ×1.4 ring
 * plateau of ncclTopoGetAlgoTime, which only steers the choice) and the one with the least
 * idle-cluster time is chosen, then lowered again as it runs (without them,
 * hardware/collective_nccl.c); an explicit algorithm picks its best protocol the same way.
 * The plugin's pick is lowered as it runs directly. Hierarchical is not
 * one of NCCL's algorithms and is only used when asked for. All-to-all: n(n−1) direct flows
 * of S/n, one phase, each with its route latency. Send/recv: one flow. Units: B, s, B/s.
 */
#include "config.h"
#include "hardware/collective-private.h"
#include "hardware/cluster-private.h"
#include "hardware/topology.h"

#include <math.h>
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

static void
push_phase (GPtrArray *plan, GArray *phase)
{
  if (phase->len > 0)
    g_ptr_array_add (plan, phase);
  else
    g_array_unref (phase);
}

static void
add_flow (GArray *phase, guint src, guint dst, double bytes, double latency, double rate)
{
  HwFlow f = { src, dst, bytes, latency, rate };
  if (bytes > 0)
    g_array_append_val (phase, f);
}

static GPtrArray *
new_plan (void)
{
  return g_ptr_array_new_with_free_func ((GDestroyNotify) g_array_unref);
}

/* One candidate: how the flows are sized, bounded and delayed. */
typedef struct
{
  HwCollectiveProtocol proto;
  double eff;     /* wire efficiency of the protocol */
  double latency; /* s before the first phase's flows start */
  double cap;     /* payload bus bandwidth a rank may drive (B/s), INFINITY: none */
} Proto;

/* Ranks grouped by node in order of first appearance: an m × p_l table, node-major
 * (table[k·p_l + j] = j-th rank of the k-th node). NULL when the nodes hold different
 * numbers of ranks; *m_out is set either way. */
static guint *
group_by_node (const HwCluster *c, const guint *ranks, guint n, guint *p_l_out, guint *m_out)
{
  const HwTopology *topo = hw_cluster_topology (c);
  g_autofree guint *group = g_new (guint, n);
  g_autofree guint *nodes = g_new (guint, n);
  g_autofree guint *count = g_new0 (guint, n);
  g_autoptr (GHashTable) index = g_hash_table_new (g_direct_hash, g_direct_equal); /* node+1 → k+1 */
  guint m = 0;
  for (guint i = 0; i < n; i++)
    {
      guint node = hw_topology_node_of (topo, ranks[i]);
      guint k = GPOINTER_TO_UINT (g_hash_table_lookup (index, GUINT_TO_POINTER (node + 1)));
      if (k == 0) /* nodes in order of first appearance */
        {
          nodes[m++] = node;
          k = m;
          g_hash_table_insert (index, GUINT_TO_POINTER (node + 1), GUINT_TO_POINTER (k));
        }
      group[i] = k - 1;
      count[k - 1]++;
    }
  *m_out = m;
  guint p_l = n / m;
  for (guint k = 0; k < m; k++)
    if (count[k] != p_l)
      return NULL;
  guint *table = g_new (guint, n);
  memset (count, 0, n * sizeof (guint));
  for (guint i = 0; i < n; i++)
    table[group[i] * p_l + count[group[i]]++] = ranks[i];
  *p_l_out = p_l;
  return table;
}

static guint
count_nodes (const HwCluster *c, const guint *ranks, guint n)
{
  guint p_l = 0, m = 1;
  g_free (group_by_node (c, ranks, n, &p_l, &m));
  return m;
}

/* ---- ring ------------------------------------------------------------------------------ */

/* Ring over ring[0..n): n neighbour flows of `payload` each (`chain`: n − 1, no edge back to
 * ring[0]); `share` of the rank's protocol cap per flow. */
static void
add_ring (GArray *phase, const guint *ring, guint n, double payload, const Proto *pr, double share,
          gboolean chain)
{
  if (n < 2)
    return;
  guint edges = chain ? n - 1 : n;
  for (guint i = 0; i < edges; i++)
    add_flow (phase, ring[i], ring[(i + 1) % n], payload / pr->eff, pr->latency,
              share * pr->cap / pr->eff);
}

/* Per-edge payload of `kind`'s ring form over n ranks on `bytes` (collective.h sizes). */
static double
ring_edge_payload (HwCollectiveKind kind, guint n, double bytes)
{
  double frac = (double) (n - 1) / n;
  switch (kind)
    {
    case HW_COLLECTIVE_ALL_REDUCE:
      return 2 * frac * bytes;
    case HW_COLLECTIVE_ALL_GATHER:
    case HW_COLLECTIVE_REDUCE_SCATTER:
      return frac * bytes;
    case HW_COLLECTIVE_BROADCAST:
      return bytes;
    default:
      g_assert_not_reached ();
    }
}

/* The ring over all ranks: one channel per NIC across nodes (file comment), else one ring. */
static void
lower_ring (GPtrArray *plan, const HwCluster *c, HwCollectiveKind kind, const guint *ranks, guint n,
            double bytes, const Proto *pr)
{
  GArray *phase = new_phase ();
  gboolean chain = kind == HW_COLLECTIVE_BROADCAST;
  double edge = ring_edge_payload (kind, n, bytes);
  guint p_l = 0, m = 1;
  g_autofree guint *t = group_by_node (c, ranks, n, &p_l, &m);
  if (t == NULL || m < 2)
    add_ring (phase, ranks, n, edge, pr, 1.0, chain);
  else
    {
      guint k_max = MAX (1u, MIN (hw_cluster_node_spec (c)->n_nics, p_l));
      g_autofree guint *ring = g_new (guint, n);
      for (guint k = 0; k < k_max; k++)
        {
          for (guint j = 0; j < m; j++)
            for (guint i = 0; i < p_l; i++)
              ring[j * p_l + i] = t[j * p_l + (k + i) % p_l];
          add_ring (phase, ring, n, edge / k_max, pr, 1.0 / k_max, chain);
        }
    }
  push_phase (plan, phase);
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

/* Whether the tree's edges across `m` nodes may be laid as a circulant of degree two: node
 * k's tree-0 chain end sending to node k + 1's, its tree-1 end to node k − 1's, in place of
 * the double binary tree's parents. In NCCL's double binary tree a node is internal in one
 * tree and a leaf in the other. When there is a channel per local GPU of the group (k_max =
 * p_l: NICs at least as many), the chains' rotation makes every such GPU one channel's
 * tree-0 end and another's tree-1 end, so each sends two tree flows (one a tree) and
 * receives at most two (its children in the tree where it is internal): at most what the
 * circulant gives every GPU, and as much on the nodes that are internal with two children.
 * Where only per-node resources carry inter-node traffic (NICs, a node's spine links, its
 * PCIe), the most loaded of them carry the same tree flows in both layouts, so the slowest
 * flow, which ends each phase, runs at the same max-min rate and the collective takes the
 * same time (tests/unit/hardware/test_collective.c compares them); that holds in one pod, and across pods whose core is
 * tapered no further than their spines (pod_oversubscription 1: a pod's core links carry
 * what its nodes' spine links do, so they bind no earlier). The circulant is invariant
 * under a shift of the nodes, so data-parallel ranks form rank classes under the tree as
 * under the ring (models/plan/rank_classes.c; with the tree every node was a class of its
 * own: a 4,096-node DDP step took 22 s against 0.8 s under the ring). With a tapered core
 * shared between pods the tree is kept: which pods its edges cross then matters. Two nodes
 * keep it too (one flow each way, where a circulant of two would send two). */
static gboolean
tree_edges_as_circulant (const HwCluster *c, guint m, guint p_l, guint k_max)
{
  const HwFabricSpec *f = hw_cluster_fabric (c);
  guint pod = f->nodes_per_pod;
  gboolean one_pod = pod == 0 || pod >= hw_cluster_n_nodes (c);
  return m >= 3 && k_max == p_l && (one_pod || f->pod_oversubscription <= 1);
}

/* NCCL's tree over nodes (src/graph/trees.cc, connectTrees): inside each node a chain of its
 * ranks, tree 0 towards the node's first rank, tree 1 towards its last (so the two trees
 * leave the node on different GPUs, hence NICs); the chains' ends joined across nodes by the
 * double binary tree over node positions; one such pair per channel (a channel per NIC,
 * local order rotated by the channel), each on S/K. Ranks spread unevenly: the double binary
 * tree over all positions. One node: the two chains. */
static void
add_tree_edges (GArray *up, GArray *down, const HwCluster *c, const guint *ranks, guint n,
                double wire, double rate, double latency)
{
  guint p_l = 0, m = 1;
  g_autofree guint *t = group_by_node (c, ranks, n, &p_l, &m);
  for (guint tr = 0; tr < 2; tr++)
    {
      if (t == NULL)
        {
          for (guint i = 0; i < n; i++)
            {
              guint p = dbtree_parent (tr, i, n);
              if (p == G_MAXUINT)
                continue;
              add_flow (up, ranks[i], ranks[p], wire, latency, rate);
              add_flow (down, ranks[p], ranks[i], wire, 0, rate);
            }
          continue;
        }
      /* one channel per NIC across nodes, the local order rotated by the channel */
      guint k_max = m < 2 ? 1 : MAX (1u, MIN (hw_cluster_node_spec (c)->n_nics, p_l));
      gboolean circulant = tree_edges_as_circulant (c, m, p_l, k_max);
      for (guint ch = 0; ch < k_max; ch++)
        for (guint k = 0; k < m; k++)
          {
#define LOCAL(node, j) t[(node) * p_l + ((j) + ch) % p_l]
            for (guint j = 1; j < p_l; j++)
              {
                guint child = tr == 0 ? LOCAL (k, j) : LOCAL (k, p_l - 1 - j);
                guint parent = tr == 0 ? LOCAL (k, j - 1) : LOCAL (k, p_l - j);
                add_flow (up, child, parent, wire / k_max, latency, rate / k_max);
                add_flow (down, parent, child, wire / k_max, 0, rate / k_max);
              }
            guint pk = !circulant ? dbtree_parent (tr, k, m)
                       : tr == 0    ? (k + 1) % m
                                    : (k + m - 1) % m;
            if (pk == G_MAXUINT)
              continue;
            guint head = tr == 0 ? LOCAL (k, 0) : LOCAL (k, p_l - 1);
            guint phead = tr == 0 ? LOCAL (pk, 0) : LOCAL (pk, p_l - 1);
#undef LOCAL
            add_flow (up, head, phead, wire / k_max, latency, rate / k_max);
            add_flow (down, phead, head, wire / k_max, 0, rate / k_max);
          }
    }
}

static void
lower_tree_all_reduce (GPtrArray *plan, const HwCluster *c, const guint *ranks, guint n,
                       double bytes, const Proto *pr)
{
  GArray *up = new_phase (), *down = new_phase ();
  add_tree_edges (up, down, c, ranks, n, bytes / 2 / pr->eff, pr->cap / 2 / pr->eff, pr->latency);
  push_phase (plan, up);
  push_phase (plan, down);
}

/* ---- NVLS ------------------------------------------------------------------------------ */

static void
lower_nvls (GPtrArray *plan, const guint *ranks, guint n, double bytes, const Proto *pr)
{
  GArray *phase = new_phase ();
  double port = (double) (n + 1) / n * bytes;
  for (guint i = 0; i < n; i++)
    add_flow (phase, ranks[i], ranks[(i + 1) % n], port, pr->latency, pr->cap);
  push_phase (plan, phase);
}

/* ---- hierarchical --------------------------------------------------------------------- */

/* One phase holding `kind`'s ring on every node's ranks (intra: the rows of `table`) or on
 * every position's ranks across nodes (inter: the columns), all concurrently, Simple
 * protocol, latency `lat`. */
static GArray *
grouped_phase (const HwCluster *c, HwCollectiveKind kind, const guint *table, guint p_l, guint m,
               gboolean inter, double bytes, double lat)
{
  GArray *phase = new_phase ();
  guint n_groups = inter ? p_l : m, size = inter ? m : p_l;
  Proto pr = { HW_PROTO_SIMPLE, 1.0, lat, hw_nccl_ring_bus_bandwidth (hw_cluster_node_spec (c)) };
  g_autofree guint *ring = g_new (guint, size);
  for (guint g = 0; g < n_groups; g++)
    {
      for (guint i = 0; i < size; i++)
        ring[i] = inter ? table[i * p_l + g] : table[g * p_l + i];
      if (size >= 2)
        add_ring (phase, ring, size, ring_edge_payload (kind, size, bytes), &pr, 1.0,
                  kind == HW_COLLECTIVE_BROADCAST);
      if (kind == HW_COLLECTIVE_BROADCAST && inter)
        break; /* only the root's column crosses nodes */
    }
  return phase;
}

/* FALSE when the ranks are not spread evenly over nodes (the caller then uses the ring). */
static gboolean
lower_hierarchical (GPtrArray *plan, const HwCluster *c, HwCollectiveKind kind, const guint *ranks,
                    guint n, double bytes)
{
  guint p_l = 0, m = 1;
  g_autofree guint *t = group_by_node (c, ranks, n, &p_l, &m);
  if (t == NULL)
    return FALSE;
  const HwNodeSpec *node = hw_cluster_node_spec (c);
  const HwCollectiveKind RS = HW_COLLECTIVE_REDUCE_SCATTER, AG = HW_COLLECTIVE_ALL_GATHER;
  const HwCollectiveProtocol S = HW_PROTO_SIMPLE;
  double o = node->collective_overhead; /* once: the first level's */
#define LAT_IN(k) (hw_nccl_ring_latency (node, (k), S, p_l, 1, bytes, FALSE))
#define LAT_EX(k, b) (hw_nccl_ring_latency (node, (k), S, m, m, (b), FALSE))
  switch (kind)
    {
    case HW_COLLECTIVE_ALL_REDUCE:
      push_phase (plan, grouped_phase (c, RS, t, p_l, m, FALSE, bytes, o + LAT_IN (RS)));
      push_phase (plan, grouped_phase (c, kind, t, p_l, m, TRUE, bytes / p_l,
                                       LAT_EX (kind, bytes / p_l)));
      push_phase (plan, grouped_phase (c, AG, t, p_l, m, FALSE, bytes, LAT_IN (AG)));
      break;
    case HW_COLLECTIVE_ALL_GATHER:
      push_phase (plan, grouped_phase (c, AG, t, p_l, m, TRUE, bytes / p_l,
                                       o + LAT_EX (AG, bytes / p_l)));
      push_phase (plan, grouped_phase (c, AG, t, p_l, m, FALSE, bytes, LAT_IN (AG)));
      break;
    case HW_COLLECTIVE_REDUCE_SCATTER:
      push_phase (plan, grouped_phase (c, RS, t, p_l, m, FALSE, bytes, o + LAT_IN (RS)));
      push_phase (plan, grouped_phase (c, RS, t, p_l, m, TRUE, bytes / p_l,
                                       LAT_EX (RS, bytes / p_l)));
      break;
    case HW_COLLECTIVE_BROADCAST:
      push_phase (plan, grouped_phase (c, kind, t, p_l, m, TRUE, bytes, o + LAT_EX (kind, bytes)));
      push_phase (plan, grouped_phase (c, kind, t, p_l, m, FALSE, bytes, LAT_IN (kind)));
      break;
    default:
      g_assert_not_reached ();
    }
#undef LAT_IN
#undef LAT_EX
  return TRUE;
}

/* ---- direct ---------------------------------------------------------------------------- */

static void
lower_direct (GPtrArray *plan, const HwCluster *c, HwCollectiveKind kind, const guint *ranks,
              guint n, double bytes)
{
  GArray *phase = new_phase ();
  if (kind == HW_COLLECTIVE_SEND_RECV && n == 2)
    add_flow (phase, ranks[0], ranks[1], bytes, hop_latency (c, ranks[0], ranks[1]), INFINITY);
  else if (kind == HW_COLLECTIVE_SEND_RECV) /* the ring shift (collective.h) */
    for (guint i = 0; i < n; i++)
      add_flow (phase, ranks[i], ranks[(i + 1) % n], bytes,
                hop_latency (c, ranks[i], ranks[(i + 1) % n]), INFINITY);
  else
    for (guint i = 0; i < n; i++)
      for (guint j = 0; j < n; j++)
        if (i != j)
          add_flow (phase, ranks[i], ranks[j], bytes / n, hop_latency (c, ranks[i], ranks[j]),
                    INFINITY);
  push_phase (plan, phase);
}

/* ---- choice ---------------------------------------------------------------------------- */

/* The candidate (algorithm `a`, protocol `p`) lowered into a new plan; NULL when it does not
 * apply (disabled protocol, NVLS not eligible, tree for a kind other than all-reduce).
 * `choosing`: with NCCL's selection-only latency terms (hw_nccl_ring_latency), for comparing
 * candidates as NCCL does; FALSE: the plan that runs. */
static GPtrArray *
lower_candidate (const HwCluster *c, HwCollectiveKind kind, HwCollectiveAlgorithm a,
                 HwCollectiveProtocol p, const guint *ranks, guint n, guint m, double bytes,
                 gboolean choosing)
{
  const HwNodeSpec *node = hw_cluster_node_spec (c);
  if (!hw_nccl_protocol_enabled (node, p))
    return NULL;
  Proto pr = { p, hw_nccl_wire_efficiency (p), node->collective_overhead, INFINITY };
  GPtrArray *plan = new_plan ();
  switch (a)
    {
    case HW_ALGORITHM_RING:
      pr.latency += hw_nccl_ring_latency (node, kind, p, n, m, bytes, choosing);
      pr.cap = hw_nccl_ring_payload_cap (node, p, m);
      lower_ring (plan, c, kind, ranks, n, bytes, &pr);
      return plan;
    case HW_ALGORITHM_TREE:
      if (kind != HW_COLLECTIVE_ALL_REDUCE)
        break;
      pr.latency += hw_nccl_tree_latency (node, p, n, m);
      pr.cap = hw_nccl_tree_payload_cap (node, p, m, bytes);
      lower_tree_all_reduce (plan, c, ranks, n, bytes, &pr);
      return plan;
    case HW_ALGORITHM_NVLS:
      if (p != HW_PROTO_SIMPLE || !hw_nccl_nvls_eligible (node, kind, n, m))
        break;
      pr.latency += hw_nccl_nvls_latency ();
      pr.cap = hw_nccl_nvls_port_bandwidth (node);
      lower_nvls (plan, ranks, n, bytes, &pr);
      return plan;
    default:
      break;
    }
  g_ptr_array_unref (plan);
  return NULL;
}

/* The plan of the node's platform tuner (collective_tuner.c): the first of its regions at
 * (bytes, n) whose algorithm this model lowers and whose protocol NCCL enables here, as the
 * aws-ofi-nccl tuner skips what NCCL's cost table ignores; NULL when it leaves the choice
 * to NCCL's own model (no region, or only NVLS_TREE / PAT ones, which are not lowered). */
static GPtrArray *
lower_tuner_pick (const HwCluster *c, HwCollectiveKind kind, const guint *ranks, guint n, guint m,
                  double bytes)
{
  HwTunerPick picks[8];
  guint k = hw_tuner_regions_at (hw_cluster_node_spec (c)->collective_tuner, kind, n, m, bytes,
                                 picks, G_N_ELEMENTS (picks));
  for (guint i = 0; i < k; i++)
    {
      if (picks[i].algorithm != HW_TUNER_TREE && picks[i].algorithm != HW_TUNER_RING)
        continue;
      HwCollectiveAlgorithm a
          = picks[i].algorithm == HW_TUNER_TREE ? HW_ALGORITHM_TREE : HW_ALGORITHM_RING;
      GPtrArray *plan
          = lower_candidate (c, kind, a, picks[i].protocol, ranks, n, m, bytes, FALSE);
      if (plan != NULL)
        return plan;
    }
  return NULL;
}

/* Keeps the least-time plan of `algorithm` (AUTO: of ring, tree and NVLS) over the
 * protocols, compared as NCCL's estimates (choosing), and returns the winner lowered as it
 * runs; NULL when none applies. */
static GPtrArray *
lower_best (const HwCluster *c, HwCollectiveKind kind, HwCollectiveAlgorithm algorithm,
            const guint *ranks, guint n, double bytes)
{
  static const HwCollectiveAlgorithm automatic[] = { HW_ALGORITHM_RING, HW_ALGORITHM_TREE,
                                                     HW_ALGORITHM_NVLS };
  const HwCollectiveAlgorithm *algos = algorithm == HW_ALGORITHM_AUTO ? automatic : &algorithm;
  guint n_algos = algorithm == HW_ALGORITHM_AUTO ? G_N_ELEMENTS (automatic) : 1;
  guint m = count_nodes (c, ranks, n);
  if (algorithm == HW_ALGORITHM_AUTO)
    {
      GPtrArray *plan = lower_tuner_pick (c, kind, ranks, n, m, bytes);
      if (plan != NULL)
        return plan;
    }
  double best_t = INFINITY;
  HwCollectiveAlgorithm best_a = HW_ALGORITHM_AUTO;
  HwCollectiveProtocol best_p = HW_PROTO_SIMPLE;
  for (guint i = 0; i < n_algos; i++)
    for (guint p = 0; p < HW_N_PROTOCOLS; p++)
      {
        g_autoptr (GPtrArray) plan = lower_candidate (c, kind, algos[i], p, ranks, n, m, bytes, TRUE);
        if (plan == NULL)
          continue;
        double t = hw_collective_plan_time (c, plan);
        if (t < best_t)
          best_t = t, best_a = algos[i], best_p = p;
      }
  if (best_a == HW_ALGORITHM_AUTO)
    return NULL;
  return lower_candidate (c, kind, best_a, best_p, ranks, n, m, bytes, FALSE);
}

static GPtrArray *
lower (const HwCluster *cluster, HwCollectiveKind kind, HwCollectiveAlgorithm algorithm,
       const guint *ranks, guint n_ranks, double bytes)
{
  if (kind == HW_COLLECTIVE_ALL_TO_ALL || kind == HW_COLLECTIVE_SEND_RECV)
    {
      GPtrArray *plan = new_plan ();
      lower_direct (plan, cluster, kind, ranks, n_ranks, bytes);
      return plan;
    }
  if (algorithm == HW_ALGORITHM_HIERARCHICAL)
    {
      GPtrArray *plan = new_plan ();
      if (lower_hierarchical (plan, cluster, kind, ranks, n_ranks, bytes))
        return plan;
      g_ptr_array_unref (plan);
      algorithm = HW_ALGORITHM_RING;
    }
  GPtrArray *plan = lower_best (cluster, kind, algorithm, ranks, n_ranks, bytes);
  if (plan == NULL) /* tree or NVLS where they do not apply: the ring, as NCCL falls back */
    plan = lower_best (cluster, kind, HW_ALGORITHM_RING, ranks, n_ranks, bytes);
  return plan;
}

/* ---- memo ------------------------------------------------------------------------------
 * A step issues the same collective on the same group over and over (every layer's
 * all-gather and reduce-scatter, every micro-batch's), and the auto algorithm lowers and
 * times every candidate each time (hw_collective_plan_time and the lowering were a third of
 * a 512-GPU run). Each distinct key is lowered once per cluster (cluster-private.h
 * hw_cluster_lower_memo); callers get a copy, which they may change, or borrow the memo's
 * own plan to read it (hw_collective_lower_borrowed: the collective groups' preparation
 * and the rank-class questions, hardware/collective.c). */

static GPtrArray *
plan_copy (const GPtrArray *plan)
{
  GPtrArray *copy = g_ptr_array_new_full (plan->len, (GDestroyNotify) g_array_unref);
  for (guint p = 0; p < plan->len; p++)
    g_ptr_array_add (copy, g_array_copy (g_ptr_array_index (plan, p)));
  return copy;
}

const GPtrArray *
hw_collective_lower_borrowed (const HwCluster *cluster, HwCollectiveKind kind,
                              HwCollectiveAlgorithm algorithm, const guint *ranks, guint n_ranks,
                              double bytes, double *time_alone)
{
  if (n_ranks < 2 || bytes <= 0)
    {
      static GPtrArray *empty = NULL; /* one empty plan, never freed nor changed */
      if (g_once_init_enter (&empty))
        g_once_init_leave (&empty, new_plan ());
      if (time_alone != NULL)
        *time_alone = 0;
      return empty;
    }
  GHashTable *memo = hw_cluster_lower_memo (cluster);
  HwLowerKey *key = g_malloc (sizeof (HwLowerKey) + n_ranks * sizeof (guint));
  *key = (HwLowerKey){ .kind = kind, .algorithm = algorithm, .bytes = bytes,
                       .n_ranks = n_ranks };
  memcpy (key->ranks, ranks, n_ranks * sizeof (guint));
  HwLowerEntry *hit = g_hash_table_lookup (memo, key);
  if (hit == NULL)
    {
      hit = g_new (HwLowerEntry, 1);
      hit->plan = lower (cluster, kind, algorithm, ranks, n_ranks, bytes);
      hit->time_alone = hw_collective_plan_time (cluster, hit->plan);
      g_hash_table_insert (memo, key, hit);
    }
  else
    g_free (key);
  if (time_alone != NULL)
    *time_alone = hit->time_alone;
  return hit->plan;
}

GPtrArray *
hw_collective_lower_timed (const HwCluster *cluster, HwCollectiveKind kind,
                           HwCollectiveAlgorithm algorithm, const guint *ranks, guint n_ranks,
                           double bytes, double *time_alone)
{
  if (n_ranks < 2 || bytes <= 0)
    {
      if (time_alone != NULL)
        *time_alone = 0;
      return new_plan ();
    }
  return plan_copy (hw_collective_lower_borrowed (cluster, kind, algorithm, ranks, n_ranks,
                                                  bytes, time_alone));
}

GPtrArray *
hw_collective_lower (const HwCluster *cluster, HwCollectiveKind kind,
                     HwCollectiveAlgorithm algorithm, const guint *ranks, guint n_ranks,
                     double bytes)
{
  return hw_collective_lower_timed (cluster, kind, algorithm, ranks, n_ranks, bytes, NULL);
}
