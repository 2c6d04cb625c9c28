#!/bin/sh
# host.sh — the host-language benchmark: tdl against python3 on the same programs.
#
# usage: sh bench/host.sh [path/to/tdl]        (make bench runs it with build/tdl)
#
# Each workload in bench/host/*.tdl is written in the common subset of tdl and Python, so both
# interpreters run the very same file. For each one this takes the best of 3 wall-clock times for
# tdl and for python3, prints their ratio (tdl time / python3 time: below 1 means tdl is faster),
# and checks that both printed the same result. Then the host cost per call of small tensor ops
# (bench/host/op_call.tdl, 1000-element tensors, loops of 1000 calls) against PyTorch eager on
# the CPU (op_call.py, with $TORCH_PYTHON, default /usr/bin/python3), both on one thread: the
# best of 20 loops' microseconds per call, and their ratio. Exit status 1 when a run fails or
# the results differ. POSIX sh plus date +%s%N (GNU coreutils) and awk.

tdl=${1:-build/tdl}
dir=$(dirname "$0")/host
runs=3
workloads="fib loop closure"

case $(date +%N) in
    ''|*[!0-9]*) echo "host.sh: needs a date that knows +%N (GNU coreutils)" >&2; exit 2 ;;
esac
if [ ! -x "$tdl" ]; then
    echo "host.sh: no tdl binary at $tdl (run make first)" >&2
    exit 2
fi
py=python3
command -v "$py" >/dev/null 2>&1 || py=

err=${TMPDIR:-/tmp}/tdl-bench.$$
trap 'rm -f "$err"' EXIT
trap 'rm -f "$err"; exit 130' INT TERM

# best PROGRAM FILE: runs it $runs times; sets $best (nanoseconds, of the fastest run) and $out
# (what the last run printed), or $best=FAIL (with the error on stderr) when a run fails.
best() {
    best=
    k=0
    while [ $k -lt $runs ]; do
        t0=$(date +%s%N)
        if ! out=$("$1" "$2" 2>"$err"); then
            echo "host.sh: $1 $2 failed:" >&2
            cat "$err" >&2
            best=FAIL
            return
        fi
        t1=$(date +%s%N)
        dt=$((t1 - t0))
        if [ -z "$best" ] || [ $dt -lt $best ]; then
            best=$dt
        fi
        k=$((k + 1))
    done
}

# secs NS: nanoseconds as seconds with 3 decimals (or FAIL as it is).
secs() {
    case $1 in
        FAIL|-) echo "$1" ;;
        *) awk -v ns="$1" 'BEGIN { printf "%.3f", ns / 1e9 }' ;;
    esac
}

echo "tdl host benchmark: best of $runs wall-clock runs, ratio = tdl / python3"
pyver="not found (tdl times only)"
[ -n "$py" ] && pyver=$("$py" --version 2>&1)
echo "tdl: $tdl ($("$tdl" --version 2>/dev/null))   python3: $pyver"
echo
printf '%-10s %10s %12s %8s   %s\n' workload "tdl (s)" "python3 (s)" ratio result
status=0
for w in $workloads; do
    f=$dir/$w.tdl
    best "$tdl" "$f"
    tbest=$best
    tout=$out
    pbest=-
    pout=
    if [ -n "$py" ]; then
        best "$py" "$f"
        pbest=$best
        pout=$out
    fi
    if [ "$tbest" = FAIL ] || [ "$pbest" = FAIL ]; then
        ratio=-
        result=FAILED
        status=1
    else
        if [ "$pbest" = - ]; then
            ratio=-
        else
            ratio=$(awk -v a="$tbest" -v b="$pbest" 'BEGIN { printf "%.2fx", a / b }')
        fi
        result=$(printf '%s' "$tout" | tr '\n' ' ')
        if [ -z "$py" ]; then
            result="$result(unchecked)"
        elif [ "$tout" = "$pout" ]; then
            result="same: $result"
        else
            result="DIFFERENT: tdl printed $result; python3 printed $(printf '%s' "$pout" | tr '\n' ' ')"
            status=1
        fi
    fi
    printf '%-10s %10s %12s %8s   %s\n' "$w" "$(secs "$tbest")" "$(secs "$pbest")" "$ratio" "$result"
done

echo
echo "host cost per call of small tensor ops (1000 float32 elements, one thread), ratio = tdl / torch"
tp=${TORCH_PYTHON:-/usr/bin/python3}
if ! tcalls=$(TDL_NUM_THREADS=1 "$tdl" "$dir/op_call.tdl" 2>"$err"); then
    echo "host.sh: $tdl $dir/op_call.tdl failed:" >&2
    cat "$err" >&2
    exit 1
fi
pcalls=$("$tp" "$dir/op_call.py" 2>/dev/null) || pcalls=
[ -n "$pcalls" ] || echo "(no torch at $tp: tdl's times only)"
printf '%s\n--\n%s\n' "$pcalls" "$tcalls" | awk '
    $0 == "--" { tdl = 1; next }
    !tdl { torch[$1] = $2; next }
    { t = torch[$1]; printf "%-16s %8s us  torch %8s us  %s\n", $1, $2, t == "" ? "-" : t,
                            t == "" ? "" : sprintf("%.2fx", $2 / t) }'
exit $status
