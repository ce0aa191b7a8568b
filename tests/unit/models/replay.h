/* tests/unit/models/replay.h — the objects of one replay (engine, fluid, cluster,
 * ledgers, recorder, executor) and their release, shared by the offload and paged tests.
 * Header-only (static inline). */
#pragma once

#include "hardware/cluster.h"
#include "models/plan/executor.h"
#include "models/memory/host_ledger.h"
#include "models/memory/ledger.h"
#include "sim/engine.h"
#include "sim/fluid.h"
#include "sim/recorder.h"

typedef struct
{
  SimEngine *engine;
  SimFluid *fluid;
  HwCluster *cluster;
  ModelLedger *ledger;
  ModelHostLedger *host;
  SimRecorder *rec;
  ModelExecutor *exec;
} Run;

static inline void
run_clear (Run *r)
{
  model_executor_free (r->exec);
  model_host_ledger_free (r->host);
  model_ledger_free (r->ledger);
  sim_recorder_free (r->rec);
  hw_cluster_free (r->cluster);
  sim_fluid_free (r->fluid);
  sim_engine_free (r->engine);
}
