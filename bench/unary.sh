#!/bin/sh
# unary.sh — the pointwise functions tdl computes as PyTorch's CPU does, with SLEEF's vector
# functions (backend/cpu/cpu_math*.h: exp, log, log2, log10, sin, cos, tan, asin, atan, erf, erfc,
# tanh), tdl against torch at 1 and 2 threads on 4M values (float32; sin and erf also float64).
#
# usage: sh bench/unary.sh [path/to/tdl]
# Prints seconds per evaluation (best of UNARY_REPEATS, default 5, after 2 warm-ups) for tdl and
# torch, the ratio tdl / torch, the input and output bytes moved per second by tdl (GB/s), and
# whether tdl's result has the same bits as torch's.
tdl=${1:-build/tdl}
here=$(cd "$(dirname "$0")" && pwd)
py=${TORCH_PYTHON:-/usr/bin/python3}
. "$here/common/lib.sh"
repeats=${UNARY_REPEATS:-5}
tmp=$(mktemp -d "${TMPDIR:-/tmp}/tdl-unary.XXXXXX") || exit 2
trap 'rm -rf "$tmp"' EXIT
"$py" "$here/unary/make_data.py" "$tmp" || exit 2
echo "cpu: $(cpu_name)"
printf '%-6s %-8s %2s %10s %10s %9s %7s %s\n' fn dtype T tdl_s torch_s tdl/torch GB/s same_bits
for c in exp:float32 log:float32 log2:float32 log10:float32 sin:float32 cos:float32 tan:float32 \
    asin:float32 atan:float32 erf:float32 erfc:float32 tanh:float32 sin:float64 erf:float64; do
    fn=${c%%:*}
    dt=${c#*:}
    bytes=$([ "$dt" = float32 ] && echo 33554432 || echo 67108864)
    for t in 1 2; do
        a=$(TDL_NUM_THREADS=$t "$tdl" "$here/unary/unary.tdl" "$tmp" "$repeats" "$fn" "$dt" "$tmp/tdl.npy" 2>&1 | tail -n 1)
        b=$("$py" "$here/unary/torch_unary.py" "$tmp" $t "$repeats" "$fn" "$dt" "$tmp/torch.npy" 2>&1 | tail -n 1)
        gbs=$(awk -v a="$a" -v n="$bytes" 'BEGIN { if (a + 0 > 0) printf "%.1f", n / a / 1e9; else print "-" }')
        printf '%-6s %-8s %2s %10s %10s %9s %7s %s\n' "$fn" "$dt" $t "$(secs "$a")" "$b" "$(ratio "$a" "$b")" "$gbs" \
            "$(same_bits "$py" "$tmp/tdl.npy" "$tmp/torch.npy")"
    done
done
