/* tests/unit/hardware/fixture.h — small clusters with round figures for the hardware tests,
 * so closed-form oracles stay readable: an engine, a fluid and a cluster built together. */
#pragma once

#include <math.h>

#include "hardware/catalog.h"
#include "hardware/cluster.h"
#include "hardware/collective.h"
#include "hardware/topology.h"
#include "sim/engine.h"
#include "sim/fluid.h"

#define GBPS 1e9
#define US 1e-6

typedef struct
{
  SimEngine *engine;
  SimFluid *fluid;
  HwCluster *cluster;
} Fixture;

/* A node of `n_gpus` A100-80GB-SXM (PCIe 25 GB/s per direction) with round link figures:
 * NVSwitch at 100 GB/s, not derated (link_efficiency 1), α 2 us intra / 5 us inter, one
 * 10 GB/s NIC per GPU, rail-optimised, no PCIe switches. Free with hw_node_spec_clear(). */
static inline HwNodeSpec
fixture_nvswitch_node (guint n_gpus)
{
  HwNodeSpec node = {
    .name = g_strdup ("test-nvswitch"),
    .gpu = hw_gpu_spec_copy (hw_catalog_gpu ("A100-80GB-SXM", NULL)),
    .n_gpus = n_gpus,
    .host_memory = 1e12,
    .intra = HW_INTRA_NVSWITCH,
    .nvlink_bandwidth = 100 * GBPS,
    .n_nics = n_gpus,
    .nic_bandwidth = 10 * GBPS,
    .rail_optimized = TRUE,
    .intra_latency = 2 * US,
    .inter_latency = 5 * US,
    .link_efficiency = 1.0,
  };
  return node;
}

/* Builds a cluster of `n_nodes` copies of `node` (copied) behind a leaf–spine fabric with
 * `oversubscription`. */
static inline Fixture
fixture_new (const HwNodeSpec *node, guint n_nodes, double oversubscription)
{
  Fixture f;
  f.engine = sim_engine_new ();
  f.fluid = sim_fluid_new (f.engine);
  HwFabricSpec fabric = { .spine_oversubscription = oversubscription };
  f.cluster = hw_cluster_new_with_fabric (node, n_nodes, &fabric, f.fluid);
  return f;
}

/* As fixture_new, with pods of `nodes_per_pod` nodes (dividing n_nodes) whose core links
 * taper by `pod_oversubscription` (hardware/topology.h). */
static inline Fixture
fixture_new_pods (const HwNodeSpec *node, guint n_nodes, double oversubscription,
                  guint nodes_per_pod, double pod_oversubscription)
{
  Fixture f;
  f.engine = sim_engine_new ();
  f.fluid = sim_fluid_new (f.engine);
  HwFabricSpec fabric = { .spine_oversubscription = oversubscription,
                          .nodes_per_pod = nodes_per_pod,
                          .pod_oversubscription = pod_oversubscription };
  f.cluster = hw_cluster_new_with_fabric (node, n_nodes, &fabric, f.fluid);
  return f;
}

static inline void
fixture_free (Fixture *f)
{
  hw_cluster_free (f->cluster);
  sim_fluid_free (f->fluid);
  sim_engine_free (f->engine);
}

typedef struct
{
  SimEngine *engine;
  double end; /* s, -1 until done */
} DoneAt;

static inline void
fixture_done_at (gpointer user_data)
{
  DoneAt *d = user_data;
  d->end = sim_engine_now (d->engine);
}

/* Runs one collective alone from t = 0 and returns its simulated duration (s); -1 if it
 * never completed. */
static inline double
fixture_run_collective (Fixture *f, HwCollectiveKind kind, HwCollectiveAlgorithm algorithm,
                        const guint *ranks, guint n, double bytes)
{
  DoneAt d = { f->engine, -1 };
  double t0 = sim_engine_now (f->engine);
  hw_collective_start (f->cluster, kind, algorithm, ranks, n, bytes, fixture_done_at, &d);
  sim_engine_run (f->engine);
  return d.end < 0 ? -1 : d.end - t0;
}

/* Records the engine time an activity completed (a SimActivityDoneFunc). */
typedef struct
{
  SimEngine *engine;
  double end;
} EndAt;

static inline void
end_at (SimFluid *fluid, SimActivityId id, gpointer user_data)
{
  (void) fluid, (void) id;
  EndAt *e = user_data;
  e->end = sim_engine_now (e->engine);
}

/* ranks[i] = first + i, i < n (caller frees). */
static inline guint *
fixture_ranks (guint first, guint n)
{
  guint *r = g_new (guint, n);
  for (guint i = 0; i < n; i++)
    r[i] = first + i;
  return r;
}
