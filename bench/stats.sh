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
        same=$("$py" -c 'import numpy as np, sys; a, b = np.load(sys.argv[1]), np.load(sys.argv[2]); print("yes" if a.tobytes() == b.tobytes() else "NO (%d of %d differ)" % ((a != b).sum(), a.size))' "$tmp/tdl.npy" "$tmp/torch.npy" 2>&1)
        ratio=$(awk -v a="$a" -v b="$b" 'BEGIN { if (a + 0 > 0 && b + 0 > 0) printf "%.2f", a / b; else print "-" }')
        gbs=$(awk -v a="$a" -v n="$bytes" 'BEGIN { if (a + 0 > 0) printf "%.1f", n / a / 1e9; else print "-" }')
        # seconds to 5 places (a failed run prints its message instead)
        a=$(awk -v v="$a" 'BEGIN { if (v + 0 > 0) printf "%.5f", v; else print v }')
        f=$(awk -v v="$f" 'BEGIN { if (v + 0 > 0) printf "%.5f", v; else print v }')
        printf '%-9s %2s %10s %10s %10s %9s %7s %s\n' $c $t "$a" "$f" "$b" "$ratio" "$gbs" "$same"
    done
done
