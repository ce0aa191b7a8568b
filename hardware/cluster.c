/* hardware/cluster.c — GPUs of a cluster as fluid resources; see cluster.h. */
#include "config.h"
#include "hardware/cluster.h"

#include <math.h>

typedef struct
{
  SimResourceId compute;
  SimResourceId hbm;
  SimResourceId pcie_h2d;
  SimResourceId pcie_d2h;
} GpuResources;

struct _HwCluster
{
  HwNodeSpec node;
  guint n_nodes;
  SimFluid *fluid;
  GArray *gpus; /* GpuResources, one per rank */
};

void
hw_node_spec_clear (HwNodeSpec *spec)
{
  if (spec == NULL)
    return;
  g_clear_pointer (&spec->gpu, hw_gpu_spec_free);
}

static SimResourceId
add_resource (SimFluid *fluid, guint rank, const char *what, double capacity)
{
  g_autofree char *name = g_strdup_printf ("gpu%u.%s", rank, what);
  return sim_fluid_add_resource (fluid, name, capacity);
}

HwCluster *
hw_cluster_new (const HwNodeSpec *node, guint n_nodes, SimFluid *fluid)
{
  g_return_val_if_fail (node != NULL && node->gpu != NULL && node->n_gpus > 0, NULL);
  g_return_val_if_fail (n_nodes > 0 && fluid != NULL, NULL);
  HwCluster *c = g_new0 (HwCluster, 1);
  c->node = *node;
  c->node.gpu = hw_gpu_spec_copy (node->gpu);
  c->n_nodes = n_nodes;
  c->fluid = fluid;
  c->gpus = g_array_new (FALSE, TRUE, sizeof (GpuResources));
  const HwGpuSpec *g = c->node.gpu;
  for (guint r = 0; r < n_nodes * node->n_gpus; r++)
    {
      GpuResources res;
      res.compute = add_resource (fluid, r, "compute", 1.0);
      res.hbm = add_resource (fluid, r, "hbm", g->hbm_bandwidth * g->hbm_efficiency);
      res.pcie_h2d = add_resource (fluid, r, "pcie.h2d", g->pcie_bandwidth);
      res.pcie_d2h = add_resource (fluid, r, "pcie.d2h", g->pcie_bandwidth);
      g_array_append_val (c->gpus, res);
    }
  return c;
}

void
hw_cluster_free (HwCluster *cluster)
{
  if (cluster == NULL)
    return;
  hw_node_spec_clear (&cluster->node);
  g_array_unref (cluster->gpus);
  g_free (cluster);
}

guint
hw_cluster_n_ranks (const HwCluster *cluster)
{
  return cluster->gpus->len;
}

guint
hw_cluster_n_nodes (const HwCluster *cluster)
{
  return cluster->n_nodes;
}

const HwGpuSpec *
hw_cluster_gpu (const HwCluster *cluster, guint rank)
{
  g_return_val_if_fail (rank < cluster->gpus->len, NULL);
  return cluster->node.gpu;
}

const HwNodeSpec *
hw_cluster_node_spec (const HwCluster *cluster)
{
  return &cluster->node;
}

SimFluid *
hw_cluster_fluid (const HwCluster *cluster)
{
  return cluster->fluid;
}

/* Compute weight per kernel: seconds of the whole GPU the FLOPs need at the achievable
 * rate peak × efficiency. A dtype the GPU lacks falls back to fp32 (the CUDA cores), which
 * is what frameworks do when a tensor-core format is unavailable. */
static double
compute_seconds (const HwGpuSpec *g, HwDtype dtype, double flops)
{
  double peak = g->peak_flops[dtype];
  if (peak <= 0)
    peak = g->peak_flops[HW_DTYPE_FP32];
  return flops / (peak * g->compute_efficiency);
}

double
hw_cluster_kernel_time_alone (const HwCluster *cluster, guint rank, HwDtype dtype,
                              double flops, double bytes)
{
  const HwGpuSpec *g = hw_cluster_gpu (cluster, rank);
  double tc = compute_seconds (g, dtype, flops);
  double tm = bytes / (g->hbm_bandwidth * g->hbm_efficiency);
  return g->kernel_latency + MAX (tc, tm);
}

SimActivityId
hw_cluster_start_kernel (HwCluster *cluster, guint rank, HwDtype dtype, double flops,
                         double bytes, SimActivityDoneFunc done, gpointer user_data)
{
  g_return_val_if_fail (rank < cluster->gpus->len && flops >= 0 && bytes >= 0, 0);
  const GpuResources *res = &g_array_index (cluster->gpus, GpuResources, rank);
  const HwGpuSpec *g = cluster->node.gpu;
  SimUse uses[2];
  guint n = 0;
  double tc = compute_seconds (g, dtype, flops);
  if (tc > 0)
    uses[n++] = (SimUse){ res->compute, tc };
  if (bytes > 0)
    uses[n++] = (SimUse){ res->hbm, bytes };
  return sim_fluid_start (cluster->fluid, 1.0, g->kernel_latency, INFINITY, uses, n, done,
                          user_data);
}

SimActivityId
hw_cluster_start_copy (HwCluster *cluster, guint rank, HwCopyDirection dir, double bytes,
                       SimActivityDoneFunc done, gpointer user_data)
{
  g_return_val_if_fail (rank < cluster->gpus->len && bytes > 0, 0);
  const GpuResources *res = &g_array_index (cluster->gpus, GpuResources, rank);
  SimUse use = { dir == HW_COPY_H2D ? res->pcie_h2d : res->pcie_d2h, 1.0 };
  return sim_fluid_start (cluster->fluid, bytes, cluster->node.gpu->pcie_latency, INFINITY,
                          &use, 1, done, user_data);
}
