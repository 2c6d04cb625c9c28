#!/bin/sh
# sched.sh — the scheduler benchmark: a softmax (a reduction broadcast back into a pointwise
# kernel) and a product-sum contraction written with first-class dims, tdl against PyTorch.
#
# usage: sh bench/sched.sh [path/to/tdl]        (make bench runs it with build/tdl)
#
# Workloads (x: R x C float32, A and B: N x N float32, all standard normal):
#   softmax    softmax over the last dim: tdl x.softmax(-1), torch torch.softmax(x, 1)
#   contract   C = A B: tdl `(A[i, k] * B[k, j]).sum(k).order(i, j)` with i, j, k = dims(3)
#              ("tdl dims") and tdl's positional A @ B ("tdl @"); torch A @ B
# For T = 1 and T = 2 threads it prints, for each workload, seconds per evaluation of:
#   bound      softmax only: the bytes it must move (read x once, write y once: 2 x R x C x 4) at
#              the bandwidth of a C copy or scale loop over arrays of that size, STREAM-style
#              (bench/common/bw.c; cc -O3 -march=native -fopenmp, OMP_NUM_THREADS=T; the faster
#              of the two). Softmax also computes an exp per element, which on a small machine
#              costs more than the bytes: no implementation is expected near this bound.
#   torch      PyTorch eager (/usr/bin/python3), torch.set_num_threads(T)
#   tdl        bench/sched/sched.tdl, TDL_NUM_THREADS=T
# with the rate (softmax: GB/s of those bytes; contract: GFLOP/s, 2 N^3 flops), the ratio to the
# bound and to torch (time / time: above 1 is slower), and whether the result agrees with a
# reference computed in double by make_data.py. The check is a checksum v^T result w with random
# float64 weights v and w, computed in double after the clock stops; it must agree within
# 1e-5 (softmax) or 1e-4 (contract) x the 2-norm of its terms, the size by which a value in a
# wrong place moves it (see make_data.py).
# Every timing is the best of several after warm-up; torch and tdl time themselves
# (time.perf_counter(), perf_counter()); each tdl evaluation is realised in full (stride()).
# Notes: y and C are fresh allocations in torch on every evaluation; at 64 MiB (over glibc's
# largest mmap threshold, 32 MiB) each one is a new mapping whose page faults are in torch's
# softmax time (about half of it at T = 1 on the 2-core VM this was written on). Debian's
# python3-torch does A @ B with the BLAS that libblas.so.3 points at (the header prints torch's
# BLAS_INFO, "generic" whichever it is): netlib's reference BLAS unless an optimised one such as
# libopenblas0-pthread is installed, which then takes over; torch runs with OMP_NUM_THREADS and
# OPENBLAS_NUM_THREADS set to T, so that such a BLAS uses T threads too.
#
# Exit status: 1 when a result is WRONG or the C bound cannot be built; a tdl or torch run that
# fails is reported on its rows ("failed: <error>") without failing the benchmark, so that make
# bench still reports the other rows. Needs cc with OpenMP, python3 with numpy (for the data),
# POSIX sh and awk.

tdl=${1:-build/tdl}
here=$(cd "$(dirname "$0")" && pwd)
dir=$here/sched
py=${TORCH_PYTHON:-/usr/bin/python3}
R=4096
C=4096
N=1024
threads="1 2"
crepeats=20         # C loops, each after 2 warm-up runs
trepeats=10         # torch and tdl, each after 3 warm-up evaluations

if ! "$py" -c 'import numpy' 2>/dev/null; then
    py=python3
    if ! "$py" -c 'import numpy' 2>/dev/null; then
        echo "sched.sh: needs a python3 with numpy to write the inputs" >&2
        exit 2
    fi
