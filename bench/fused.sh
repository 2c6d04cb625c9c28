#!/bin/sh
# fused.sh — the fused-kernel benchmark: y = where(a > 0, a*b + c, c*0.5).sum() over three
# 2^24-element float32 arrays (64 MiB each, standard normal), against the memory bound.
#
# usage: sh bench/fused.sh [path/to/tdl]        (make bench runs it with build/tdl)
#
# For T = 1 and T = 2 threads it prints, side by side, seconds per evaluation of:
#   STREAM read   a C loop that reads a, b and c once (a sum of a+b+c), STREAM-style: y must read
#                 every input byte once; cc -O3 -march=native -fopenmp, OMP_NUM_THREADS=T
#   C fused       the same expression fused by hand into one C loop (same flags and threads)
# The bound that /STREAM divides by is the faster of those two single passes (on a noisy or
# small machine the hand-fused loop sometimes reads faster than the plain sum).
#   torch         PyTorch eager (/usr/bin/python3), torch.set_num_threads(T)
#   tdl           bench/fused/fused.tdl, TDL_NUM_THREADS=T
# with GB/s (3 x 64 MiB read per evaluation), the ratio to the STREAM bound and to torch (time /
# time: above 1 is slower), and whether y agrees with a reference computed in double (tolerance
# 1e-6 x sum |terms|, which any summation order meets and a wrong kernel does not).
# All four read the same numbers: make_data.py writes them as .npy once; tdl load()s them.
# Every timing is the best of several after warm-up; every result is materialised and printed.
# The C loops, torch and tdl (with perf_counter()) each time themselves.
#
# Exit status: 1 when a result is WRONG or the C bound cannot be built; a tdl or torch run that
# fails is reported on its row ("failed: <error>") without failing the benchmark, so that make
# bench still reports the other rows. Needs cc with OpenMP, python3 with numpy (for the data),
# POSIX sh and awk.

tdl=${1:-build/tdl}
here=$(cd "$(dirname "$0")" && pwd)
dir=$here/fused
py=${TORCH_PYTHON:-/usr/bin/python3}
n=16777216
threads="1 2"
crepeats=50         # C loops, each after 2 warm-up runs
trepeats=10         # torch and tdl, each after 3 warm-up runs

if ! "$py" -c 'import numpy' 2>/dev/null; then
    py=python3
    if ! "$py" -c 'import numpy' 2>/dev/null; then
        echo "fused.sh: needs a python3 with numpy to write the inputs" >&2
        exit 2
    fi
