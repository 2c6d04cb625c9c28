#!/bin/sh
# run_check.sh — the Check suites of CHECK_TDL in two processes at once: the cuda suite (the
# slowest: NVRTC compiles its kernels) beside all the others, so that `make test` takes the time of
# the longer of the two on a machine with two or more processors; each one's report printed when
# both are done. Exits non-zero when either fails. The environment (CK_FORK, TDL_TEST_*) passes on.
#
# usage: sh tests/run_check.sh path/to/check_tdl
set -u
bin=$1
alone=cuda
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
{ CK_RUN_SUITE=$alone "$bin"; echo $? > "$tmp/alone.rc"; } > "$tmp/alone.log" 2>&1 &
TDL_CHECK_SKIP=$alone "$bin"
rest=$?
wait
cat "$tmp/alone.log"
[ "$rest" = 0 ] && [ "$(cat "$tmp/alone.rc")" = 0 ]
