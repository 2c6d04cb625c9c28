#!/bin/sh
# roi_align.sh — the roi_align benchmark: stdlib/vision.tdl's roi_align (loop-free tdl with
# first-class dims) against torchvision's CPU kernel and against the memory bound.
#
# usage: sh bench/roi_align.sh [path/to/tdl]        (make bench runs it with build/tdl)
#
# Workloads (float32 inputs, standard normal; boxes (batch, x1, y1, x2, y2) in image coordinates;
# make_data.py has the details):
#   small        input 1 x 16 x 32 x 32, 32 boxes (sides 2..24 px), output 7x7, spatial_scale 1,
#                sampling_ratio 2, aligned False
#   maskrcnn     input 2 x 256 x 200 x 304 (124.5 MB: FPN level P2 of an 800 x 1216 image), 512
#                boxes over the image with sides 16..256 px, spatial_scale 0.25, output 7x7,
#                sampling_ratio 2, aligned True
#   maskrcnn_cl  maskrcnn with the input in channels_last memory (tdl and torch:
#                x.contiguous(memory_format=channels_last), made once, untimed)
#   adaptive     maskrcnn with sampling_ratio 0 (ceil(roi / bins) samples per bin) and output 14x14
# For T = 1 and T = 2 threads it prints, for each workload, seconds per evaluation of:
#   bound   the bytes it must move at the bandwidth of a C copy loop over arrays of the input's
#           size, STREAM-style (bench/common/bw.c; cc -O3 -march=native -fopenmp,
#           OMP_NUM_THREADS=T). The bytes: the distinct input elements that some bilinear tap
#           with nonzero weight reads (counted by make_data.py over every sample of every box;
#           on these workloads the same as the elements under all four taps), the boxes, and the
#           result, 4 bytes each. small's data fit in cache: its bound is the cache's speed.
#   torch   torchvision.ops.roi_align (/usr/bin/python3), torch.set_num_threads(T)
#   tdl     bench/roi_align/roi_align.tdl: vision.roi_align, TDL_NUM_THREADS=T
# with GB/s (those bytes / time), the ratio to the bound and to torch (time / time: above 1 is
# slower), and whether the result agrees with a reference computed by make_data.py (bilinear
# weights and means in double, coordinates in float32 as torchvision computes them). The check
# is a checksum sum y[k, c, p, q] wk[k] wc[c] wp[p] wq[q] with random float64 weights per axis,
# computed in double after the clock stops; it must agree within 1e-5 x the 2-norm of its terms,
# the size by which a value in a wrong place moves it.
# Every timing is the best of ROI_REPEATS (default 5) after 2 warm-up evaluations, SMALL's (a
# call of a fifth of a millisecond, whose best of 5 moved by half between runs on a shared
# machine) the best of 60 times as many after 20; torch and tdl time themselves
# (time.perf_counter(), perf_counter()); each tdl evaluation is realised in full (stride()) and
# the previous result dropped first.
# Then, for each T, the peak resident memory (ru_maxrss) of one tdl process per workload that
# makes its input with rand() (no load(): tdl's load holds the file's bytes and the array at once,
# twice the input, which would hide roi_align's own peak) and evaluates once; "input" is a process
# that only makes the big input (plus the interpreter: the baseline). Compared with the input's
# and the result's bytes; the issue asks for at most 2x on adaptive.
#
# Exit status: 1 when a result is WRONG or the C bound cannot be built; a tdl or torch run that
# fails is reported on its rows ("failed: <error>") without failing the benchmark, so that make
# bench still reports the other rows. Needs cc with OpenMP, python3 with numpy (for the data and
# the memory measurement), POSIX sh and awk; torch and torchvision for the torch rows.

tdl=${1:-build/tdl}
here=$(cd "$(dirname "$0")" && pwd)
dir=$here/roi_align
py=${TORCH_PYTHON:-/usr/bin/python3}
threads="1 2"
crepeats=20         # C loops, each after 2 warm-up runs
repeats=${ROI_REPEATS:-5}
warmup=2
small_repeats=$((repeats * 60))
small_warmup=20
workloads="small maskrcnn maskrcnn_cl adaptive"
big=$((2 * 256 * 200 * 304))        # elements of the big input
small=$((16 * 32 * 32))

if ! "$py" -c 'import numpy' 2>/dev/null; then
    py=python3
    if ! "$py" -c 'import numpy' 2>/dev/null; then
        echo "roi_align.sh: needs a python3 with numpy to write the inputs" >&2
        exit 2
    fi
