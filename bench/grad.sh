#!/bin/sh
# grad.sh — roi_align's gradient: forward + backward of (roi_align(x, boxes, ...) * g).sum()
# (tdl: vision.roi_align and its reverse mode, fcdim/autograd.c; torch: torchvision.ops.roi_align
# and autograd, on the CPU), on bench/roi_align.sh's MASKRCNN and ADAPTIVE workloads
# (bench/roi_align/make_data.py: input 2 x 256 x 200 x 304 float32, 512 boxes, spatial_scale
# 0.25, aligned; 7x7 with sampling_ratio 2, and 14x14 adaptive), at 1 and 2 threads side by side.
#
# Then the peak memory of tdl's run at 1 thread (/usr/bin/time's maximum resident set, less that of
# tdl importing vision and loading nothing) against the bytes of the input, the output and the
# gradient; a step on 4 channels (the input's first), where the kernels are small and the work
# around them is what a step costs (scheduling, the kernel cache, the interpreter; torch's dispatch
# and autograd), best of GRAD_STEPS (default 200) at 1 thread; and the elementwise chain (grad/chain.tdl, GRAD_CHAIN elements, default 16M float32):
# its backward against a copy of the same bytes, at 1 and 2 threads.
#
# usage: sh bench/grad.sh [path/to/tdl]
# Prints seconds per forward + backward (best of GRAD_REPEATS, default 3, after 1 warm-up), the
# ratio tdl / torch, whether tdl's gradient has the same bits at 1 and 2 threads, and the largest
# difference from torchvision's gradient relative to its largest magnitude.
tdl=${1:-build/tdl}
here=$(cd "$(dirname "$0")" && pwd)
py=${TORCH_PYTHON:-/usr/bin/python3}
repeats=${GRAD_REPEATS:-3}
case $tdl in /*) ;; *) tdl=$(pwd)/$tdl ;; esac
TDL_PATH=$(cd "$here/../stdlib" && pwd)
export TDL_PATH
tmp=$(mktemp -d "${TMPDIR:-/tmp}/tdl-grad.XXXXXX") || exit 2
trap 'rm -rf "$tmp"' EXIT
"$py" "$here/roi_align/make_data.py" "$tmp" >/dev/null || exit 2
printf '%-10s %2s %12s %12s %8s\n' workload T tdl_s torch_s tdl/torch
rss() { /usr/bin/time -f 'RSS %M' "$@" 2>&1 >/dev/null | sed -n 's/^RSS //p' | tail -n 1; }
base_kb=$(TDL_NUM_THREADS=1 rss "$tdl" -c 'import vision')
for w in maskrcnn adaptive; do
    for t in 1 2; do
        if [ $t = 1 ] && [ -x /usr/bin/time ]; then
            a=$( { /usr/bin/time -f 'RSS %M' env TDL_NUM_THREADS=$t "$tdl" "$here/grad/grad.tdl" "$tmp" "$repeats" 1 $w "$tmp/tdl_${w}_$t.npy" 2>"$tmp/rss_$w"; } | tail -n 1)
            sed -n 's/^RSS //p' "$tmp/rss_$w" > "$tmp/rsskb_$w"
        else
            a=$(TDL_NUM_THREADS=$t "$tdl" "$here/grad/grad.tdl" "$tmp" "$repeats" 1 $w "$tmp/tdl_${w}_$t.npy" 2>&1 | tail -n 1)
        fi
        b=$("$py" "$here/grad/torch_grad.py" "$tmp" "$repeats" 1 $w $t "$tmp/torch_${w}_$t.npy" 2>&1 | tail -n 1)
        ta=${a#* } tb=${b#* }
        printf '%-10s %2s %12s %12s %8s\n' $w $t "$ta" "$tb" "$(awk -v a="$ta" -v b="$tb" 'BEGIN { if (b > 0) printf "%.2f", a / b }')"
    done
    "$py" - "$tmp" $w <<'PY'
import sys
import numpy as np
d, w = sys.argv[1], sys.argv[2]
a1, a2 = np.load("%s/tdl_%s_1.npy" % (d, w)), np.load("%s/tdl_%s_2.npy" % (d, w))
t = np.load("%s/torch_%s_1.npy" % (d, w)).astype(np.float64)
err = np.abs(a1.astype(np.float64) - t).max() / max(np.abs(t).max(), 1e-30)
print("%-10s tdl bits at 1 and 2 threads: %s; max |tdl - torch| / max |torch|: %.2e"
      % (w, "identical" if a1.tobytes() == a2.tobytes() else "DIFFERENT", err))
PY
    if [ -s "$tmp/rsskb_$w" ] && [ -n "$base_kb" ]; then
        "$py" - "$tmp" $w "$(cat "$tmp/rsskb_$w")" "$base_kb" <<'PY'
import sys
import numpy as np
d, w, peak, base = sys.argv[1], sys.argv[2], int(sys.argv[3]), int(sys.argv[4])
x = np.load(d + "/x_big.npy", mmap_mode="r")
k = np.load(d + "/boxes_big.npy", mmap_mode="r").shape[0]
side = 7 if w == "maskrcnn" else 14
need = 2 * x.nbytes + k * x.shape[1] * side * side * 4      # input, gradient, output
print("%-10s tdl peak memory (1 thread): %.0f MB over the interpreter's, %.2f x (input + output + gradient, %.0f MB)"
      % (w, (peak - base) / 1024.0, (peak - base) * 1024.0 / need, need / 1e6))
PY
    fi
done
for w in maskrcnn adaptive; do
    a=$(TDL_NUM_THREADS=1 "$tdl" "$here/grad/grad.tdl" "$tmp" "${GRAD_STEPS:-200}" 3 $w "$tmp/step.npy" cpu 4 2>&1 | tail -n 1)
    b=$("$py" "$here/grad/torch_grad.py" "$tmp" "${GRAD_STEPS:-200}" 3 $w 1 "$tmp/step_torch.npy" 4 2>&1 | tail -n 1)
    ta=${a#* } tb=${b#* }
    printf '%-10s %2s %12s %12s %8s   (4 channels: a step'"'"'s own work)\n' $w 1 "$ta" "$tb" \
        "$(awk -v a="$ta" -v b="$tb" 'BEGIN { if (b > 0) printf "%.2f", a / b }')"
done
for t in 1 2; do
    c=$(TDL_NUM_THREADS=$t "$tdl" "$here/grad/chain.tdl" "${GRAD_CHAIN:-16000000}" "$repeats" 2>&1 | tail -n 1)
    set -- $c
    printf 'chain      %2s backward %.4f s, copy of the same bytes %.4f s: %.2f x\n' $t "$2" "$3" "$4"
done
