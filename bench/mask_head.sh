#!/bin/sh
# mask_head.sh — the Mask R-CNN mask branch benchmark: examples/mask_head.tdl (stdlib vision's
# roi_align and nn's conv2d / conv_transpose2d / relu, loop-free tdl) against PyTorch's CPU path
# (torchvision's roi_align, MaskRCNNHeads and MaskRCNNPredictor) and against the arithmetic bound.
#
# usage: sh bench/mask_head.sh [path/to/tdl]
#
# Workload (mask_head/make_data.py): features 1 x 256 x 64 x 96 float32, 64 boxes, roi_align to
# 14 x 14 (spatial_scale 1/4, sampling_ratio 2), four conv 3x3 256 -> 256 + ReLU, conv_transpose
# 2x2 stride 2 + ReLU, conv 1x1 256 -> 91: 68.4 G multiply-adds. Two layouts: contiguous, and
# channels_last (the features and the 4-D weights converted once, untimed, in both tdl and torch).
# For T = 1 and T = 2 threads it prints, per layout, seconds per evaluation of:
#   bound   the multiply-adds at the peak of the C FMA loop of bench/common/flops.c (cc -O3
#           -march=native -fopenmp, OMP_NUM_THREADS=T): the time the arithmetic alone needs
#   torch   /usr/bin/python3 mask_head/torch_mask_head.py, torch.set_num_threads(T)
#   tdl     examples/mask_head.tdl with REPEATS, TDL_NUM_THREADS=T
# with GFLOP/s (2 x multiply-adds / time), the ratio to the bound and to torch (time / time:
# above 1 is slower), and whether tdl's logits agree with torch's (max |tdl - torch| <= 1e-4 x
# max |torch|). Timings are the best of MASK_REPEATS (default 3) after 2 warm-up evaluations.
# Exit status: 1 when a result is WRONG or flops.c cannot be built; a run that fails is reported
# on its row. Needs cc with OpenMP and python3 with numpy; torch and torchvision for the torch rows.

tdl=${1:-build/tdl}
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/.." && pwd)
py=${TORCH_PYTHON:-/usr/bin/python3}
repeats=${MASK_REPEATS:-3}
threads="1 2"
formats="contiguous channels_last"
case $tdl in /*) ;; *) tdl=$(pwd)/$tdl ;; esac
TDL_PATH=$root/stdlib
export TDL_PATH

tmp=$(mktemp -d "${TMPDIR:-/tmp}/tdl-mask.XXXXXX") || exit 2
trap 'rm -rf "$tmp"' EXIT
trap 'rm -rf "$tmp"; exit 130' INT TERM

"$py" -c 'import numpy' 2>/dev/null || py=python3
if ! madds=$("$py" "$here/mask_head/make_data.py" "$tmp" 2>"$tmp/err" | awk '$1 == "madds" { print $2 }'); then
    echo "mask_head.sh: writing the inputs failed:" >&2
    cat "$tmp/err" >&2
    exit 2
fi
if ! ${CC:-cc} -O3 -march=native -fopenmp -o "$tmp/flops" "$here/common/flops.c" 2>"$tmp/err"; then
    echo "mask_head.sh: cannot build flops.c with ${CC:-cc} -fopenmp:" >&2
    cat "$tmp/err" >&2
    exit 1
fi

. "$here/common/lib.sh"
cpu=$(cpu_name)
torchver=$("$py" -c 'import torch, torchvision; print(torch.__version__, "torchvision", torchvision.__version__)' 2>/dev/null) || torchver=
echo "tdl mask head benchmark: examples/mask_head.tdl vs torchvision's mask branch, float32"
echo "1 x 256 x 64 x 96 features, 64 boxes, roi_align 14x14, 4 conv3x3 + convT 2x2/2 + conv1x1 to 91 classes: $madds multiply-adds"
echo "machine: $cpu, nproc $(nproc 2>/dev/null || echo '?'), load $(cut -d' ' -f1-3 /proc/loadavg 2>/dev/null)"
echo "torch: ${torchver:-not found}   tdl: $tdl"
echo "best of $repeats after 2 warm-up evaluations; /bound: time / the multiply-adds at flops.c's peak; /torch: time / torch's"
echo

status=0
# row T FORMAT WHAT SECONDS CHECK
row() {
    awk -v T="$1" -v f="$2" -v what="$3" -v t="$4" -v b="$bound" -v tt="$torch_t" -v m="$madds" -v check="$5" 'BEGIN {
        if (t == "") { printf "%-2s %-14s %-6s failed: %s\n", T, f, what, check; exit }
        rb = (b == "") ? "-" : sprintf("%.2fx", t / b)
        rt = (tt == "") ? "-" : sprintf("%.2fx", t / tt)
        printf "%-2s %-14s %-6s %10.4f %8.1f %8s %8s   %s\n", T, f, what, t, 2 * m / t / 1e9, rb, rt, check }'
}
printf '%-2s %-14s %-6s %10s %8s %8s %8s   %s\n' T layout what "s/run" "GFLOP/s" "/bound" "/torch" result
for T in $threads; do
    gflops=$(OMP_NUM_THREADS=$T "$tmp/flops" | awk '$1 == "gflops" { print $2 }')
    bound=$(awk -v m="$madds" -v g="$gflops" 'BEGIN { printf "%.6f", 2 * m / (g * 1e9) }')
    for f in $formats; do
        torch_t=
        row "$T" "$f" bound "$bound" "peak $gflops GFLOP/s (flops.c)"
        if [ -n "$torchver" ]; then
            torch_t=$("$py" "$here/mask_head/torch_mask_head.py" "$tmp" "$T" "$repeats" "$f" 2>"$tmp/terr" |
                      awk '$1 == "seconds" { print $2 }')
            row "$T" "$f" torch "$torch_t" "$( [ -n "$torch_t" ] || errline "$tmp/terr")"
        else
            row "$T" "$f" torch "" "no torch and torchvision in $py"
        fi
        t=$(cd "$root" && TDL_NUM_THREADS=$T "$tdl" examples/mask_head.tdl "$tmp/weights.npz" "$tmp/features.npy" \
            "$tmp/boxes.npy" "$tmp/tdl_$f.npy" "$repeats" "$f" 2>"$tmp/lerr" | awk '$1 == "seconds" { print $2 }')
        if [ -z "$t" ]; then
            row "$T" "$f" tdl "" "$(errline "$tmp/lerr")"
            continue
        fi
        check=-
        if [ -f "$tmp/torch_$f.npy" ]; then
            check=$(npy_check "$py" "$tmp/tdl_$f.npy" "$tmp/torch_$f.npy")
            case $check in WRONG*) status=1 ;; esac
        fi
        row "$T" "$f" tdl "$t" "$check"
    done
done
exit $status
