#!/bin/sh
# test_sigint.sh — Ctrl-C in a batch run: SIGINT stops the script with a KeyboardInterrupt whose
# traceback names the script's file:line:col, and tdl exits with status 130 (128 + SIGINT), in a
# plain loop, in a loop of calls and in a loop of tensor computations. A SIGINT that the parent
# ignores stays ignored (as in CPython).
#
# usage: sh tests/test_sigint.sh path/to/tdl
set -u
tdl=$(cd "$(dirname "$1")" && pwd)/$(basename "$1")
# A shell script's background jobs start with SIGINT ignored; GNU env can undo that.
if ! env --default-signal=INT true 2>/dev/null; then
    echo "sigint: skipped (env --default-signal is missing)"
    exit 0
fi
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
fail=0

# stop PID: SIGINT to PID, then its exit status in $code; a process that outlives a few seconds
# is killed (status 137) rather than left to hang the suite.
stop() {
    kill -INT "$1"
    (sleep 10; kill -KILL "$1" 2>/dev/null) &
    dog=$!
    wait "$1"
    code=$?
    kill "$dog" 2>/dev/null
    wait "$dog" 2>/dev/null
}

# run NAME LINE SCRIPT: runs SCRIPT as NAME.tdl, sends SIGINT once it printed "started", and checks
# the status and that stderr ends with the KeyboardInterrupt at NAME.tdl:LINE.
run() {
    printf '%s\n' "$3" > "$tmp/$1.tdl"
    (cd "$tmp" && exec env --default-signal=INT "$tdl" "$1.tdl") > "$tmp/$1.out" 2> "$tmp/$1.err" &
    pid=$!
    i=0
    while [ $i -lt 600 ] && ! grep -q started "$tmp/$1.out" 2>/dev/null; do sleep 0.1; i=$((i + 1)); done
    if ! grep -q started "$tmp/$1.out" 2>/dev/null; then
        echo "FAIL sigint $1: the script did not start within a minute"
        fail=$((fail + 1))
        kill -KILL $pid
        wait $pid
        return
    fi
    sleep 0.2
    stop $pid
    if [ $code != 130 ] || ! tail -n 1 "$tmp/$1.err" | grep -q "^$1.tdl:$2:[0-9]*: KeyboardInterrupt"; then
        fail=$((fail + 1))
        echo "FAIL sigint $1: exit $code (want 130), stderr:"
        tail -n 5 "$tmp/$1.err"
    fi
}

run loop '[23]' 'print("started", flush=True)
while True:
    pass'
run calls '[256]' 'def f(x):
    return x + 1
print("started", flush=True)
n = 0
while True:
    n = f(n)'
run tensors '[3-6]' 't = rand(128, 128)
print("started", flush=True)
while True:
    t = (t @ t).softmax(1)
    t = t + 1
    s = t.sum().item()'

# A SIGINT ignored by the parent stays ignored: tdl runs on until something else stops it.
printf 'print("started", flush=True)\nwhile True:\n    pass\n' > "$tmp/ign.tdl"
(trap '' INT && cd "$tmp" && exec "$tdl" ign.tdl) > "$tmp/ign.out" &
pid=$!
i=0
while [ $i -lt 600 ] && ! grep -q started "$tmp/ign.out" 2>/dev/null; do sleep 0.1; i=$((i + 1)); done
kill -INT $pid
sleep 0.5
if kill -0 $pid 2>/dev/null; then kill -TERM $pid; else fail=$((fail + 1)); echo "FAIL sigint ign: an ignored SIGINT stopped tdl"; fi
wait $pid 2>/dev/null

if [ $fail = 0 ]; then echo "sigint: 4 passed, 0 failed"; else echo "sigint: $fail failed"; fi
[ $fail = 0 ]
