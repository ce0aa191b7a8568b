#!/usr/bin/env python3
"""tools/measure_steps.py — ground truth for stepsim's single-GPU time and memory model.

On a machine with a CUDA GPU and PyTorch, trains Llama-shaped models (RMSNorm, rotary, GQA
attention through scaled_dot_product_attention or eager matmul+softmax, SwiGLU MLP, untied
LM head, AdamW) for a few steps in several sizes and stacks, and profiles the GEMM and
attention shapes those models run. Writes one TSV that `stepsim validate --measured FILE`
reads (format: cli/study/validate_measured.h):

  kind=step       median step time of the timed steps (CUDA events around
                  forward + backward + optimizer.step + zero_grad), and the peaks of
                  torch.cuda.max_memory_allocated / max_memory_reserved over the timed steps
                  (after warm-up, so the optimizer states exist), with the stepsim overrides
                  (`sets`) that describe the same run on top of
                  tests/validation/measured/base-llama-1gpu.ini;
  kind=gemm       device time of one matmul C[m×n] = A[m×k]·B[k×n] (torch.profiler, CUDA
                  kernels of the call summed, averaged over the calls);
  kind=attention  device time of one FlashAttention (SDPA, flash backend) forward or
                  backward pass of (batch, heads, seq, head_dim), causal.

Usage (commit the output under tests/validation/measured/ with a note of the machine):
  python3 tools/measure_steps.py -o tests/validation/measured/h100-sxm.tsv [--quick]
The product and its tests never need this script or a GPU.
"""
import argparse
import os
import statistics
import subprocess
import sys

# torch.cuda.get_device_name() → stepsim catalog name (hardware/catalog.c).
GPU_NAMES = [
    ("A100-SXM4-80GB", "A100-80GB-SXM"), ("A100-SXM4-40GB", "A100-40GB-SXM"),
    ("A100 80GB PCIe", "A100-80GB-PCIE"), ("H100 80GB HBM3", "H100-SXM"),
    ("H100 SXM", "H100-SXM"), ("H100 PCIe", "H100-PCIE"), ("H200", "H200-SXM"),
    ("B200", "B200-SXM"), ("RTX 4090", "RTX-4090"), ("RTX 3090", "RTX-3090"),
    ("V100-SXM2-16GB", "V100-16GB-SXM2"), ("V100-SXM2-32GB", "V100-32GB-SXM2"),
]

# (name, hidden, layers, heads, kv heads, intermediate, vocab): tiny to 1B (Llama-3.2-1B).
MODELS = [
    ("tiny", 256, 4, 4, 4, 704, 32000),
    ("small", 768, 12, 12, 12, 2048, 32000),
    ("350m", 1024, 24, 16, 16, 2816, 32000),
    ("1b", 2048, 16, 32, 8, 8192, 128256),
]
# (stepsim precision, parameter dtype, autocast dtype or None)
STACKS = [("fp32", "float32", None), ("bf16_amp", "float32", "bfloat16"), ("bf16", "bfloat16", None)]
COLUMNS = ["kind", "id", "gpu", "scenario", "sets", "dtype", "m", "n", "k", "batch", "seq",
           "head_dim", "heads", "causal", "pass", "time_s", "max_memory_allocated_B",
           "max_memory_reserved_B", "torch", "cuda", "driver"]
BASE_SCENARIO = "base-llama-1gpu.ini"


def catalog_name(device_name):
    for key, name in GPU_NAMES:
        if key in device_name:
            return name
    return None


def driver_version():
    try:
        out = subprocess.run(["nvidia-smi", "--query-gpu=driver_version", "--format=csv,noheader"],
                             capture_output=True, text=True, check=True).stdout
        return out.strip().splitlines()[0]
    except (OSError, subprocess.CalledProcessError, IndexError):
        return "unknown"


