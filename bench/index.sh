#!/bin/sh
# index.sh — the indexing benchmark: gathers, scatters and masks on float32 data in memory,
# tdl against PyTorch and against the memory bound.
#
# usage: sh bench/index.sh [path/to/tdl]        (make bench runs it with build/tdl)
#
# Workloads (x: R x C float32; idx: a permutation of x's rows; j, jz: N = R * C / 4 random
# int64, jz into M = N slots, with duplicates; v: N float32; z: zeros, allocated once and
# zeroed before each timed run):
#   gather_rows     (x[idx] * 2 + 1).sum()                    reads x and idx
#   gather_elems    x.reshape(-1)[j].sum()                    reads j and N elements of x
#   scatter_rows    z[idx] = x                                reads x and idx, writes z
#   index_put_acc   z.index_put_((jz,), v, accumulate=True)   reads jz and v, reads and writes z (M)
#   mask_select     x[x > 0].sum()                            reads x
# For T = 1 and T = 2 threads it prints, for each workload, seconds per run of:
#   bound   the bytes the workload must move (the column above) at the bandwidth of a C loop,
#           STREAM-style (bench/common/bw.c; cc -O3 -march=native -fopenmp, OMP_NUM_THREADS=T):
#           a sum over an array for the workloads that only read, a copy for those that write.
#           Random accesses (gather_elems, index_put_acc) fetch whole cache lines, so their
#           bound is one no implementation reaches.
#   torch   PyTorch eager (/usr/bin/python3), torch.set_num_threads(T)
#   tdl     bench/index/index.tdl, TDL_NUM_THREADS=T
# with GB/s (those bytes / time), the ratio to the bound and to torch (time / time: above 1 is
# slower), and whether the result agrees with a reference computed in double by make_data.py
# (tolerance 1e-5 x the sum of |terms|; writes are checked through weighted sums of z).
# Every timing is the best of several after warm-up; torch and tdl time themselves
# (time.perf_counter(), perf_counter()).
# Sizes: x is 4096 x 1024, 16 MiB: on the 2-core VM this was written on (32 MiB of L3) the
# inputs stay in cache, and the bound is the cache's bandwidth. INDEX_ROWS=16384 gives 64 MiB,
# read from memory; but glibc hands each freed block over 32 MiB back to the kernel, so every
# intermediate torch allocates at that size pays its page faults again (x * 2 took 31 ms at
# 64 MiB, 1 ms at 16 MiB), and torch's rows then mostly time those.
#
# Exit status: 1 when a result is WRONG or the C bound cannot be built; a tdl or torch run that
# fails is reported on its rows ("failed: <error>") without failing the benchmark, so that make
# bench still reports the other rows. Needs cc with OpenMP, python3 with numpy (for the data),
# POSIX sh and awk.

tdl=${1:-build/tdl}
here=$(cd "$(dirname "$0")" && pwd)
dir=$here/index
py=${TORCH_PYTHON:-/usr/bin/python3}
R=${INDEX_ROWS:-4096}
C=1024
N=$((R * 256))
M=$N
threads="1 2"
crepeats=20         # C loops, each after 2 warm-up runs
trepeats=10         # torch and tdl, each after 3 warm-up runs
workloads="gather_rows gather_elems scatter_rows index_put_acc mask_select"

if ! "$py" -c 'import numpy' 2>/dev/null; then
    py=python3
    if ! "$py" -c 'import numpy' 2>/dev/null; then
        echo "index.sh: needs a python3 with numpy to write the inputs" >&2
        exit 2
    fi
