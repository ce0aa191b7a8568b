/* hardware/cluster-private.h — what hardware/collective*.c needs of HwCluster beyond the
 * public API. Not installed, not for models/ or cli/. */
#pragma once

#include "hardware/cluster.h"

/* A fresh collective id (> 0), counted per cluster so ids do not depend on other clusters. */
guint64 hw_cluster_take_collective_id (HwCluster *cluster);
