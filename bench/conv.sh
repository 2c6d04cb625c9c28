#!/bin/sh
# conv.sh — grouped and depthwise convolutions + ReLU, side by side with PyTorch's CPU path
# (oneDNN where it takes them), at 1 and 2 threads, both memory formats.
#
# usage: sh bench/conv.sh [path/to/tdl]
#
# Workloads (conv/make_data.py; conv/conv.tdl and conv/torch_conv.py run them): input 8 x 64 x 28
# x 28 float32, 3x3 kernel, padding 1, bias, then ReLU:
#   g2 g4 g8 g32  conv2d 64 -> 64 channels with 2, 4, 8, 32 groups (32, 16, 8, 2 input channels
#                 per group: the GEMM for up to 8 groups here, the taps' kernel for 2 per group)
#   dwm2          depthwise with channel multiplier 2 (64 groups, 128 output channels)
#   convt         conv_transpose2d 64 -> 32, stride 2, output_padding 1 (col2im by phases)
# For T = 1 and T = 2 threads and each layout it prints seconds per evaluation for torch and tdl
# (wall time, best of CONV_REPEATS, default 10, after 2 warm-ups), tdl / torch (above 1:
# slower) and whether tdl's result agrees with torch's (max |tdl - torch| <= 1e-4 x max |torch|).
# Wall time counts the machine's load: run it on a quiet machine, or compare CPU time (perf stat
# of conv/conv.tdl with more and fewer REPEATS). CONV_NAMES picks workloads. Exit status 1 when a
# result is WRONG.

tdl=${1:-build/tdl}
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/.." && pwd)
py=${TORCH_PYTHON:-/usr/bin/python3}
repeats=${CONV_REPEATS:-10}
names=${CONV_NAMES:-"g2 g4 g8 g32 dwm2 convt"}
case $tdl in /*) ;; *) tdl=$(pwd)/$tdl ;; esac
TDL_PATH=$root/stdlib
export TDL_PATH

tmp=$(mktemp -d "${TMPDIR:-/tmp}/tdl-conv.XXXXXX") || exit 2
trap 'rm -rf "$tmp"' EXIT
trap 'rm -rf "$tmp"; exit 130' INT TERM

"$py" -c 'import numpy' 2>/dev/null || py=python3
if ! "$py" "$here/conv/make_data.py" "$tmp" 2>"$tmp/err"; then
    echo "conv.sh: writing the inputs failed:" >&2
    cat "$tmp/err" >&2
    exit 2
fi
. "$here/common/lib.sh"
torchver=$("$py" -c 'import torch; print(torch.__version__)' 2>/dev/null) || torchver=
echo "tdl convolution benchmark: grouped / depthwise conv2d and conv_transpose2d + ReLU vs PyTorch, float32"
echo "8 x 64 x 28 x 28 input, 3x3 kernels; machine: $(cpu_name), nproc $(nproc 2>/dev/null || echo '?'), load $(cut -d' ' -f1-3 /proc/loadavg 2>/dev/null)"
echo "torch: ${torchver:-not found}   tdl: $tdl   best of $repeats after 2 warm-ups"
echo
printf '%-2s %-14s %-6s %10s %10s %8s   %s\n' T layout name "torch s" "tdl s" "/torch" result
status=0
for T in 1 2; do
    for f in contiguous channels_last; do
        : >"$tmp/torch.txt"
        if [ -n "$torchver" ]; then
            "$py" "$here/conv/torch_conv.py" "$tmp" "$T" "$repeats" "$f" $names >"$tmp/torch.txt" 2>"$tmp/terr" ||
                echo "torch failed: $(errline "$tmp/terr")"
        fi
        if ! (cd "$root" && TDL_NUM_THREADS=$T "$tdl" "$here/conv/conv.tdl" "$tmp" "$repeats" "$f" $names \
              >"$tmp/tdl.txt" 2>"$tmp/lerr"); then
            echo "$T $f tdl failed: $(errline "$tmp/lerr")"
            status=1
            continue
        fi
        for n in $names; do
            tt=$(awk -v n="$n" '$1 == n && $2 == "seconds" { print $3 }' "$tmp/torch.txt")
            lt=$(awk -v n="$n" '$1 == n && $2 == "seconds" { print $3 }' "$tmp/tdl.txt")
            check=-
            if [ -f "$tmp/${n}_torch_$f.npy" ] && [ -f "$tmp/${n}_tdl_$f.npy" ]; then
                check=$(npy_check "$py" "$tmp/${n}_tdl_$f.npy" "$tmp/${n}_torch_$f.npy")
                case $check in WRONG*) status=1 ;; esac
            fi
            awk -v T="$T" -v f="$f" -v n="$n" -v tt="$tt" -v lt="$lt" -v c="$check" 'BEGIN {
                r = (tt == "" || lt == "") ? "-" : sprintf("%.2fx", lt / tt)
                printf "%-2s %-14s %-6s %10s %10s %8s   %s\n", T, f, n, tt == "" ? "-" : sprintf("%.5f", tt),
                       lt == "" ? "-" : sprintf("%.5f", lt), r, c }'
        done
    done
done
exit $status