fi
case $tdl in /*) ;; *) tdl=$(pwd)/$tdl ;; esac

tmp=$(mktemp -d "${TMPDIR:-/tmp}/tdl-fused.XXXXXX") || exit 2
trap 'rm -rf "$tmp"' EXIT
trap 'rm -rf "$tmp"; exit 130' INT TERM

# ---- inputs and the C program ----
if ! "$py" "$dir/make_data.py" "$tmp" "$n" 2>"$tmp/err"; then
    echo "fused.sh: writing the inputs failed:" >&2
    cat "$tmp/err" >&2
    exit 2
fi
if ! ${CC:-cc} -O3 -march=native -ffp-contract=off -fopenmp -o "$tmp/stream" "$dir/stream.c" -lm 2>"$tmp/err"; then
    echo "fused.sh: cannot build stream.c with ${CC:-cc} -fopenmp:" >&2
    cat "$tmp/err" >&2
    exit 1
fi

# one-line error text of file $1 (its last non-empty line, shortened)
errline() {
    awk 'NF { l = $0 } END { print substr(l, 1, 100) }' "$1"
}

# ---- machine ----
cpu=$(awk -F': *' '/^model name/ { print $2; exit }' /proc/cpuinfo 2>/dev/null)
[ -n "$cpu" ] || cpu=$(uname -m)
echo "tdl fused benchmark: y = where(a > 0, a*b + c, c*0.5).sum(), a, b, c: $n float32 (3 x 64 MiB)"
echo "machine: $cpu, nproc $(nproc 2>/dev/null || echo '?')"

torchver=$("$py" -c 'import torch; print(torch.__version__)' 2>/dev/null) || torchver=
echo "torch: ${torchver:-not found}   tdl: $tdl ($("$tdl" --version 2>/dev/null || echo 'not runnable'))"

echo "C: best of $crepeats after 2 warm-up runs; torch and tdl: best of $trepeats after 3 warm-up evaluations"
echo "/STREAM: time / the faster of the two C passes (the memory bound); /torch: time / torch's time"
echo

# ---- runs ----
status=0
ref=
sumabs=
# row T NAME SECONDS Y|-: prints one table row; reads $bound and $torch_t of this T.
row() {
    if [ "$3" = failed ]; then
        printf '%-2s %-13s %s\n' "$1" "$2" "failed: $4"
        return
    fi
    check=$(awk -v y="$4" -v r="$ref" -v s="$sumabs" 'BEGIN {
        if (y == "-") { print "-"; exit }
        d = y - r; if (d < 0) d = -d
        if (d <= 1e-6 * s) printf "ok (y = %.6g)", y; else printf "WRONG: y = %.9g, want %.9g", y, r }')
    case $check in WRONG*) status=1 ;; esac
    awk -v T="$1" -v name="$2" -v t="$3" -v b="$bound" -v tt="$torch_t" -v n="$n" -v check="$check" 'BEGIN {
        gbs = 3 * 4 * n / t / 1e9
        rs = (b == "") ? "-" : sprintf("%.2fx", t / b)
        rt = (tt == "") ? "-" : sprintf("%.2fx", t / tt)
        printf "%-2s %-13s %10.5f %8.1f %9s %9s   %s\n", T, name, t, gbs, rs, rt, check }'
}

printf '%-2s %-13s %10s %8s %9s %9s   %s\n' T what "s/eval" "GB/s" "/STREAM" "/torch" result
for T in $threads; do
    bound=
    torch_t=
    # C: the bound and the hand-fused loop
    if OMP_NUM_THREADS=$T "$tmp/stream" "$tmp/a.npy" "$tmp/b.npy" "$tmp/c.npy" \
        $crepeats >"$tmp/c.out" 2>"$tmp/err"; then
        ref=$(awk '$1 == "ref" { print $2 }' "$tmp/c.out")
        sumabs=$(awk '$1 == "ref" { print $3 }' "$tmp/c.out")
        read_t=$(awk '$1 == "read" { print $2 }' "$tmp/c.out")
        fused_t=$(awk '$1 == "fused" { print $2 }' "$tmp/c.out")
        bound=$(awk -v r="$read_t" -v f="$fused_t" 'BEGIN { print (f < r) ? f : r }')
        fused_y=$(awk '$1 == "fused" { print $4 }' "$tmp/c.out")
    else
        echo "fused.sh: stream failed: $(errline "$tmp/err")" >&2
        exit 1
    fi
    # torch
    if [ -n "$torchver" ] && "$py" "$dir/torch_fused.py" "$tmp" "$T" $trepeats >"$tmp/t.out" 2>"$tmp/err"; then
        torch_t=$(awk '{ print $1 }' "$tmp/t.out")
        torch_y=$(awk '{ print $2 }' "$tmp/t.out")
    fi
    row "$T" "STREAM read" "$read_t" -
    row "$T" "C fused" "$fused_t" "$fused_y"
    if [ -n "$torch_t" ]; then
        row "$T" torch "$torch_t" "$torch_y"
    elif [ -n "$torchver" ]; then
        row "$T" torch failed "$(errline "$tmp/err")"
    else
        row "$T" torch failed "no torch in $py"
    fi
    # tdl
    if [ ! -x "$tdl" ]; then
        row "$T" tdl failed "no tdl binary at $tdl (run make first)"
    elif TDL_NUM_THREADS=$T OMP_NUM_THREADS=$T "$tdl" "$dir/fused.tdl" "$tmp" $trepeats \
        >"$tmp/l.out" 2>"$tmp/err"; then
        row "$T" tdl "$(awk '{ print $1 }' "$tmp/l.out")" "$(awk '{ print $2 }' "$tmp/l.out")"
    else
        row "$T" tdl failed "$(errline "$tmp/err")"
    fi
done
exit $status
