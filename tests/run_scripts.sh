#!/bin/sh
# run_scripts.sh — the script tests: every tests/scripts/*.tdl is run by tdl from inside
# tests/scripts, and its stdout, stderr and exit status are compared with NAME.out, NAME.err
# (absent = must be empty) and NAME.code (absent = 1 when NAME.err exists, else 0).
#
# Scripts whose first line is `# python-subset` are also valid Python: their NAME.out was
# produced by CPython (python3), and `--python` re-runs python3 on them to check that it still
# agrees (the differential test; needs python3). `--regen` rewrites those NAME.out from python3.
#
# Scripts whose first line is `# torch-diff` are tensor programs whose NAME.out is PyTorch's
# output: `--torch` rewrites those NAME.out by running each script under $TORCH_PYTHON (default
# /usr/bin/python3, which has torch) through tests/torch_shim.py (PyTorch's names without
# `torch.`, and printing as tdl prints); `--torch-check` compares instead of rewriting. A script
# that fails under torch is reported and its NAME.out left alone. The normal run compares tdl
# with the committed NAME.out and needs neither python3 nor torch.
#
# `--device DEV` runs every script with DEV (cuda, cuda:N) as the default device and compares with
# the same expectations, after taking the device suffix out of both (`, device='cuda:0'`, which
# also moves PyTorch's line wrapping: whitespace runs, line breaks included, count as one space).
# A script whose output names the device on purpose has NAME.device.out / NAME.device.err, used
# instead in this mode. With TDL_FAKE_CUDA=1 the cuda devices are host memory run by the CPU
# backend: that is how the device rules are tested on machines without a GPU (make check-device).
#
# usage: sh tests/run_scripts.sh [--python | --regen | --torch | --torch-check | --device DEV] path/to/tdl [NAME...]
# NAMEs (with or without .tdl) restrict the run to those scripts, e.g. to regenerate only the
# .out files of the scripts one is writing. JOBS=N runs N scripts at once (default 1);
# SCRIPT_TIMEOUT=S stops a tdl run after S seconds (default 300).
set -u
mode=check
case "${1:-}" in
    --python) mode=python; shift ;;
    --regen) mode=regen; shift ;;
    --torch) mode=torch; shift ;;
    --torch-check) mode=torch-check; shift ;;
    --device) mode=device; device=$2; shift 2 ;;
