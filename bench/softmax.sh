#!/bin/sh
# softmax.sh — softmax, log_softmax and softmax's gradient (forward and backward of
# (x.softmax(1) * g).sum()) in float32, tdl against PyTorch's CPU kernels, at 1 and 2 threads:
# along the last dim of 4096 x 1024 (WORKLOAD last) and along dim 1 of 64 x 256 x 256 (inner).
#
# usage: sh bench/softmax.sh [path/to/tdl]
# Prints seconds per evaluation (best of SOFTMAX_REPEATS, default 5, after 2 warm-ups) for tdl,
# tdl --fused-sums (the sums fused into their kernels, accumulated in double: not PyTorch's
# bits) and torch, the ratio tdl / torch, and whether tdl's result has the same bits as torch's
# (tdl computes these as PyTorch's kernels do: language.md, "Sums").
tdl=${1:-build/tdl}
here=$(cd "$(dirname "$0")" && pwd)
py=${TORCH_PYTHON:-/usr/bin/python3}
. "$here/common/lib.sh"
repeats=${SOFTMAX_REPEATS:-5}
tmp=$(mktemp -d "${TMPDIR:-/tmp}/tdl-softmax.XXXXXX") || exit 2
trap 'rm -rf "$tmp"' EXIT
"$py" "$here/softmax/make_data.py" "$tmp" || exit 2
printf '%-8s %-12s %2s %10s %10s %10s %9s %s\n' workload case T tdl_s fused_s torch_s tdl/torch same_bits
for w in last inner; do
    for c in softmax log_softmax backward; do
        for t in 1 2; do
            a=$(TDL_NUM_THREADS=$t "$tdl" "$here/softmax/softmax.tdl" "$tmp" "$repeats" $w $c "$tmp/tdl.npy" 2>&1 | tail -n 1)
            f=$(TDL_NUM_THREADS=$t "$tdl" --fused-sums "$here/softmax/softmax.tdl" "$tmp" "$repeats" $w $c "$tmp/fused.npy" 2>&1 | tail -n 1)
            b=$("$py" "$here/softmax/torch_softmax.py" "$tmp" $t "$repeats" $w $c "$tmp/torch.npy" 2>&1 | tail -n 1)
            printf '%-8s %-12s %2s %10s %10s %10s %9s %s\n' $w $c $t "$(secs "$a")" "$(secs "$f")" "$b" \
                "$(ratio "$a" "$b")" "$(same_bits "$py" "$tmp/tdl.npy" "$tmp/torch.npy")"
        done
    done
done
