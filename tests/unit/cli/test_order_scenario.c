/* tests/unit/cli/test_order_scenario.c — [parallel] order (models/parallel/mesh.h): where
 * the rank order puts a pipeline's stages and its data-parallel replicas, and what that does
 * to the step on pods (hardware/topology.h); bad values of the key.
 *
 * The scenario: S10's Llama-3.2-1B on 4 DGX A100 nodes (32 GPUs, 8 × 200 Gbit/s NICs a
 * node), pp 2, tp 2 (dp 8), 4 micro-batches of 4 × 2048 tokens under 1F1B, NCCL rings; and
 * the same in 2 pods of 2 nodes whose core links are tapered by pod_oversubscription k
 * (each way 2 nodes × 8 NICs × 25 GB/s / k).
 *   - Default "tp-cp-ep-dp-pp": stage s is nodes 2s, 2s + 1, i.e. pod s. Every activation
 *     and gradient between the stages crosses the core, 16 P2P flows at once (one per rank
 *     of a stage): each gets 400/k GB/s / 16 = 25/k GB/s, 1/k of its NIC (k = 4: a
 *     quarter). The data-parallel rings stay inside a pod. So pods slow the step, by the
 *     P2P's extra transfer time S·(k − 1)/NIC per message on the critical path: from k = 4
 *     to k = 16 the slowdown grows (16 − 1)/(4 − 1) = 5 times (to 5 %: latencies and the
 *     gradient rings' overlap move it a little).
 *   - "tp-cp-ep-pp-dp": a pipeline replica is 4 consecutive ranks, two replicas a node, so
 *     every P2P stays on NVLink; the data-parallel rings (4 groups of 8 ranks, 2 a node)
 *     cross the pod boundary once each way: 4 flows each way of at most a NIC, 100 GB/s,
 *     exactly the core's 400/k GB/s at k = 4: the core never limits them, and the step
 *     equals the one without pods (to rounding). At k = 16 (25 GB/s) it does.
 * So on pods the new order is faster, and without pods it is faster too by the P2P's NIC
 * time versus NVLink. */
#include "config.h"

#include <math.h>
#include <string.h>
#include "tests/unit/cli/simulate.h"

static const char scenario[] = "tests/validation/s10-llama-3.2-1b-ddp-8xa100.ini";

static double
step_time (const char *order, guint oversub)
{
  g_autofree char *o = g_strdup_printf ("parallel.order=%s", order);
  g_autofree char *k = g_strdup_printf ("cluster.pod_oversubscription=%u", MAX (oversub, 1));
  const char *sets[] = { "cluster.nodes=4", "parallel.pp=2", "parallel.tp=2",
                         "training.grad_accum=4", "parallel.algorithm=ring", o,
                         oversub > 0 ? "cluster.nodes_per_pod=2" : NULL, k, NULL };
  if (oversub == 0)
    sets[6] = NULL;
  CliScenario *sc = NULL;
  ModelSimResult res = { 0 };
  if (!simulate (scenario, sets, &sc, &res))
    return NAN;
  double t = res.step_time;
  model_sim_result_clear (&res);
  cli_scenario_free (sc);
  return t;
}

static void
test_pods_order (void)
{
  double d0 = step_time ("tp-cp-ep-dp-pp", 0), d4 = step_time ("tp-cp-ep-dp-pp", 4);
  double d16 = step_time ("tp-cp-ep-dp-pp", 16);
  double n0 = step_time ("tp-cp-ep-pp-dp", 0), n4 = step_time ("tp-cp-ep-pp-dp", 4);
  double n16 = step_time ("tp-cp-ep-pp-dp", 16);
  g_printerr ("\n  default: %.6f / %.6f / %.6f s; tp-cp-ep-pp-dp: %.6f / %.6f / %.6f s "
              "(no pods / 4:1 / 16:1)\n", d0, d4, d16, n0, n4, n16);
  /* default: the stages are the pods, the P2P crosses the core */
  CU_ASSERT (d4 > d0 * 1.05 && d16 > d4);
  double ratio = (d16 - d0) / (d4 - d0);
  CU_ASSERT (fabs (ratio - 5.0) < 0.05 * 5.0);
  /* tp-cp-ep-pp-dp: the P2P on NVLink, the rings fit the 4:1 core exactly */
  CU_ASSERT (fabs (n4 - n0) <= 1e-9 * n0);
  CU_ASSERT (n16 > n4);
  CU_ASSERT (n4 < d4 && n0 < d0);
}

/* Bad values: one error naming the file, [parallel] and 'order', listing the accepted
 * spellings; pp inside dp with an expert grid other than cp·tp refused naming 'order'. */
static void
expect_error (const char *rel, const char *const *sets, const char *n1, const char *n2)
{
  g_autofree char *path = stepsim_test_srcpath (rel);
  g_autoptr (GError) e = NULL;
  CliScenario *sc = cli_scenario_load (path, sets, &e);
  ModelSimResult res = { 0 };
  if (sc != NULL) /* the expert check runs at plan validation */
    {
      ModelSimInput in = cli_scenario_sim_input (sc);
      CU_ASSERT (!model_simulate (&in, NULL, &res, &e));
      model_sim_result_clear (&res);
      cli_scenario_free (sc);
    }
  CU_ASSERT_PTR_NOT_NULL_FATAL (e);
  gboolean ok = strstr (e->message, n1) != NULL && strstr (e->message, n2) != NULL;
  if (!ok)
    g_printerr ("\n  message \"%s\" lacks \"%s\" / \"%s\"\n", e->message, n1, n2);
  CU_ASSERT (ok);
}

static void
test_bad_order (void)
{
  static const char *const unknown[] = { "parallel.order=tp-dp-cp-pp", NULL };
  static const char *const spaced[] = { "parallel.order=pp-dp-tp", NULL };
  expect_error (scenario, unknown, "s10-llama-3.2-1b-ddp-8xa100.ini",
                "group [parallel], key 'order': unknown order 'tp-dp-cp-pp'");
  expect_error (scenario, spaced, "group [parallel], key 'order'",
                "tp-cp-ep-pp-dp (Megatron --use-tp-pp-dp-mapping");
  static const char *const experts[]
      = { "parallel.pp=2", "parallel.tp=2", "parallel.sequence_parallel=true", "parallel.ep=4",
          "parallel.order=tp-pp-dp", NULL };
  expect_error ("scenarios/mixtral-8x7b-lora-ep8-dgx-h100.ini", experts,
                "group [parallel], key 'order'", "needs ep × etp = cp × tp");
}

int
main (void)
{
  const StepsimTest tests[] = {
    { "rank order on pods: which traffic crosses the core", test_pods_order },
    { "bad values of [parallel] order", test_bad_order },
  };
  return STEPSIM_RUN_TESTS ("cli/order_scenario", tests);
}
