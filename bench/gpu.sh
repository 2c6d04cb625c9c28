#!/bin/sh
# gpu.sh — tdl on the GPU against PyTorch on the same GPU, side by side in one run.
#
# usage: sh bench/gpu.sh [path/to/tdl [SECTION...]]   (exits 0 with a message where there is no GPU)
# SECTION: chain, roi_align, gradient, mask_head, host (default: all of them, in that order).
#
# Rows (float32; every time is the best of GPU_REPEATS (default 20) after warm-up, each
# evaluation ending with its value on the host, `.item()`, or a synchronize):
#   chain N   where(a > 0, a*b + c, c*0.5).sum() over N = 2^24 and 2^27 elements (a, b, c made on
#             the GPU from arange: bench/gpu/chain.tdl): tdl, torch eager, torch.compile, and the
#             read bound (3 N x 4 bytes at the bandwidth of a 1 GiB device-to-device copy);
#             agreement: |y - ref| <= 1e-5 x sum |terms|, ref in float64 (torch_gpu.py).
#   roi_align the workloads of bench/roi_align.sh (small, maskrcnn, maskrcnn_cl, adaptive; the data
#             of bench/roi_align/make_data.py, moved to the GPU untimed): tdl's vision.roi_align
#             with --device cuda against torchvision.ops.roi_align on cuda; agreement as
#             roi_align.sh checks it (the checksum against make_data.py's float64 reference).
#   mask head bench/mask_head.sh's workload (64 boxes, 68.4 G multiply-adds) in both layouts:
#             examples/mask_head.tdl with --device cuda, its convolutions on cuDNN (tdl) and with
#             TDL_CUDNN=0 on the generated kernels (tdl-gen), against torchvision's branch on cuda,
#             eager and torch.compile (bench/mask_head/torch_mask_head.py); float32 without TF32
#             on both sides (MASK_TF32=1: with, for torch and tdl's cuDNN); best of MASK_REPEATS
#             (default 5); agreement: max |tdl - eager| <= 1e-4 x max |eager|.
#   small     the host cost of one small op: 1000 calls of x + 1.0 on 1000 elements, each realised.
#   nvrtc     a process that runs one kernel (tdl --device cuda -c ...): cold (empty kernel cache:
#             NVRTC compiles), warm (the disk cache), and a process that only opens the device.
#   gradient  forward + backward of roi_align (bench/grad.sh's maskrcnn and adaptive, on cuda): tdl
#             against torchvision's autograd, each run twice (GRAD_REPEATS, default 5, after 2):
#             whether each side's gradient has the same bits both times; agreement: max |tdl - tv|
#             <= 1e-5 x max |tv|, and tdl's two runs equal to the bit.
# Exit status 1 when a result disagrees.
tdl=${1:-build/tdl}
[ $# -gt 0 ] && shift
sections=${*:-chain roi_align gradient mask_head host}
want() { case " $sections " in *" $1 "*) return 0 ;; esac; return 1; }
here=$(cd "$(dirname "$0")" && pwd)
py=${TORCH_PYTHON:-python3}
repeats=${GPU_REPEATS:-20}
case $tdl in /*) ;; *) tdl=$(pwd)/$tdl ;; esac
TDL_PATH=$(cd "$here/../stdlib" && pwd)
export TDL_PATH

if ! "$tdl" --device cuda -c 'pass' >/dev/null 2>&1; then
    echo "gpu.sh: no GPU here ($("$tdl" --device cuda -c 'pass' 2>&1 | tail -n 1)): nothing run"
    exit 0
fi
if ! "$py" -c 'import torch, torchvision; assert torch.cuda.is_available()' 2>/dev/null; then
    echo "gpu.sh: $py has no torch with CUDA: nothing run"
    exit 0
fi
tmp=$(mktemp -d "${TMPDIR:-/tmp}/tdl-gpu.XXXXXX") || exit 2
trap 'rm -rf "$tmp"' EXIT
trap 'rm -rf "$tmp"; exit 130' INT TERM
export TDL_CACHE_DIR=$tmp/cache

echo "tdl GPU benchmark: $(nvidia-smi --query-gpu=name,driver_version --format=csv,noheader 2>/dev/null | head -n 1)"
echo "torch: $("$py" -c 'import torch, torchvision; print(torch.__version__, "torchvision", torchvision.__version__)')"
echo "tdl: $tdl ($("$tdl" --version 2>/dev/null))"
status=0
"$py" "$here/gpu/torch_gpu.py" bw >"$tmp/bw" || exit 1
bw=$(awk '{ print $2 }' "$tmp/bw")
printf 'device copy bandwidth: %.0f GB/s (read + write)\n\n' "$(awk -v b="$bw" 'BEGIN { print b / 1e9 }')"

# ---- the chain ----
if want chain; then
printf '%-14s %-8s %12s %8s %8s %8s   %s\n' workload what "ms/run" "/bound" "/eager" "/compile" result
for lg in 24 27; do
    n=$((1 << lg))
    "$py" "$here/gpu/torch_gpu.py" chain $n "$repeats" 3 >"$tmp/torch" 2>"$tmp/torch.err" ||
        { echo "chain 2^$lg: torch failed: $(tail -n 1 "$tmp/torch.err")"; status=1; continue; }
    "$tdl" --device cuda "$here/gpu/chain.tdl" chain $n "$repeats" 3 >"$tmp/tdl" 2>"$tmp/tdl.err" ||
        { echo "chain 2^$lg: tdl failed: $(grep Error "$tmp/tdl.err" | tail -n 1)"; status=1; }
    out=$(cat "$tmp/torch" "$tmp/tdl" | awk -v lg=$lg -v n=$n -v bw="$bw" '
        $1 == "ref" { ref = $3; scale = $4 } $1 == "eager" { te = $3; ye = $4 }
        $1 == "compile" { tc = $3; yc = $4 } $1 == "chain" { tt = $3; yt = $4 }
        function check(y) { d = y - ref; if (d < 0) d = -d
            if (d <= 1e-5 * scale) return sprintf("ok (err %.1e)", d / scale); bad = 1
            return sprintf("WRONG: %.9g, want %.9g", y, ref) }
        function row(what, t, y) {
            printf "%-14s %-8s %12.4f %7.2fx %7.2fx %7.2fx   %s\n", "chain 2^" lg, what, t * 1e3, t / bound,
                t / te, t / tc, check(y) }
        END { bound = 3 * n * 4 / bw
            printf "%-14s %-8s %12.4f %8s %8s %8s   %s\n", "chain 2^" lg, "bound", bound * 1e3, "", "", "", "read a, b, c once"
            row("torch", te, ye); row("compile", tc, yc)
            if (tt != "") row("tdl", tt, yt)
            if (bad) print "WRONG" }')
    echo "$out" | grep -v '^WRONG$'
    case $out in *WRONG) status=1 ;; esac
done
echo
fi

# ---- roi_align ----
if want roi_align || want gradient; then
    if ! "$py" "$here/roi_align/make_data.py" "$tmp" >/dev/null 2>"$tmp/err"; then
        echo "gpu.sh: writing the roi_align inputs failed: $(tail -n 1 "$tmp/err")"
        exit 1
    fi
fi
if want roi_align; then
printf '%-14s %-8s %12s %8s   %s\n' workload what "ms/run" "/tv" result
for w in small maskrcnn maskrcnn_cl adaptive; do
    r=$(case $w in maskrcnn_cl) echo maskrcnn ;; *) echo $w ;; esac)
    ROI_DEVICE=cuda "$py" "$here/roi_align/torch_roi_align.py" "$tmp" 1 "$repeats" 3 $w >"$tmp/tv" 2>"$tmp/tv.err" ||
        echo "$w: torchvision failed: $(tail -n 1 "$tmp/tv.err")"
    "$tdl" --device cuda "$here/roi_align/roi_align.tdl" "$tmp" "$repeats" 3 $w >"$tmp/tdl" 2>"$tmp/tdl.err" ||
        echo "$w: tdl failed: $(grep Error "$tmp/tdl.err" | tail -n 1)"
    out=$(cat "$tmp/tv" "$tmp/tdl" | awk -v w=$w -v r=$r -v reff="$tmp/ref.txt" '
        BEGIN { while ((getline l < reff) > 0) { split(l, f, " "); if (f[1] == r) { ref = f[2]; scale = f[3] } } }
        NR == 1 { tv = $2; yv = $3 } NR == 2 { tt = $2; yt = $3 }
        function check(y) { d = y - ref; if (d < 0) d = -d
            if (d <= 1e-5 * scale) return sprintf("ok (err %.1e)", d / scale); bad = 1
            return sprintf("WRONG: %.9g, want %.9g", y, ref) }
        END { if (tv != "") printf "%-14s %-8s %12.4f %7.2fx   %s\n", w, "tv", tv * 1e3, 1, check(yv)
              if (tt != "") printf "%-14s %-8s %12.4f %7.2fx   %s\n", w, "tdl", tt * 1e3, tt / tv, check(yt)
              if (bad) print "WRONG" }')
    echo "$out" | grep -v '^WRONG$'
    case $out in *WRONG) status=1 ;; esac
done
echo
fi

# ---- roi_align's gradient ----
# forward + backward of (roi_align(x, ...) * g).sum() (bench/grad.sh's workloads, on cuda), each
# side run twice: whether its gradient has the same bits both times (torchvision's CUDA backward
# adds with atomics), and tdl's distance from torchvision's.
if want gradient; then
grep=${GRAD_REPEATS:-5}
printf '%-14s %-8s %12s %8s   %s\n' gradient what "ms/run" "/tv" result
for w in maskrcnn adaptive; do
    tv= tt=
    for k in 1 2; do
        ROI_DEVICE=cuda "$py" "$here/grad/torch_grad.py" "$tmp" "$grep" 2 $w 1 "$tmp/gtv_$k.npy" >"$tmp/gtv" 2>"$tmp/gtv.err" ||
            echo "$w gradient: torchvision failed: $(tail -n 1 "$tmp/gtv.err")"
        "$tdl" "$here/grad/grad.tdl" "$tmp" "$grep" 2 $w "$tmp/gtdl_$k.npy" cuda >"$tmp/gtdl" 2>"$tmp/gtdl.err" ||
            { echo "$w gradient: tdl failed: $(grep Error "$tmp/gtdl.err" | tail -n 1)"; status=1; }
        # the best of the two runs
        tv=$(printf '%s\n' "$tv" | cat - "$tmp/gtv" | awk 'NF { t = $NF; if (m == "" || t < m) m = t } END { print m }')
        tt=$(printf '%s\n' "$tt" | cat - "$tmp/gtdl" | awk 'NF { t = $NF; if (m == "" || t < m) m = t } END { print m }')
    done
    [ -f "$tmp/gtv_2.npy" ] && [ -f "$tmp/gtdl_2.npy" ] || continue
    out=$("$py" - "$tmp" "$w" "$tv" "$tt" <<'PY'
import sys
import numpy as np
d, w, tv, tt = sys.argv[1], sys.argv[2], float(sys.argv[3]), float(sys.argv[4])
v1, v2 = np.load(d + "/gtv_1.npy"), np.load(d + "/gtv_2.npy")
t1, t2 = np.load(d + "/gtdl_1.npy"), np.load(d + "/gtdl_2.npy")
same = lambda a, b: "same bits twice" if a.tobytes() == b.tobytes() else "bits differ between runs"
ref = v1.astype(np.float64)
err = np.abs(t1.astype(np.float64) - ref).max() / max(np.abs(ref).max(), 1e-30)
ok = "ok" if err <= 1e-5 else "WRONG"
print("%-14s %-8s %12.4f %7.2fx   %s" % (w, "tv", tv * 1e3, 1, same(v1, v2)))
print("%-14s %-8s %12.4f %7.2fx   %s; %s (max |tdl - tv| / max |tv| %.1e)" % (w, "tdl", tt * 1e3, tt / tv, same(t1, t2), ok, err))
if ok != "ok" or t1.tobytes() != t2.tobytes():
    print("WRONG")
PY
)
    echo "$out" | grep -v '^WRONG$'
    case $out in *WRONG) status=1 ;; esac
    rm -f "$tmp"/gtv_*.npy "$tmp"/gtdl_*.npy
done
echo
fi

# ---- the mask head ----
if want mask_head; then
mrep=${MASK_REPEATS:-5}
mkdir -p "$tmp/mask"
if ! "$py" "$here/mask_head/make_data.py" "$tmp/mask" >/dev/null 2>"$tmp/err"; then
    echo "gpu.sh: writing the mask head inputs failed: $(tail -n 1 "$tmp/err")"
    exit 1
fi
export TDL_CUDNN_TF32=${MASK_TF32:-0}
printf '%-14s %-8s %12s %8s %8s   %s\n' "mask head" what "ms/run" "/eager" "/compile" result
for f in contiguous channels_last; do
    te= tc=
    for m in eager compile; do
        t=$("$py" "$here/mask_head/torch_mask_head.py" "$tmp/mask" 1 "$mrep" $f cuda $m 2>"$tmp/terr" |
            awk '$1 == "seconds" { print $2 }')
        [ -n "$t" ] || echo "mask head $f: torch $m failed: $(tail -n 1 "$tmp/terr")"
        case $m in eager) te=$t ;; compile) tc=$t ;; esac
    done
    for what in tdl tdl-gen; do
        off=1
        [ $what = tdl-gen ] && off=0
        t=$(cd "$here/.." && TDL_CUDNN=$off "$tdl" --device cuda examples/mask_head.tdl "$tmp/mask/weights.npz" \
            "$tmp/mask/features.npy" "$tmp/mask/boxes.npy" "$tmp/mask/${what}_$f.npy" "$mrep" $f 2>"$tmp/lerr" |
            awk '$1 == "seconds" { print $2 }')
        if [ -z "$t" ]; then
            echo "mask head $f: $what failed: $(grep Error "$tmp/lerr" | tail -n 1)"
            status=1
            continue
        fi
        check=-
        if [ -f "$tmp/mask/torch_${f}_cuda_eager.npy" ]; then
            check=$("$py" -c 'import sys, numpy as np
a, b = np.load(sys.argv[1]), np.load(sys.argv[2])
e = float(np.abs(a - b).max() / np.abs(b).max()) if a.shape == b.shape else float("inf")
print(("ok (err %.1e of max)" if e <= 1e-4 else "WRONG: err %.3g of max") % e)' "$tmp/mask/${what}_$f.npy" \
                "$tmp/mask/torch_${f}_cuda_eager.npy")
            case $check in WRONG*) status=1 ;; esac
        fi
        awk -v f=$f -v w=$what -v t="$t" -v te="$te" -v tc="$tc" -v c="$check" 'BEGIN {
            re = te == "" ? "-" : sprintf("%.2fx", t / te); rc = tc == "" ? "-" : sprintf("%.2fx", t / tc)
            printf "%-14s %-8s %12.3f %8s %8s   %s\n", f, w, t * 1e3, re, rc, c }'
    done
    [ -z "$te" ] || printf '%-14s %-8s %12.3f\n' $f eager "$(awk -v t="$te" 'BEGIN { print t * 1e3 }')"
    [ -z "$tc" ] || printf '%-14s %-8s %12.3f\n' $f compile "$(awk -v t="$tc" 'BEGIN { print t * 1e3 }')"
done
unset TDL_CUDNN_TF32
echo
fi

# ---- host cost and compile time ----
if want host; then
"$py" "$here/gpu/torch_gpu.py" small 1000 >"$tmp/ts"
"$tdl" --device cuda "$here/gpu/chain.tdl" small 1000 >"$tmp/ss" 2>&1
awk 'NR == 1 { t = $3 } NR == 2 { printf "small op (x + 1.0, 1000 elements): tdl %.2f us/call, torch eager %.2f us/call (%.2fx)\n", $3 * 1e6, t * 1e6, $3 / t }' "$tmp/ts" "$tmp/ss"
one='x = ones(1000, device="cuda") * 3.0; print((x + 1.0).sum().item())'
secs() { "$py" -c 'import subprocess, sys, time
t = time.perf_counter(); r = subprocess.run(sys.argv[1:], stdout=subprocess.DEVNULL).returncode
print("%.3f" % (time.perf_counter() - t) if r == 0 else "failed")' "$@"; }
rm -rf "$TDL_CACHE_DIR"
cold=$(secs "$tdl" --device cuda -c "$one")
nk=$(ls "$TDL_CACHE_DIR" 2>/dev/null | wc -l)
warm=$(secs "$tdl" --device cuda -c "$one")
open=$(secs "$tdl" --device cuda -c 'ones(1, device="cuda").stride()')
echo "process running one small program ($nk kernel files cached): cold cache ${cold} s, warm ${warm} s; opening the device alone ${open} s"
fi
exit $status