esac
# The output of a run on another device, made comparable with the CPU's (see --device above).
normalise() {
    tr -s ' \n\t' '   ' < "$1" | sed -e "s/, device='cuda:[0-9]*'//g"
}
torch_py=${TORCH_PYTHON:-/usr/bin/python3}
tdl=$(cd "$(dirname "$1")" && pwd)/$(basename "$1")
shift
only=" $* "
jobs=${JOBS:-1}
# Each tdl run is stopped after SCRIPT_TIMEOUT seconds (default 300), where timeout(1) is: a hang is
# a failure ("exit 124"), not a stalled suite.
limit=
command -v timeout >/dev/null && limit="timeout ${SCRIPT_TIMEOUT:-300}"
here=$(cd "$(dirname "$0")" && pwd)
cd "$here/scripts" || exit 2
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
# One script: its verdict (pass, fail or skip) in $tmp/NAME.res, what to show in $tmp/NAME.log.
run_one() {
    f=$1 name=${1%.tdl}
    t=$tmp/$name
    mkdir -p "$t"
    {
    case $mode in torch|torch-check)
        if ! "$torch_py" -c 'import torch' 2>/dev/null; then echo skip > "$t.res"; return; fi
        if ! "$torch_py" "$here/torch_shim.py" "$f" > "$t/torch.out" 2> "$t/torch.err" < /dev/null; then
            echo fail > "$t.res"; echo "FAIL $f: fails under torch ($torch_py tests/torch_shim.py)"
            tail -n 5 "$t/torch.err"
            return
        fi
        if [ "$mode" = torch ]; then cp "$t/torch.out" "$name.out"; echo pass > "$t.res"; return; fi
        if cmp -s "$t/torch.out" "$name.out"; then echo pass > "$t.res"; else
            echo fail > "$t.res"; echo "FAIL $f: torch output differs from $name.out"
            diff "$name.out" "$t/torch.out" | head -n 20
        fi
        return
    esac
    if [ "$mode" = python ] || [ "$mode" = regen ]; then
        if ! command -v python3 >/dev/null; then echo skip > "$t.res"; return; fi
        python3 "$f" > "$t/py.out" 2>/dev/null
        if [ "$mode" = regen ]; then cp "$t/py.out" "$name.out"; echo pass > "$t.res"; return; fi
        if cmp -s "$t/py.out" "$name.out"; then echo pass > "$t.res"; else
            echo fail > "$t.res"; echo "FAIL $f: python3 output differs from $name.out"
            diff "$name.out" "$t/py.out" | head -n 20
        fi
        return
    fi
    want_out=$name.out want_err=$name.err
    if [ "$mode" = device ]; then
        [ -f "$name.device.out" ] && want_out=$name.device.out
        [ -f "$name.device.err" ] && want_err=$name.device.err
        $limit "$tdl" --device "$device" "$f" > "$t/raw_out" 2> "$t/raw_err" < /dev/null
        code=$?
        normalise "$t/raw_out" > "$t/out"
        normalise "$t/raw_err" > "$t/err"
        for w in out err; do
            eval "want=\$want_$w"
            if [ -f "$want" ]; then normalise "$want" > "$t/want_$w"; else : > "$t/want_$w"; fi
            eval "want_$w=\$t/want_$w"
        done
    else
        $limit "$tdl" "$f" > "$t/out" 2> "$t/err" < /dev/null
        code=$?
    fi
    want_code=0
    [ -f "$name.err" ] && want_code=1
    [ -f "$name.code" ] && want_code=$(cat "$name.code")
    ok=1
    if [ -f "$want_out" ]; then cmp -s "$t/out" "$want_out" || ok=0; else [ -s "$t/out" ] && ok=0; fi
    if [ -f "$want_err" ]; then cmp -s "$t/err" "$want_err" || ok=0; else [ -s "$t/err" ] && ok=0; fi
    [ "$code" = "$want_code" ] || ok=0
    if [ $ok = 1 ]; then echo pass > "$t.res"; else
        echo fail > "$t.res"
        echo "FAIL $f (exit $code, want $want_code)"
        [ -f "$want_out" ] && diff "$want_out" "$t/out" | head -n 20
        [ -f "$want_err" ] && diff "$want_err" "$t/err" | head -n 20
        [ -f "$want_err" ] || head -n 20 "$t/err"
    fi
    } > "$t.log" 2>&1
}

# The scripts this run takes, in order; JOBS of them run at once, and each batch's reports are
# printed as it ends (in the scripts' order), so that a run cut short still shows what it found.
pass=0 fail=0 skip=0
set --
for f in *.tdl; do
    name=${f%.tdl}
    if [ "$only" != "  " ]; then
        case $only in *" $name "*|*" $f "*) ;; *) continue ;; esac
    fi
    case $mode in
    torch|torch-check) head -n 1 "$f" | grep -q '^# torch-diff' || continue ;;
    python|regen) head -n 1 "$f" | grep -q '^# python-subset' || continue ;;
    esac
    set -- "$@" "$f"
done
report() {
    for g in "$@"; do
        n=${g%.tdl}
        cat "$tmp/$n.log"
        case $(cat "$tmp/$n.res" 2>/dev/null) in
        pass) pass=$((pass + 1)) ;;
        skip) skip=$((skip + 1)) ;;
        *) fail=$((fail + 1)) ;;
        esac
    done
}
batch=
nb=0
for f in "$@"; do
    run_one "$f" &
    batch="$batch $f" nb=$((nb + 1))
    if [ $nb -ge "$jobs" ]; then
        wait
        report $batch
        batch= nb=0
    fi
done
wait
report $batch
if [ $skip -gt 0 ]; then
    echo "scripts: $pass passed, $fail failed, $skip skipped"
else
    echo "scripts: $pass passed, $fail failed"
fi
[ $fail = 0 ]