fi
case $tdl in /*) ;; *) tdl=$(pwd)/$tdl ;; esac
# the vision module of this checkout, whichever tdl runs it
TDL_PATH=$(cd "$here/../stdlib" && pwd)
export TDL_PATH

tmp=$(mktemp -d "${TMPDIR:-/tmp}/tdl-roi.XXXXXX") || exit 2
trap 'rm -rf "$tmp"' EXIT
trap 'rm -rf "$tmp"; exit 130' INT TERM

# ---- inputs and the C program ----
if ! "$py" "$dir/make_data.py" "$tmp" 2>"$tmp/err"; then
    echo "roi_align.sh: writing the inputs failed:" >&2
    cat "$tmp/err" >&2
    exit 2
fi
if ! ${CC:-cc} -O3 -march=native -fopenmp -o "$tmp/bw" "$here/common/bw.c" -lm 2>"$tmp/err"; then
    echo "roi_align.sh: cannot build bw.c with ${CC:-cc} -fopenmp:" >&2
    cat "$tmp/err" >&2
    exit 1
fi

# one-line error text of file $1 (its last line naming an error, else its last non-empty line;
# shortened): tdl's report ends with the message, or with the source line and a caret under it
errline() {
    awk 'NF { l = $0 } /Error: / { e = $0 } END { if (e != "") l = e; print substr(l, 1, 100) }' "$1"
}

# the line of ref.txt that checks workload $1
refname() {
    case $1 in maskrcnn_cl) echo maskrcnn ;; *) echo "$1" ;; esac
}

# field $2 of workload $1's line in ref.txt (3: SCALE, 4: IN_TAPS, 5: IN_ALL, 6: OUT_BYTES)
ref() {
    awk -v w="$(refname "$1")" -v f="$2" '$1 == w { print $f }' "$tmp/ref.txt"
}

# bytes workload $1 must move: the input elements read, the boxes and the result
bytes() {
    case $1 in small) k=32 ;; *) k=512 ;; esac
    echo $(($(ref "$1" 4) * 4 + k * 5 * 4 + $(ref "$1" 6)))
}

# peak RSS in KiB of the command "$@" (stdout and stderr discarded), or "failed"
peak_rss() {
    "$py" -c 'import resource, subprocess, sys
r = subprocess.run(sys.argv[1:], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL).returncode
print(resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss if r == 0 else "failed")' "$@"
}

# ---- machine ----
cpu=$(awk -F': *' '/^model name/ { print $2; exit }' /proc/cpuinfo 2>/dev/null)
[ -n "$cpu" ] || cpu=$(uname -m)
echo "tdl roi_align benchmark: vision.roi_align vs torchvision.ops.roi_align, float32"
awk -v big=$big '$1 == "small" { printf "small: 1 x 16 x 32 x 32, 32 boxes, 7x7, sampling_ratio 2; %d input elements read, result %d bytes\n", $4, $6 }
    $1 == "maskrcnn" { printf "maskrcnn: 2 x 256 x 200 x 304 (%.1f MB), 512 boxes, 7x7, sampling_ratio 2, aligned; %d input elements read (%.0f%%), result %.1f MB\n", big * 4 / 1e6, $4, 100 * $4 / big, $6 / 1e6 }
    $1 == "adaptive" { printf "adaptive: as maskrcnn, 14x14, sampling_ratio 0; %d input elements read (%.0f%%), result %.1f MB\n", $4, 100 * $4 / big, $6 / 1e6 }' "$tmp/ref.txt"
echo "machine: $cpu, nproc $(nproc 2>/dev/null || echo '?')"
torchver=$("$py" -c 'import torch, torchvision; print(torch.__version__, "torchvision", torchvision.__version__)' 2>/dev/null) || torchver=
echo "torch: ${torchver:-not found}   tdl: $tdl ($("$tdl" --version 2>/dev/null || echo 'not runnable'))"
echo "C: best of $crepeats after 2 warm-up runs; torch and tdl: best of $repeats after $warmup warm-up" \
    "evaluations (small: $small_repeats after $small_warmup)"
echo "/bound: time / the bytes moved at the C copy's bandwidth; /torch: time / torch's time"
echo

# ---- runs ----
status=0
# row T WORKLOAD WHAT SECONDS Y|-, or row T WORKLOAD WHAT failed ERROR: one table row; reads
# $bound and $torch_t (torch's seconds for this workload, or empty).
row() {
    if [ "$4" = failed ]; then
        printf '%-2s %-12s %-6s %s\n' "$1" "$2" "$3" "failed: $5"
        return
    fi
    check=$(awk -v y="$5" -v w="$(refname "$2")" '$1 == w { r = $2; s = $3 } END {
        if (y == "-") { print "-"; exit }
        d = y - r; if (d < 0) d = -d
        if (d <= 1e-5 * s) printf "ok (y = %.6g, err %.1e)", y, d / s
        else printf "WRONG: y = %.9g, want %.9g", y, r }' "$tmp/ref.txt")
    case $check in WRONG*) status=1 ;; esac
    awk -v T="$1" -v w="$2" -v what="$3" -v t="$4" -v b="$bound" -v tt="$torch_t" -v bytes="$(bytes "$2")" \
        -v check="$check" 'BEGIN {
        rb = (b == "") ? "-" : sprintf("%.2fx", t / b)
        rt = (tt == "") ? "-" : sprintf("%.2fx", t / tt)
        printf "%-2s %-12s %-6s %10.6f %8.1f %8s %8s   %s\n", T, w, what, t, bytes / t / 1e9, rb, rt, check }'
}

printf '%-2s %-12s %-6s %10s %8s %8s %8s   %s\n' T workload what "s/run" "GB/s" "/bound" "/torch" result
for T in $threads; do
    if ! OMP_NUM_THREADS=$T "$tmp/bw" $big $crepeats >"$tmp/cbig.out" 2>"$tmp/err" ||
       ! OMP_NUM_THREADS=$T "$tmp/bw" $small $((crepeats * 100)) >"$tmp/csmall.out" 2>"$tmp/err"; then
        echo "roi_align.sh: bw failed: $(errline "$tmp/err")" >&2
        exit 1
    fi
    # each writes one line per workload that it finished ("NAME SECONDS Y")
    : >"$tmp/t.out"
    : >"$tmp/l.out"
    : >"$tmp/terr"
    if [ -n "$torchver" ]; then
        "$py" "$dir/torch_roi_align.py" "$tmp" "$T" $small_repeats $small_warmup small >"$tmp/t.out" 2>"$tmp/terr"
        "$py" "$dir/torch_roi_align.py" "$tmp" "$T" "$repeats" $warmup maskrcnn,maskrcnn_cl,adaptive \
            >>"$tmp/t.out" 2>>"$tmp/terr"
    fi
    # tdl: one process per workload, so that one that fails leaves the others' rows
    if [ -x "$tdl" ]; then
        for w in $workloads; do
            case $w in small) r=$small_repeats u=$small_warmup ;; *) r=$repeats u=$warmup ;; esac
            TDL_NUM_THREADS=$T "$tdl" "$dir/roi_align.tdl" "$tmp" "$r" $u "$w" >>"$tmp/l.out" 2>"$tmp/lerr.$w"
        done
    fi
    for w in $workloads; do
        case $w in small) c=csmall ;; *) c=cbig ;; esac
        gbps=$(awk '$1 == "copy" { print $3 }' "$tmp/$c.out")
        bound=$(awk -v b="$(bytes "$w")" -v g="$gbps" 'BEGIN { printf "%.9f", b / (g * 1e9) }')
        torch_t=
        row "$T" "$w" bound "$bound" -
        torch_t=$(awk -v w="$w" '$1 == w { print $2 }' "$tmp/t.out")
        if [ -n "$torch_t" ]; then
            row "$T" "$w" torch "$torch_t" "$(awk -v w="$w" '$1 == w { print $3 }' "$tmp/t.out")"
        elif [ -n "$torchver" ]; then
            row "$T" "$w" torch failed "$(errline "$tmp/terr")"
        else
            row "$T" "$w" torch failed "no torch and torchvision in $py"
        fi
        tdl_t=$(awk -v w="$w" '$1 == w { print $2 }' "$tmp/l.out")
        if [ -n "$tdl_t" ]; then
            row "$T" "$w" tdl "$tdl_t" "$(awk -v w="$w" '$1 == w { print $3 }' "$tmp/l.out")"
        elif [ ! -x "$tdl" ]; then
            row "$T" "$w" tdl failed "no tdl binary at $tdl (run make first)"
        else
            row "$T" "$w" tdl failed "$(errline "$tmp/lerr.$w")"
        fi
    done
done

# ---- peak memory ----
echo
echo "peak RSS of tdl, one process per workload (input made with rand(), one evaluation); MiB"
printf '%-2s %-12s %10s %10s %10s %12s %10s\n' T workload "in+out" peak "/(in+out)" "peak-input" out
[ -x "$tdl" ] && for T in $threads; do
    base=$(TDL_NUM_THREADS=$T peak_rss "$tdl" "$dir/roi_align.tdl" "$tmp" 1 0 input rss)
    awk -v T=$T -v p="$base" -v n=$big 'BEGIN {
        if (p == "failed") printf "%-2s %-12s failed\n", T, "input"
        else printf "%-2s %-12s %10.1f %10.1f %10.2f %12s %10s\n", T, "input", n * 4 / 1048576, p / 1024, p * 1024 / (n * 4), "-", "-" }'
    for w in $workloads; do
        p=$(TDL_NUM_THREADS=$T peak_rss "$tdl" "$dir/roi_align.tdl" "$tmp" 1 0 "$w" rss)
        case $w in small) n=$small ;; *) n=$big ;; esac
        awk -v T=$T -v w="$w" -v p="$p" -v b="$base" -v n=$n -v out="$(ref "$w" 6)" 'BEGIN {
            if (p == "failed") { printf "%-2s %-12s failed (run it: tdl bench/roi_align/roi_align.tdl DIR 1 0 %s rss)\n", T, w, w; exit }
            io = n * 4 + out
            over = (w == "small" || b == "failed") ? "-" : sprintf("%.1f", (p - b) / 1024)
            printf "%-2s %-12s %10.1f %10.1f %10.2f %12s %10.1f\n", T, w, io / 1048576, p / 1024, p * 1024 / io, over, out / 1048576 }'
    done
done
exit $status
