#!/usr/bin/env python3
"""tools/bench_gap_kernels.py — the three microbenchmarks of doc/kernel-gaps.md.

Measures the kernel figures that the remaining step-time gaps (T12, T14, T15, T16) need and
that no stored publication gives. Needs a CUDA GPU and PyTorch; the product and its tests
never run it. Writes one TSV (columns below); each row's figure enters hardware/kernel.c or
hardware/collective.c by hand, with this file's name, the GPU, driver, CUDA, PyTorch and
Triton versions as its source (doc/kernel-gaps.md §3 says where).

  attention  one GPU. flash_attn_triton.flash_attn_func (llm-foundry's copy of
             flash_attn_triton.py, run under triton-pre-mlir, branch triton_pre_mlir_sm90;
             pass --triton-module to import another copy), bf16, causal; forward and
             backward timed apart. Shapes: the FA-2 paper's benchmark (batch × seq = 16k
             tokens, hidden 2048, head_dim 64 and 128, seq 512 … 16k) and the MPT training
             shapes of T14/T15/T16, each with and without ALiBi's (1, heads, 1, seq) bias.
             TFLOP/s counted as the FA-2 paper does: 4·b·s²·d·heads, ÷ 2 causal, × 2.5 bwd.
  gemm       one GPU. bf16 torch.matmul of the MPT layer GEMMs (QKV, out, up, down; forward,
             dgrad and wgrad layouts) at several tokens-per-micro-batch, each shape run back to
             back for --seconds so the board reaches its power-limited clock; the SM clock
             and power are sampled through nvidia-smi while it runs.
  overlap    torchrun --nproc-per-node N. Each forward GEMM of a layer timed alone and beside a
             concurrent all_gather_into_tensor (bf16 layer parameters) or reduce_scatter_tensor
             (fp32 gradients) on a second stream, as FSDP FULL_SHARD issues them; rank 0
             writes the GEMM's and the collective's times both ways.

TSV columns: kind, name, b, heads, seq, head_dim, m, n, k, pass, variant, ms, tflops,
sm_clock_mhz, power_w.
"""
import argparse
import importlib
import os
import statistics
import subprocess
import sys

COLUMNS = ["kind", "name", "b", "heads", "seq", "head_dim", "m", "n", "k", "pass", "variant",
           "ms", "tflops", "sm_clock_mhz", "power_w"]
# MPT yamls (llm-foundry scripts/train/yamls/pretrain): name → (hidden, heads).
MPT = {"760m": (1536, 12), "1b": (2048, 16), "3b": (2560, 20), "7b": (4096, 32),
       "13b": (5120, 40), "30b": (7168, 56)}
TRAINING_ATTN = [("T14", 20, 16, 2048, 128), ("T15", 24, 12, 2048, 128), ("T16", 2, 40, 2048, 128)]


def row(out, **kv):
    out.write("\t".join(str(kv.get(c, "")) for c in COLUMNS) + "\n")
    out.flush()


def time_ms(torch, fn, warmup=10, reps=30):
    for _ in range(warmup):
        fn()
    start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    times = []
    for _ in range(reps):
        start.record()
        fn()
        end.record()
        end.synchronize()
        times.append(start.elapsed_time(end))
    return statistics.median(times)


def smi_sample():
    """SM clock (MHz) and board power (W) of GPU 0 now, or ('', '') without nvidia-smi."""
    try:
        q = subprocess.run(["nvidia-smi", "-i", "0", "--query-gpu=clocks.sm,power.draw",
                            "--format=csv,noheader,nounits"], capture_output=True, text=True,
                           timeout=10).stdout.strip().split(",")
        return float(q[0]), float(q[1])
    except (OSError, ValueError, IndexError, subprocess.SubprocessError):
        return "", ""


