#!/bin/sh
# stats.sh — var, std and norm over some dims in float32 (PyTorch's Welford and norm kernels:
# language.md, "Sums"), tdl against PyTorch's CPU kernels at 1 and 2 threads: var along the rows
# (dim 1) and the columns (dim 0) of 4096 x 1024, batch norm's statistics (dims 0, 2, 3 of 32 x 64
# x 56 x 56), the forward and backward of (x.std(1) * g).sum(); the 2-norm along the rows, the
# columns, of all of it, and its forward and backward.
#
# usage: sh bench/stats.sh [path/to/tdl]
# Prints seconds per evaluation (best of STATS_REPEATS, default 5, after 2 warm-ups) for tdl,
# tdl --fused-sums (fused sums in double: not PyTorch's bits) and torch, the ratio
# tdl / torch, the bytes of x read once per second by tdl (GB/s), and whether tdl's result has
# the same bits as torch's.
tdl=${1:-build/tdl}
here=$(cd "$(dirname "$0")" && pwd)
py=${TORCH_PYTHON:-/usr/bin/python3}
. "$here/common/lib.sh"
repeats=${STATS_REPEATS:-5}
tmp=$(mktemp -d "${TMPDIR:-/tmp}/tdl-stats.XXXXXX") || exit 2
trap 'rm -rf "$tmp"' EXIT
"$py" "$here/stats/make_data.py" "$tmp" || exit 2
printf '%-9s %2s %10s %10s %10s %9s %7s %s\n' case T tdl_s fused_s torch_s tdl/torch GB/s same_bits
for c in var_rows var_cols var_bn std_bwd norm_rows norm_cols norm_all norm_bwd; do
    bytes=$([ $c = var_bn ] && echo 25690112 || echo 16777216)
    for t in 1 2; do
        a=$(TDL_NUM_THREADS=$t "$tdl" "$here/stats/stats.tdl" "$tmp" "$repeats" $c "$tmp/tdl.npy" 2>&1 | tail -n 1)
        f=$(TDL_NUM_THREADS=$t "$tdl" --fused-sums "$here/stats/stats.tdl" "$tmp" "$repeats" $c "$tmp/fused.npy" 2>&1 | tail -n 1)
        b=$("$py" "$here/stats/torch_stats.py" "$tmp" $t "$repeats" $c "$tmp/torch.npy" 2>&1 | tail -n 1)
        gbs=$(awk -v a="$a" -v n="$bytes" 'BEGIN { if (a + 0 > 0) printf "%.1f", n / a / 1e9; else print "-" }')
        printf '%-9s %2s %10s %10s %10s %9s %7s %s\n' $c $t "$(secs "$a")" "$(secs "$f")" "$b" "$(ratio "$a" "$b")" \
            "$gbs" "$(same_bits "$py" "$tmp/tdl.npy" "$tmp/torch.npy")"
    done
done