fi
case $tdl in /*) ;; *) tdl=$(pwd)/$tdl ;; esac

tmp=$(mktemp -d "${TMPDIR:-/tmp}/tdl-sched.XXXXXX") || exit 2
trap 'rm -rf "$tmp"' EXIT
trap 'rm -rf "$tmp"; exit 130' INT TERM

# ---- inputs and the C program ----
if ! "$py" "$dir/make_data.py" "$tmp" $R $C $N 2>"$tmp/err"; then
    echo "sched.sh: writing the inputs failed:" >&2
    cat "$tmp/err" >&2
    exit 2
fi
if ! ${CC:-cc} -O3 -march=native -fopenmp -o "$tmp/bw" "$here/common/bw.c" -lm 2>"$tmp/err"; then
    echo "sched.sh: cannot build bw.c with ${CC:-cc} -fopenmp:" >&2
    cat "$tmp/err" >&2
    exit 1
fi

# one-line error text of file $1 (its last non-empty line, shortened)
errline() {
    awk 'NF { l = $0 } END { print substr(l, 1, 100) }' "$1"
}

# the checksum tolerance of workload $1, relative to the 2-norm of its terms
tolerance() {
    case $1 in softmax) echo 1e-5 ;; *) echo 1e-4 ;; esac
}

# ---- machine ----
cpu=$(awk -F': *' '/^model name/ { print $2; exit }' /proc/cpuinfo 2>/dev/null)
[ -n "$cpu" ] || cpu=$(uname -m)
echo "tdl scheduler benchmark: softmax(x, -1) of x $R x $C float32 ($((R * C * 4 >> 20)) MiB),"
echo "contraction (A[i, k] * B[k, j]).sum(k) of A, B $N x $N float32"
echo "machine: $cpu, nproc $(nproc 2>/dev/null || echo '?')"
torchver=$("$py" -c 'import re, torch
m = re.search(r"BLAS_INFO=([^,\s]*)", torch.__config__.show())
print(torch.__version__, "BLAS_INFO=" + (m.group(1) if m else "?"))' 2>/dev/null) || torchver=
echo "torch: ${torchver:-not found}   tdl: $tdl ($("$tdl" --version 2>/dev/null || echo 'not runnable'))"
echo "C: best of $crepeats after 2 warm-up runs; torch and tdl: best of $trepeats after 3 warm-up evaluations"
echo "/bound: time / the bytes moved at the C copy's bandwidth; /torch: time / torch's time"
echo

# ---- runs ----
status=0
# row T WORKLOAD WHAT SECONDS Y|-, or row T WORKLOAD WHAT failed ERROR: one table row; reads
# $bound (softmax's, or empty) and $torch_t (torch's seconds for this workload, or empty).
row() {
    if [ "$4" = failed ]; then
        printf '%-2s %-9s %-9s %s\n' "$1" "$2" "$3" "failed: $5"
        return
    fi
    check=$(awk -v y="$5" -v w="$2" -v tol="$(tolerance "$2")" '$1 == w { r = $2; s = $3 } END {
        if (y == "-") { print "-"; exit }
        d = y - r; if (d < 0) d = -d
        if (d <= tol * s) printf "ok (y = %.6g, err %.1e)", y, d / s
        else printf "WRONG: y = %.9g, want %.9g", y, r }' "$tmp/ref.txt")
    case $check in WRONG*) status=1 ;; esac
    awk -v T="$1" -v w="$2" -v what="$3" -v t="$4" -v b="$bound" -v tt="$torch_t" \
        -v R=$R -v C=$C -v N=$N -v check="$check" 'BEGIN {
        if (w == "softmax") { rate = 2 * R * C * 4 / t / 1e9; unit = "GB/s" }
        else { rate = 2 * N * N * N / t / 1e9; unit = "GFLOP/s" }
        rb = (b == "") ? "-" : sprintf("%.2fx", t / b)
        rt = (tt == "") ? "-" : sprintf("%.2fx", t / tt)
        printf "%-2s %-9s %-9s %10.5f %7.1f %-7s %8s %8s   %s\n", T, w, what, t, rate, unit, rb, rt, check }'
}

# tdlrows T WORKLOAD WHAT NAME: the row of tdl's line NAME, or why it is missing
tdlrows() {
    tdl_t=$(awk -v n="$4" '$1 == n { print $2 }' "$tmp/l.out")
    if [ -n "$tdl_t" ]; then
        row "$1" "$2" "$3" "$tdl_t" "$(awk -v n="$4" '$1 == n { print $3 }' "$tmp/l.out")"
    elif [ ! -x "$tdl" ]; then
        row "$1" "$2" "$3" failed "no tdl binary at $tdl (run make first)"
    else
        row "$1" "$2" "$3" failed "$(errline "$tmp/lerr.$4")"
    fi
}

# torchrow T WORKLOAD: torch's row for WORKLOAD (sets $torch_t), or why it is missing
torchrow() {
    torch_t=$(awk -v w="$2" '$1 == w { print $2 }' "$tmp/t.out")
    if [ -n "$torch_t" ]; then
        row "$1" "$2" torch "$torch_t" "$(awk -v w="$2" '$1 == w { print $3 }' "$tmp/t.out")"
    elif [ -n "$torchver" ]; then
        row "$1" "$2" torch failed "$(errline "$tmp/terr")"
    else
        row "$1" "$2" torch failed "no torch in $py"
    fi
}

printf '%-2s %-9s %-9s %10s %15s %8s %8s   %s\n' T workload what "s/run" "rate" "/bound" "/torch" result
for T in $threads; do
    if ! OMP_NUM_THREADS=$T "$tmp/bw" $((R * C)) $crepeats >"$tmp/c.out" 2>"$tmp/err"; then
        echo "sched.sh: bw failed: $(errline "$tmp/err")" >&2
        exit 1
    fi
    # each writes one line per workload that it finished ("NAME SECONDS Y")
    : >"$tmp/t.out"
    : >"$tmp/l.out"
    : >"$tmp/terr"
    [ -n "$torchver" ] && OMP_NUM_THREADS=$T OPENBLAS_NUM_THREADS=$T "$py" "$dir/torch_sched.py" "$tmp" "$T" $trepeats >"$tmp/t.out" 2>"$tmp/terr"
    # tdl: one process per workload, so that one that fails leaves the others' rows
    if [ -x "$tdl" ]; then
        for name in softmax contract_dims contract_matmul; do
            TDL_NUM_THREADS=$T "$tdl" "$dir/sched.tdl" "$tmp" $trepeats $name >>"$tmp/l.out" 2>"$tmp/lerr.$name"
        done
    fi

    # softmax: read x once and write y once, at the faster of copy and scale (same bytes)
    bound=$(awk '$1 == "copy" || $1 == "scale" { if (b == "" || $2 < b) b = $2 } END { print b }' "$tmp/c.out")
    torch_t=
    row "$T" softmax bound "$bound" -
    torchrow "$T" softmax
    tdlrows "$T" softmax tdl softmax

    # contract: no bound row
    bound=
    torch_t=
    torchrow "$T" contract
    tdlrows "$T" contract "tdl dims" contract_dims
    tdlrows "$T" contract "tdl @" contract_matmul
done
exit $status
