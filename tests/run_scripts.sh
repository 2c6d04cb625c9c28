#!/bin/sh
# run_scripts.sh — the script tests: every tests/scripts/*.tdl is run by tdl from inside
# tests/scripts, and its stdout, stderr and exit status are compared with NAME.out, NAME.err
# (absent = must be empty) and NAME.code (absent = 1 when NAME.err exists, else 0).
#
# Scripts whose first line is `# python-subset` are also valid Python: their NAME.out was
# produced by CPython (python3), and `--python` re-runs python3 on them to check that it still
# agrees (the differential test; needs python3). `--regen` rewrites those NAME.out from python3.
#
# usage: sh tests/run_scripts.sh [--python | --regen] path/to/tdl
set -u
mode=check
case "${1:-}" in --python) mode=python; shift ;; --regen) mode=regen; shift ;; esac
tdl=$(cd "$(dirname "$1")" && pwd)/$(basename "$1")
here=$(cd "$(dirname "$0")" && pwd)
cd "$here/scripts" || exit 2
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
pass=0 fail=0 skip=0
for f in *.tdl; do
    name=${f%.tdl}
    if [ "$mode" != check ]; then
        if ! head -n 1 "$f" | grep -q '^# python-subset'; then continue; fi
        if ! command -v python3 >/dev/null; then skip=$((skip + 1)); continue; fi
        python3 "$f" > "$tmp/py.out" 2>/dev/null
        if [ "$mode" = regen ]; then cp "$tmp/py.out" "$name.out"; pass=$((pass + 1)); continue; fi
        if cmp -s "$tmp/py.out" "$name.out"; then pass=$((pass + 1)); else
            fail=$((fail + 1)); echo "FAIL $f: python3 output differs from $name.out"
            diff "$name.out" "$tmp/py.out" | head -n 20
        fi
        continue
    fi
    "$tdl" "$f" > "$tmp/out" 2> "$tmp/err" < /dev/null
    code=$?
    want_code=0
    [ -f "$name.err" ] && want_code=1
    [ -f "$name.code" ] && want_code=$(cat "$name.code")
    ok=1
    if [ -f "$name.out" ]; then cmp -s "$tmp/out" "$name.out" || ok=0; else [ -s "$tmp/out" ] && ok=0; fi
    if [ -f "$name.err" ]; then cmp -s "$tmp/err" "$name.err" || ok=0; else [ -s "$tmp/err" ] && ok=0; fi
    [ "$code" = "$want_code" ] || ok=0
    if [ $ok = 1 ]; then pass=$((pass + 1)); else
        fail=$((fail + 1))
        echo "FAIL $f (exit $code, want $want_code)"
        [ -f "$name.out" ] && diff "$name.out" "$tmp/out" | head -n 20
        [ -f "$name.err" ] && diff "$name.err" "$tmp/err" | head -n 20
        [ -f "$name.err" ] || head -n 20 "$tmp/err"
    fi
done
if [ $skip -gt 0 ]; then
    echo "scripts: $pass passed, $fail failed, $skip skipped"
else
    echo "scripts: $pass passed, $fail failed"
fi
[ $fail = 0 ]