def bench_attention(torch, args, out):
    fa = importlib.import_module(args.triton_module)
    shapes = [("fa2-bench", 16384 // s, 2048 // d, s, d) for d in (64, 128)
              for s in (512, 1024, 2048, 4096, 8192, 16384)] + TRAINING_ATTN
    for name, b, h, s, d in shapes:
        for alibi in (False, True):
            q, k, v = (torch.randn(b, s, h, d, device="cuda", dtype=torch.bfloat16,
                                   requires_grad=True) for _ in range(3))
            bias = None
            if alibi:  # MPT's ALiBi: a per-head slope times the key position, (1, h, 1, s)
                slopes = 2.0 ** (-8.0 * torch.arange(1, h + 1, device="cuda") / h)
                bias = (slopes.view(1, h, 1, 1) * torch.arange(1 - s, 1, device="cuda")
                        .view(1, 1, 1, s)).to(torch.bfloat16)
            fwd = lambda: fa.flash_attn_func(q, k, v, bias, True, d ** -0.5)
            o = fwd()
            g = torch.randn_like(o)
            bwd = lambda: torch.autograd.grad(o, (q, k, v), g, retain_graph=True)
            flops = 4.0 * b * s * s * d * h / 2
            for p, fn, f in (("fwd", fwd, flops), ("bwd", bwd, 2.5 * flops)):
                ms = time_ms(torch, fn)
                row(out, kind="attention", name=name, b=b, heads=h, seq=s, head_dim=d, **{"pass": p},
                    variant="alibi" if alibi else "none", ms=f"{ms:.4f}",
                    tflops=f"{f / ms / 1e9:.1f}")
            del q, k, v, o, g


def layer_gemms(hidden):
    """(name, n, k) of an MPT layer's forward GEMMs C[m×n] = A[m×k]·B[k×n]."""
    return [("qkv", 3 * hidden, hidden), ("out", hidden, hidden), ("up", 4 * hidden, hidden),
            ("down", hidden, 4 * hidden)]


def bench_gemm(torch, args, out):
    import time
    for model in args.models:
        hidden = MPT[model][0]
        for m in args.tokens:
            for name, n, k in layer_gemms(hidden):
                # nn.Linear layouts: forward x[m×k]·Wᵀ (W[n×k]); dgrad dy[m×n]·W; wgrad dyᵀ·x
                x = torch.randn(m, k, device="cuda", dtype=torch.bfloat16)
                w = torch.randn(n, k, device="cuda", dtype=torch.bfloat16)
                dy = torch.randn(m, n, device="cuda", dtype=torch.bfloat16)
                for p, a, b, (r, inner, c) in (("fwd", x, w.t(), (m, k, n)),
                                               ("dgrad", dy, w, (m, n, k)),
                                               ("wgrad", dy.t(), x, (n, m, k))):
                    fn = lambda: torch.matmul(a, b)
                    t0, clocks, powers = time.time(), [], []
                    while time.time() - t0 < args.seconds:  # reach the sustained clock
                        for _ in range(20):
                            fn()
                        torch.cuda.synchronize()
                        c_mhz, p_w = smi_sample()
                        if c_mhz != "":
                            clocks.append(c_mhz)
                            powers.append(p_w)
                    ms = time_ms(torch, fn, warmup=0, reps=50)
                    row(out, kind="gemm", name=f"{model}-{name}", m=r, n=c, k=inner, **{"pass": p},
                        ms=f"{ms:.4f}", tflops=f"{2.0 * r * c * inner / ms / 1e9:.1f}",
                        sm_clock_mhz=f"{statistics.median(clocks):.0f}" if clocks else "",
                        power_w=f"{statistics.median(powers):.0f}" if powers else "")
                del x, w, dy


def bench_overlap(torch, args, out):
    import torch.distributed as dist
    dist.init_process_group("nccl")
    rank, world = dist.get_rank(), dist.get_world_size()
    torch.cuda.set_device(rank % torch.cuda.device_count())
    side = torch.cuda.Stream()
    for model in args.models:
        hidden = MPT[model][0]
        layer_params = 12 * hidden * hidden  # MPT block, no biases (norm weights ignored)
        shard = layer_params // world
        gathered = torch.empty(shard * world, device="cuda", dtype=torch.bfloat16)
        gshard = torch.randn(shard, device="cuda", dtype=torch.bfloat16)
        grads = torch.randn(shard * world, device="cuda", dtype=torch.float32)
        rs_out = torch.empty(shard, device="cuda", dtype=torch.float32)
        colls = {"all_gather_bf16": lambda: dist.all_gather_into_tensor(gathered, gshard),
                 "reduce_scatter_fp32": lambda: dist.reduce_scatter_tensor(rs_out, grads)}
        for m in args.tokens:
            for name, n, k in layer_gemms(hidden):
                a = torch.randn(m, k, device="cuda", dtype=torch.bfloat16)
                b = torch.randn(k, n, device="cuda", dtype=torch.bfloat16)
                gemm = lambda: torch.matmul(a, b)
                alone = time_ms(torch, gemm)
                for cname, coll in colls.items():
                    coll_alone = time_ms(torch, coll)

                    def both():
                        side.wait_stream(torch.cuda.current_stream())
                        with torch.cuda.stream(side):
                            coll()
                        gemm()  # timed on the current stream while the collective runs
                    beside = time_ms(torch, both)
                    torch.cuda.current_stream().wait_stream(side)
                    if rank == 0:
                        for variant, ms in (("alone", alone), (cname, beside),
                                            (cname + "-alone", coll_alone)):
                            row(out, kind="overlap", name=f"{model}-{name}", m=m, n=n, k=k,
                                **{"pass": "fwd"}, variant=variant, ms=f"{ms:.4f}",
                                tflops=f"{2.0 * m * n * k / ms / 1e9:.1f}"
                                if not variant.endswith("-alone") else "")
                del a, b
    dist.destroy_process_group()


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("kind", choices=["attention", "gemm", "overlap"])
    ap.add_argument("-o", "--output", required=True, help="TSV to write")
    ap.add_argument("--triton-module", default="llmfoundry.models.layers.flash_attn_triton")
    ap.add_argument("--models", nargs="+", default=["7b", "13b", "30b"], choices=sorted(MPT))
    ap.add_argument("--tokens", nargs="+", type=int, default=[4096, 6144, 12288, 28672, 40960,
                                                              65536])
    ap.add_argument("--seconds", type=float, default=20.0, help="gemm: run time per shape")
    args = ap.parse_args()
    import torch
    if not torch.cuda.is_available():
        sys.exit("bench_gap_kernels.py: needs a CUDA GPU")
    # overlap: every rank runs the collectives, rank 0 writes
    path = args.output if os.environ.get("RANK", "0") == "0" else os.devnull
    with open(path, "w") as out:
        out.write("# " + torch.cuda.get_device_name() + ", torch " + torch.__version__
                  + ", CUDA " + str(torch.version.cuda) + "\n" + "\t".join(COLUMNS) + "\n")
        {"attention": bench_attention, "gemm": bench_gemm, "overlap": bench_overlap}[args.kind](
            torch, args, out)


if __name__ == "__main__":
    main()
