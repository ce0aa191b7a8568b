#!/usr/bin/env python3
# tests/mutation.py — the mutation check of README "Testing": applies each one-line bug
# below, one at a time, to the configured and built tree ROOT (use a clone: files are
# restored after each run, but an interrupted run may leave one mutated), runs
# `make -j2 && make check` there, and prints which tests failed (the mutation's killers).
# Usage: python3 tests/mutation.py ROOT [M1 M2 …]. About as long as 10 `make check` runs;
# not part of `make check`. Needs python3 (a developer tool, not a build dependency).
import subprocess, sys, os, re, json, time
root = sys.argv[1]
M = [
 ("M1", "bucket off-by-one: a DDP/ZeRO-1 bucket issued one bucket too large", "models/plan/plan_step.c",
  "double bytes = full * size + (flush ? c->bucket_fill : 0);", "double bytes = (full + 1) * size + (flush ? c->bucket_fill : 0);"),
 ("M2", "K/V activations sized like Q (GQA ignored)", "models/ops/cost.c",
  "d.c = (double) (arch->n_kv_heads * arch->head_dim);", "d.c = (double) (arch->n_heads * arch->head_dim);"),
 ("M3", "reduce_dtype ignored in collective sizes", "models/plan/plan_comm.c",
  "if (p->par.reduce_dtype_set)", "if (0 && p->par.reduce_dtype_set)"),
 ("M4", "HDF5 unit attribute renamed (/tasks unit_end -> unit_stop)", "sim/h5out.c",
  'sim_h5_write_str_attr (d, "unit_end", "s", error)', 'sim_h5_write_str_attr (d, "unit_stop", "s", error)'),
 ("M5", "ZeRO/FSDP communication costs nothing (reduce-scatter/all-gather move 0 bytes)", "hardware/collective_lower.c",
  "add_ring (phase, c, ring, n, frac * bytes, n - 1, FALSE);", "add_ring (phase, c, ring, n, 0 * frac * bytes, n - 1, FALSE);"),
 ("M6", "allocator rounds to 256 B instead of 512 B", "models/memory/allocator.c",
  "return bytes < MIN_BLOCK ? MIN_BLOCK : round_up (bytes, MIN_BLOCK);", "return bytes < MIN_BLOCK ? MIN_BLOCK : round_up (bytes, MIN_BLOCK / 2);"),
 ("M7", "ring all-reduce moves (N-1)/N instead of 2(N-1)/N", "hardware/collective_lower.c",
  "add_ring (phase, c, ring, n, 2 * frac * bytes, 2 * (n - 1), FALSE);", "add_ring (phase, c, ring, n, frac * bytes, 2 * (n - 1), FALSE);"),
 ("M8", "per-rank device-used without the CUDA context", "cli/run.c",
  "res->rank_device_used[r] = model_ledger_peak_reserved (ledger, r) + res->cuda_context;", "res->rank_device_used[r] = model_ledger_peak_reserved (ledger, r);"),
 ("M9", "summary text field lost (peak_task always empty)", "cli/report/report.c",
  'sim_recorder_summary_text (rec, "peak_task", res->peak_task ? res->peak_task : "");', 'sim_recorder_summary_text (rec, "peak_task", "");'),
 ("M10", "temporary output file not registered for removal on SIGINT/SIGTERM", "sim/tempfiles.c",
  "  sim_tempfiles_add (tmp);\n  return tmp;", "  return tmp;"),
]
only = sys.argv[2:] 
results = []
for mid, desc, f, old, new in M:
    if only and mid not in only: continue
    p = os.path.join(root, f)
    src = open(p).read()
    if src.count(old) != 1:
        results.append((mid, desc, f, "PATTERN NOT FOUND (%d)" % src.count(old), [])); continue
    open(p, "w").write(src.replace(old, new))
    t0 = time.time()
    try:
        r = subprocess.run("make -j2 >/dev/null 2>&1 && make --no-print-directory check 2>&1", shell=True, cwd=root,
                           capture_output=True, text=True, timeout=1500)
        out = r.stdout
    except subprocess.TimeoutExpired:
        out = "TIMEOUT"
    finally:
        open(p, "w").write(src)
    fails = [l for l in out.splitlines() if l.startswith("FAIL: ") or l.startswith("    FAIL ") or "...FAILED" in l]
    last = [l for l in out.splitlines() if re.match(r"^\d+ passed, \d+ failed$", l)]
    results.append((mid, desc, f, last[-1] if last else "no summary (build failed?)", fails))
    with open(os.path.join(root, "mutation-results.json"), "w") as fh:
        json.dump(results, fh, indent=1)
    print(mid, desc, "->", results[-1][3], "%.0fs" % (time.time() - t0), flush=True)
    for l in fails[:12]: print("   ", l, flush=True)
subprocess.run("make -j2 >/dev/null 2>&1", shell=True, cwd=root)