fi
case $tdl in /*) ;; *) tdl=$(pwd)/$tdl ;; esac

tmp=$(mktemp -d "${TMPDIR:-/tmp}/tdl-index.XXXXXX") || exit 2
trap 'rm -rf "$tmp"' EXIT
trap 'rm -rf "$tmp"; exit 130' INT TERM

# ---- inputs and the C program ----
if ! "$py" "$dir/make_data.py" "$tmp" "$R" $C $N $M 2>"$tmp/err"; then
    echo "index.sh: writing the inputs failed:" >&2
    cat "$tmp/err" >&2
    exit 2
fi
if ! ${CC:-cc} -O3 -march=native -fopenmp -o "$tmp/bw" "$here/common/bw.c" -lm 2>"$tmp/err"; then
    echo "index.sh: cannot build bw.c with ${CC:-cc} -fopenmp:" >&2
    cat "$tmp/err" >&2
    exit 1
fi

# one-line error text of file $1 (its last non-empty line, shortened)
errline() {
    awk 'NF { l = $0 } END { print substr(l, 1, 100) }' "$1"
}

# bytes workload $1 must move, and the bandwidth (read or copy) that bounds it
bytes() {
    case $1 in
    gather_rows) echo $((R * C * 4 + R * 8)) ;;
    gather_elems) echo $((N * 8 + N * 4)) ;;
    scatter_rows) echo $((2 * R * C * 4 + R * 8)) ;;
    index_put_acc) echo $((N * 8 + N * 4 + 2 * M * 4)) ;;
    mask_select) echo $((R * C * 4)) ;;
    esac
}
bwkind() {
    case $1 in scatter_rows | index_put_acc) echo copy ;; *) echo read ;; esac
}

# ---- machine ----
cpu=$(awk -F': *' '/^model name/ { print $2; exit }' /proc/cpuinfo 2>/dev/null)
[ -n "$cpu" ] || cpu=$(uname -m)
echo "tdl index benchmark: x $R x $C float32 ($((R * C * 4 >> 20)) MiB), idx $R rows,"
echo "j and jz $N int64, z of index_put_ $M float32"
echo "machine: $cpu, nproc $(nproc 2>/dev/null || echo '?')"
torchver=$("$py" -c 'import torch; print(torch.__version__)' 2>/dev/null) || torchver=
echo "torch: ${torchver:-not found}   tdl: $tdl ($("$tdl" --version 2>/dev/null || echo 'not runnable'))"
echo "C: best of $crepeats after 2 warm-up runs; torch and tdl: best of $trepeats after 3 warm-up runs"
echo "/bound: time / the bytes moved at the C loop's bandwidth; /torch: time / torch's time"
echo

# ---- runs ----
status=0
# row T WORKLOAD WHAT SECONDS Y|-, or row T WORKLOAD WHAT failed ERROR: one table row; reads
# $bound and $torch_t (torch's seconds for this workload, or empty).
row() {
    if [ "$4" = failed ]; then
        printf '%-2s %-14s %-6s %s\n' "$1" "$2" "$3" "failed: $5"
        return
    fi
    check=$(awk -v y="$5" -v w="$2" '$1 == w { r = $2; s = $3 } END {
        if (y == "-") { print "-"; exit }
        d = y - r; if (d < 0) d = -d
        if (d <= 1e-5 * s) printf "ok (y = %.6g)", y; else printf "WRONG: y = %.9g, want %.9g", y, r }' "$tmp/ref.txt")
    case $check in WRONG*) status=1 ;; esac
    awk -v T="$1" -v w="$2" -v what="$3" -v t="$4" -v b="$bound" -v tt="$torch_t" -v bytes="$(bytes "$2")" \
        -v check="$check" 'BEGIN {
        rb = (b == "") ? "-" : sprintf("%.2fx", t / b)
        rt = (tt == "") ? "-" : sprintf("%.2fx", t / tt)
        printf "%-2s %-14s %-6s %10.5f %8.1f %8s %8s   %s\n", T, w, what, t, bytes / t / 1e9, rb, rt, check }'
}

printf '%-2s %-14s %-6s %10s %8s %8s %8s   %s\n' T workload what "s/run" "GB/s" "/bound" "/torch" result
for T in $threads; do
    if ! OMP_NUM_THREADS=$T "$tmp/bw" $((R * C)) $crepeats >"$tmp/c.out" 2>"$tmp/err"; then
        echo "index.sh: bw failed: $(errline "$tmp/err")" >&2
        exit 1
    fi
    # each writes one line per workload that it finished ("NAME SECONDS Y")
    : >"$tmp/t.out"
    : >"$tmp/l.out"
    [ -n "$torchver" ] && "$py" "$dir/torch_index.py" "$tmp" "$T" $trepeats >"$tmp/t.out" 2>"$tmp/terr"
    [ -x "$tdl" ] && TDL_NUM_THREADS=$T "$tdl" "$dir/index.tdl" "$tmp" $trepeats >"$tmp/l.out" 2>"$tmp/lerr"
    for w in $workloads; do
        gbps=$(awk -v k="$(bwkind "$w")" '$1 == k { print $3 }' "$tmp/c.out")
        bound=$(awk -v b="$(bytes "$w")" -v g="$gbps" 'BEGIN { printf "%.6f", b / (g * 1e9) }')
        torch_t=$(awk -v w="$w" '$1 == w { print $2 }' "$tmp/t.out")
        row "$T" "$w" bound "$bound" -
        if [ -n "$torch_t" ]; then
            row "$T" "$w" torch "$torch_t" "$(awk -v w="$w" '$1 == w { print $3 }' "$tmp/t.out")"
        elif [ -n "$torchver" ]; then
            row "$T" "$w" torch failed "$(errline "$tmp/terr")"
        else
            row "$T" "$w" torch failed "no torch in $py"
        fi
        tdl_t=$(awk -v w="$w" '$1 == w { print $2 }' "$tmp/l.out")
        if [ -n "$tdl_t" ]; then
            row "$T" "$w" tdl "$tdl_t" "$(awk -v w="$w" '$1 == w { print $3 }' "$tmp/l.out")"
        elif [ ! -x "$tdl" ]; then
            row "$T" "$w" tdl failed "no tdl binary at $tdl (run make first)"
        else
            row "$T" "$w" tdl failed "$(errline "$tmp/lerr")"
        fi
    done
done
exit $status