def build_model(torch, cfg, eager):
    nn, F = torch.nn, torch.nn.functional
    _, h, n_layers, n_heads, n_kv, inter, vocab = cfg
    d = h // n_heads

    class RMSNorm(nn.Module):
        def __init__(self):
            super().__init__()
            self.weight = nn.Parameter(torch.ones(h))

        def forward(self, x):
            v = x.float().pow(2).mean(-1, keepdim=True)
            return (x.float() * torch.rsqrt(v + 1e-5)).type_as(x) * self.weight

    def rotary(x, cos, sin):
        x1, x2 = x[..., : d // 2], x[..., d // 2:]
        return torch.cat((x1 * cos - x2 * sin, x2 * cos + x1 * sin), dim=-1)

    class Block(nn.Module):
        def __init__(self):
            super().__init__()
            self.n1, self.n2 = RMSNorm(), RMSNorm()
            self.q = nn.Linear(h, n_heads * d, bias=False)
            self.k = nn.Linear(h, n_kv * d, bias=False)
            self.v = nn.Linear(h, n_kv * d, bias=False)
            self.o = nn.Linear(n_heads * d, h, bias=False)
            self.gate = nn.Linear(h, inter, bias=False)
            self.up = nn.Linear(h, inter, bias=False)
            self.down = nn.Linear(inter, h, bias=False)

        def forward(self, x, cos, sin):
            b, s, _ = x.shape
            y = self.n1(x)
            q = self.q(y).view(b, s, n_heads, d).transpose(1, 2)
            k = self.k(y).view(b, s, n_kv, d).transpose(1, 2)
            v = self.v(y).view(b, s, n_kv, d).transpose(1, 2)
            q, k = rotary(q, cos, sin), rotary(k, cos, sin)
            if n_kv != n_heads:
                k = k.repeat_interleave(n_heads // n_kv, dim=1)
                v = v.repeat_interleave(n_heads // n_kv, dim=1)
            if eager:
                scores = (q @ k.transpose(-1, -2)) / d ** 0.5
                mask = torch.full((s, s), float("-inf"), device=x.device).triu(1)
                a = torch.softmax(scores + mask, dim=-1) @ v
            else:
                a = F.scaled_dot_product_attention(q, k, v, is_causal=True)
            x = x + self.o(a.transpose(1, 2).reshape(b, s, h))
            y = self.n2(x)
            return x + self.down(F.silu(self.gate(y)) * self.up(y))

    class Model(nn.Module):
        def __init__(self):
            super().__init__()
            self.emb = nn.Embedding(vocab, h)
            self.blocks = nn.ModuleList(Block() for _ in range(n_layers))
            self.norm = RMSNorm()
            self.head = nn.Linear(h, vocab, bias=False)

        def forward(self, ids):
            s = ids.shape[1]
            t = torch.arange(s, device=ids.device, dtype=torch.float32)
            inv = 1.0 / (10000 ** (torch.arange(0, d, 2, device=ids.device).float() / d))
            ang = torch.outer(t, inv)
            x = self.emb(ids)
            cos, sin = ang.cos().to(x.dtype), ang.sin().to(x.dtype)
            for blk in self.blocks:
                x = blk(x, cos, sin)
            return self.head(self.norm(x))

    return Model()


def measure_step(torch, cfg, stack, mbs, seq, eager, warmup, steps, loss="upcast"):
    precision, pdtype, amp = stack
    dev = torch.device("cuda")
    model = build_model(torch, cfg, eager).to(dev, dtype=getattr(torch, pdtype))
    opt = torch.optim.AdamW(model.parameters(), lr=1e-4)
    ids = torch.randint(0, cfg[6], (mbs, seq), device=dev)
    labels = torch.randint(0, cfg[6], (mbs, seq), device=dev)

    def step():
        ctx = torch.autocast("cuda", dtype=getattr(torch, amp)) if amp else torch.autocast("cuda", enabled=False)
        with ctx:
            logits = model(ids)
        v = logits.shape[-1]
        if loss == "upcast_shift":
            # transformers 4.46-4.48 ForCausalLMLoss: .float(), then the shifted rows
            # copied by .contiguous() (stepsim training.loss = upcast_shift)
            shift = logits.float()[..., :-1, :].contiguous()
            out = torch.nn.functional.cross_entropy(shift.view(-1, v), labels[..., 1:].reshape(-1))
        else:
            out = torch.nn.functional.cross_entropy(logits.float().view(-1, v), labels.view(-1))
        out.backward()
        opt.step()
        opt.zero_grad(set_to_none=True)

    for _ in range(warmup):
        step()
    torch.cuda.synchronize()
    torch.cuda.reset_peak_memory_stats()
    times = []
    for _ in range(steps):
        start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        start.record()
        step()
        end.record()
        torch.cuda.synchronize()
        times.append(start.elapsed_time(end) / 1e3)
    alloc, reserved = torch.cuda.max_memory_allocated(), torch.cuda.max_memory_reserved()
    del model, opt
    torch.cuda.empty_cache()
    return statistics.median(times), alloc, reserved


def step_sets(cfg, stack, mbs, seq, eager):
    """The stepsim overrides (on BASE_SCENARIO) that describe one measured step."""
    _, h, L, nh, nkv, inter, vocab = cfg
    return ";".join([
        f"model.hidden_size={h}", f"model.num_hidden_layers={L}",
        f"model.num_attention_heads={nh}", f"model.num_key_value_heads={nkv}",
        f"model.intermediate_size={inter}", f"model.vocab_size={vocab}",
        f"model.max_position_embeddings={max(seq, 4096)}", f"training.micro_batch={mbs}",
        f"training.seq_len={seq}", f"training.precision={stack[0]}",
        f"training.attention={'eager' if eager else 'flash'}"])


def profiled_seconds(torch, fn, iters):
    """Device time of one call of fn: its CUDA kernels' time summed, averaged over iters."""
    from torch.profiler import ProfilerActivity, profile
    for _ in range(3):
        fn()
    torch.cuda.synchronize()
    with profile(activities=[ProfilerActivity.CUDA]) as prof:
        for _ in range(iters):
            fn()
        torch.cuda.synchronize()
    total_us = 0.0
    for ev in prof.key_averages():
        total_us += getattr(ev, "self_device_time_total", None) or getattr(ev, "self_cuda_time_total", 0)
    return total_us / 1e6 / iters


def gemm_shapes(quick):
    shapes = []
    for _, h, _, nh, nkv, inter, vocab in (MODELS[:2] if quick else MODELS):
        for tokens in (512, 4096, 16384):
            d = h // nh
            shapes += [(tokens, nh * d + 2 * nkv * d, h), (tokens, h, nh * d), (tokens, inter, h),
                       (tokens, h, inter)]
        shapes.append((4096, vocab, h))
    shapes += [(16, 4096, 4096), (4096, 16, 4096), (8192, 10922, 4096), (8192, 10944, 4096)]
    return sorted(set(shapes))


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("-o", "--output", help="TSV to write")
    ap.add_argument("--print-header", action="store_true",
                    help="print the TSV header line and exit (no PyTorch needed)")
    ap.add_argument("--gpu", help="stepsim catalog GPU name (default: from the device name)")
    ap.add_argument("--quick", action="store_true", help="fewer models, shapes and steps")
    ap.add_argument("--steps", type=int, default=10, help="timed steps per run (default 10)")
    args = ap.parse_args()
    if args.print_header:
        print("\t".join(COLUMNS))
        return
    if not args.output:
        ap.error("-o/--output is required")
    import torch  # imported here so --help works without PyTorch
    if not torch.cuda.is_available():
        sys.exit("measure_steps.py: no CUDA GPU visible")
    name = torch.cuda.get_device_name()
    gpu = args.gpu or catalog_name(name)
    if gpu is None:
        sys.exit(f"measure_steps.py: no stepsim catalog name for '{name}': pass --gpu")
    versions = {"torch": torch.__version__, "cuda": torch.version.cuda or "-", "driver": driver_version()}
    scen = os.path.relpath(os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "tests",
                                        "validation", "measured", BASE_SCENARIO),
                           os.path.dirname(os.path.abspath(args.output)))
    rows = []
    models = MODELS[:2] if args.quick else MODELS
    steps = 3 if args.quick else args.steps
    for cfg in models:
        for stack in STACKS:
            for mbs, seq in ((1, 512), (4, 1024), (2, 2048)):
                for eager in (False, True):
                    if eager and seq > 1024:
                        continue
                    try:
                        t, alloc, res = measure_step(torch, cfg, stack, mbs, seq, eager, 3, steps)
                    except torch.cuda.OutOfMemoryError:
                        torch.cuda.empty_cache()
                        continue
                    sets = step_sets(cfg, stack, mbs, seq, eager)
                    rows.append(dict(kind="step", id=f"{cfg[0]}-{stack[0]}-b{mbs}s{seq}{'-eager' if eager else ''}",
                                     scenario=scen, sets=sets, time_s=f"{t:.6e}",
                                     max_memory_allocated_B=str(alloc), max_memory_reserved_B=str(res)))
                    print(rows[-1]["id"], t, alloc, res, flush=True)
    # The HF shifted loss at 128K vocabulary (1b): memory per token of the loss head, and
    # the caching allocator's growth where slice_backward's full-length fp32 gradient does
    # not fit the shifted tensors' freed 2 MiB-rounded segments (2551: it does not; 2048,
    # 4096: multiples of 2 MiB, it does; stepsim tests/validation/m16-*.ini).
    for seq in (2048, 2551, 4096):
        for loss in ("upcast", "upcast_shift"):
            cfg, stack = MODELS[3], STACKS[1]
            try:
                t, alloc, res = measure_step(torch, cfg, stack, 1, seq, False, 2, 3, loss)
            except torch.cuda.OutOfMemoryError:
                torch.cuda.empty_cache()
                continue
            sets = step_sets(cfg, stack, 1, seq, False) + f";training.loss={loss}"
            rows.append(dict(kind="step", id=f"{cfg[0]}-{stack[0]}-b1s{seq}-{loss}", scenario=scen,
                             sets=sets, time_s=f"{t:.6e}", max_memory_allocated_B=str(alloc),
                             max_memory_reserved_B=str(res)))
            print(rows[-1]["id"], t, alloc, res, flush=True)
    dev = torch.device("cuda")
    for dt_name, dt in (("bf16", torch.bfloat16), ("fp32", torch.float32)):
        for m, n, k in gemm_shapes(args.quick):
            a = torch.randn(m, k, device=dev, dtype=dt)
            b = torch.randn(k, n, device=dev, dtype=dt)
            t = profiled_seconds(torch, lambda: a @ b, 10)
            rows.append(dict(kind="gemm", id=f"g{m}x{n}x{k}-{dt_name}", dtype=dt_name, m=str(m),
                             n=str(n), k=str(k), batch="1", time_s=f"{t:.6e}"))
    for d in (64, 128):
        for seq in (512, 2048, 8192):
            batch, heads = max(1, 16384 // seq), 2048 // d
            q, k, v = (torch.randn(batch, heads, seq, d, device=dev, dtype=torch.bfloat16,
                                   requires_grad=True) for _ in range(3))
            with torch.nn.attention.sdpa_kernel(torch.nn.attention.SDPBackend.FLASH_ATTENTION):
                fwd = profiled_seconds(torch, lambda: torch.nn.functional.scaled_dot_product_attention(
                    q, k, v, is_causal=True), 10)
                out = torch.nn.functional.scaled_dot_product_attention(q, k, v, is_causal=True)
                grad = torch.randn_like(out)
                both = profiled_seconds(torch, lambda: torch.autograd.grad(
                    torch.nn.functional.scaled_dot_product_attention(q, k, v, is_causal=True),
                    (q, k, v), grad), 10)
            for p, t in (("fwd", fwd), ("bwd", max(both - fwd, 0.0))):
                rows.append(dict(kind="attention", id=f"a-d{d}-s{seq}-{p}", dtype="bf16",
                                 batch=str(batch), seq=str(seq), head_dim=str(d), heads=str(heads),
                                 causal="1", **{"pass": p}, time_s=f"{t:.6e}"))
    with open(args.output, "w") as f:
        f.write(f"# measured by tools/measure_steps.py on '{name}' ({gpu}): torch {versions['torch']}, "
                f"CUDA {versions['cuda']}, driver {versions['driver']}\n")
        f.write("\t".join(COLUMNS) + "\n")
        for r in rows:
            r.update(gpu=gpu, **versions)
            f.write("\t".join(r.get(c, "-") for c in COLUMNS) + "\n")
    print(f"wrote {len(rows)} rows to {args.output}")


if __name__ == "__main__":
    main()
