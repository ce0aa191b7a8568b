/* tests/unit/models/refusal.h — the plan's refusals: building a plan for (a, s, par) fails,
 * and its error names `n1` (and `n2`, when not NULL), typically the group and key. */
#pragma once

#include <string.h>
#include "models/plan/plan.h"
#include "tests/testlib.h"

static inline void
expect_refusal (const ModelArch *a, const ModelStack *s, const ModelParallel *par,
                const char *n1, const char *n2)
{
  g_autoptr (GError) e = NULL;
  g_autoptr (ModelPlan) p = model_plan_new (a, s, par, &e);
  CU_ASSERT_PTR_NULL (p);
  CU_ASSERT_PTR_NOT_NULL_FATAL (e);
  gboolean ok = strstr (e->message, n1) != NULL && (n2 == NULL || strstr (e->message, n2));
  if (!ok)
    g_printerr ("\n  message \"%s\" lacks \"%s\" / \"%s\"\n", e->message, n1, n2 ? n2 : "");
  CU_ASSERT (ok);
}
