/* hardware/collective_time.c — the closed-form time of a lowered collective plan alone on an
 * idle cluster (hw_collective_plan_time, collective-private.h): hw_collective_time_alone and
 * a run's GPU holds (hardware/collective.c) and the AUTO tuner's choice of algorithm and
 * protocol (hardware/collective_lower.c) read it. A leaf: it calls neither of them
 * (tests/layering.sh).
 *
 * Closed form. On an idle cluster a phase whose flows on each resource j all have the same
 * latency L_j lasts
 *     T_phase = max( max_j ( L_j + Σ_{flows f on j} bytes_f / c_j ), max_f (L_f + bytes_f / r_f) ),
 * r_f a flow's own rate bound (NCCL's protocol cap, collective_lower.c), 
 * because (i) resource j cannot move its Σ bytes faster than c_j once its flows start, and
 * (ii) under max-min sharing the flows of the most loaded resource share it equally, and
 * every lowering here gives all flows of a phase the same size and symmetric routes, so no
 * flow is held back by anything but the phase's bottleneck (Bertsekas & Gallager, Data
 * Networks §6.5.2: a max-min fair flow is bottlenecked at a saturated link where its rate is
 * the largest; a flow bound below its share leaves the rest to the others, which only
 * finish sooner). The collective's time is the sum over phases. Worked case: a ring
 * all-reduce on p GPUs of an NVSwitch node puts one flow of 2(p−1)/p·S/e (e the protocol's
 * wire efficiency) on each GPU's nvlink.tx and nvlink.rx, so T = L + 2(p−1)/p·S/min(e·B,
 * cap), L the collective's latency and cap its payload rate bound (collective_lower.c). Where flows of
 * different latency or size meet on one resource (all-to-all across PCIe nodes) the formula
 * is the congestion bound, a slight under-estimate.
 * Units: B, s, B/s.
 */
#include "config.h"
#include "hardware/collective-private.h"
#include "hardware/cluster-private.h"
#include "hardware/topology.h"

#include <math.h>

/* max_j (L_j + load_j / c_j) over the resources the phase's flows cross (file comment). */
static double
phase_time_alone (const HwCluster *cluster, GArray *flows, double *load, double *lat)
{
  const HwTopology *topo = hw_cluster_topology (cluster);
  SimFluid *fluid = hw_cluster_fluid (cluster);
  GArray *touched = g_array_new (FALSE, FALSE, sizeof (SimResourceId));
  double t_own = 0;
  for (guint i = 0; i < flows->len; i++)
    {
      const HwFlow *f = &g_array_index (flows, HwFlow, i);
      t_own = MAX (t_own, f->latency + f->bytes / f->rate); /* its own rate bound */
      SimResourceId route[HW_ROUTE_MAX];
      guint n = hw_topology_route (topo, f->src, f->dst, route, NULL);
      for (guint k = 0; k < n; k++)
        {
          if (load[route[k]] == 0 && lat[route[k]] == 0) /* first touch: reset after */
            g_array_append_val (touched, route[k]);
          load[route[k]] += f->bytes;
          lat[route[k]] = MAX (lat[route[k]], f->latency);
        }
    }
  double t = t_own;
  for (guint i = 0; i < touched->len; i++)
    {
      SimResourceId j = g_array_index (touched, SimResourceId, i);
      t = MAX (t, lat[j] + load[j] / sim_fluid_resource_capacity (fluid, j));
      load[j] = lat[j] = 0;
    }
  g_array_unref (touched);
  return t;
}

double
hw_collective_plan_time (const HwCluster *cluster, GPtrArray *plan)
{
  guint n_res = sim_fluid_n_resources (hw_cluster_fluid (cluster));
  double *load = hw_cluster_resource_scratch (cluster, 2 * n_res); /* zero; left zero */
  double *lat = load + n_res;
  double t = 0;
  for (guint p = 0; p < plan->len; p++)
    t += phase_time_alone (cluster, g_ptr_array_index (plan, p), load, lat);
  return t;
}
