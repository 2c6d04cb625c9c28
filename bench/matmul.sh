#!/bin/sh
# matmul.sh — the CPU backend's packed GEMM (backend/cpu/cpu_matmul.c): float32 products A @ B
# and the mask head's first 3x3 convolution (its implicit GEMM), tdl against PyTorch and
# against the arithmetic bound.
#
# usage: sh bench/matmul.sh [path/to/tdl]
#
# Workloads (matmul/make_data.py, standard normal float32): products MxKxN = 1024x1024x1024,
# 2048x2048x2048 and 12544x2304x256; conv: nn.conv2d of 64 x 256 x 14 x 14 by 256 x 256 x 3 x 3
# with bias, padding 1 (a 12544 x 2304 x 256 product), contiguous and channels_last.
# For T = 1 and T = 2 threads it prints seconds per evaluation of:
#   bound   the multiply-adds at the peak of bench/common/flops.c (cc -O3 -march=native
#           -fopenmp, OMP_NUM_THREADS=T)
#   torch   /usr/bin/python3 matmul/torch_matmul.py, torch.set_num_threads(T): torch.matmul for
#           the products (Debian's torch: the BLAS libblas.so.3 points at, the header prints
#           BLAS_INFO; netlib's reference BLAS unless an optimised one is installed), F.conv2d
#           (oneDNN) for the convolutions
#   tdl     matmul/matmul.tdl, TDL_NUM_THREADS=T
# with GFLOP/s (2 x multiply-adds / time), the ratio to the bound and to torch (time / time:
# above 1 is slower), and whether tdl's result agrees with torch's (max |tdl - torch| <= 1e-4 x
# max |torch|). Timings are the best of MM_REPEATS (default 3) after warm-up (tdl 2, torch 1
# for a product, 2 for a convolution).
# Exit status: 1 when a result is WRONG or flops.c cannot be built; a run that fails is reported
# on its row. Needs cc with OpenMP and python3 with numpy; torch for the torch rows.

tdl=${1:-build/tdl}
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/.." && pwd)
py=${TORCH_PYTHON:-/usr/bin/python3}
repeats=${MM_REPEATS:-3}
threads="1 2"
case $tdl in /*) ;; *) tdl=$(pwd)/$tdl ;; esac
TDL_PATH=$root/stdlib
export TDL_PATH

tmp=$(mktemp -d "${TMPDIR:-/tmp}/tdl-matmul.XXXXXX") || exit 2
trap 'rm -rf "$tmp"' EXIT
trap 'rm -rf "$tmp"; exit 130' INT TERM

"$py" -c 'import numpy' 2>/dev/null || py=python3
if ! "$py" "$here/matmul/make_data.py" "$tmp" >"$tmp/shapes" 2>"$tmp/err"; then
    echo "matmul.sh: writing the inputs failed:" >&2
    cat "$tmp/err" >&2
    exit 2
fi
if ! ${CC:-cc} -O3 -march=native -fopenmp -o "$tmp/flops" "$here/common/flops.c" 2>"$tmp/err"; then
    echo "matmul.sh: cannot build flops.c with ${CC:-cc} -fopenmp:" >&2
    cat "$tmp/err" >&2
    exit 1
fi
names="$(awk '$1 != "conv" { printf "%s ", $1 }' "$tmp/shapes")conv_contiguous conv_channels_last"

. "$here/common/lib.sh"
cpu=$(cpu_name)
torchver=$("$py" -c 'import re, torch
m = re.search(r"BLAS_INFO=([^,\s]*)", torch.__config__.show())
print(torch.__version__, "BLAS_INFO=" + (m.group(1) if m else "?"))' 2>/dev/null) || torchver=
echo "tdl GEMM benchmark: float32 A @ B, and conv2d 3x3 of 64 x 256 x 14 x 14 (the mask head's, an implicit 12544 x 2304 x 256 GEMM)"
echo "machine: $cpu, nproc $(nproc 2>/dev/null || echo '?'), load $(cut -d' ' -f1-3 /proc/loadavg 2>/dev/null)"
echo "torch: ${torchver:-not found} (matmul: that BLAS; conv2d: oneDNN)   tdl: $tdl"
echo "best of $repeats after warm-up; /bound: time / the multiply-adds at flops.c's peak; /torch: time / torch's"
echo

status=0
# row T NAME WHAT SECONDS CHECK: one table row; reads $bound_g (flops.c's GFLOP/s), $torch_t
row() {
    madds=$(awk -v n="$2" '{ w = $1 } w == "conv" { w = "conv_" } index(n, w) == 1 { printf "%.0f", $2 * $3 * $4 }' "$tmp/shapes")
    awk -v T="$1" -v n="$2" -v what="$3" -v t="$4" -v g="$bound_g" -v tt="$torch_t" -v m="$madds" -v check="$5" 'BEGIN {
        if (t == "") { printf "%-2s %-18s %-6s failed: %s\n", T, n, what, check; exit }
        rb = (g == "") ? "-" : sprintf("%.2fx", t / (2 * m / (g * 1e9)))
        rt = (tt == "") ? "-" : sprintf("%.2fx", t / tt)
        printf "%-2s %-18s %-6s %10.4f %8.1f %8s %8s   %s\n", T, n, what, t, 2 * m / t / 1e9, rb, rt, check }'
}
printf '%-2s %-18s %-6s %10s %8s %8s %8s   %s\n' T workload what "s/run" "GFLOP/s" "/bound" "/torch" result
for T in $threads; do
    bound_g=$(OMP_NUM_THREADS=$T "$tmp/flops" | awk '$1 == "gflops" { print $2 }')
    : >"$tmp/t.out"
    [ -n "$torchver" ] && "$py" "$here/matmul/torch_matmul.py" "$tmp" "$T" "$repeats" $names >"$tmp/t.out" 2>"$tmp/terr"
    for n in $names; do
        t=$(TDL_NUM_THREADS=$T "$tdl" "$here/matmul/matmul.tdl" "$tmp" "$repeats" "$n" 2>"$tmp/lerr" |
            awk -v n="$n" '$1 == n { print $2 }')
        bt=$(awk -v g="$bound_g" -v n="$n" '{ w = $1 } w == "conv" { w = "conv_" } index(n, w) == 1 {
            printf "%.6f", 2 * $2 * $3 * $4 / (g * 1e9) }' "$tmp/shapes")
        torch_t=
        row "$T" "$n" bound "$bt" "peak $bound_g GFLOP/s (flops.c)"
        torch_t=$(awk -v n="$n" '$1 == n { print $2 }' "$tmp/t.out")
        if [ -n "$torch_t" ]; then
            row "$T" "$n" torch "$torch_t" -
        elif [ -n "$torchver" ]; then
            row "$T" "$n" torch "" "$(errline "$tmp/terr")"
        else
            row "$T" "$n" torch "" "no torch in $py"
        fi
        if [ -z "$t" ]; then
            row "$T" "$n" tdl "" "$(errline "$tmp/lerr")"
            continue
        fi
        check=-
        if [ -f "$tmp/torch_$n.npy" ]; then
            check=$(npy_check "$py" "$tmp/tdl_$n.npy" "$tmp/torch_$n.npy")
            case $check in WRONG*) status=1 ;; esac
        fi
        row "$T" "$n" tdl "$t" "$check"
    done
done
exit $status
