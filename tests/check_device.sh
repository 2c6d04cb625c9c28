#!/bin/sh
# check_device.sh — the suite on another device: every script test with that device as the default
# (compared with its CPU expectation, device suffix and the wrapping it moves normalised: see
# run_scripts.sh --device), and the golden suites (first-class dims, indexing, roi_align against
# torchvision, nn against PyTorch; nn_cudnn: conv2d's library path, test_nn.c) with their interpreters
# opened on it. `make check-gpu` runs it on cuda:0 where a GPU
# is, with the CUDA backend's own Check suite; `make check-device` runs it with TDL_FAKE_CUDA=1,
# cuda:0 being host memory run by the CPU backend, so that what lives where, what mixes and what is
# copied back is tested on every machine (CI has no GPU).
#
# usage: sh tests/check_device.sh BUILD_DIR DEVICE [extra Check suites...]
# JOBS=N (default: the processors there are) scripts and suites run at once: on a GPU most of the
# time is NVRTC compiling kernels and opening CUDA in each process, which many cores share out.
set -u
b=$1 dev=$2
shift 2
JOBS=${JOBS:-$(nproc 2>/dev/null || echo 1)}
export JOBS
# a script that hangs on the device fails after a minute instead of holding up its batch
SCRIPT_TIMEOUT=${SCRIPT_TIMEOUT:-60}
export SCRIPT_TIMEOUT
status=0
t0=$(date +%s)
sh tests/run_scripts.sh --device "$dev" "$b/tdl" || status=1
echo "scripts on $dev: $(($(date +%s) - t0)) s"
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
# The Check suites, JOBS at once; each one's report printed when its batch ends.
n=0 batch=
finish() {
    wait
    for s in $batch; do
        cat "$tmp/$s.log"
        [ "$(cat "$tmp/$s.rc")" = 0 ] || { echo "Check suite $s on $dev: FAILED"; status=1; }
    done
    batch= n=0
}
for suite in dims indexing vision nn nn_cudnn grad "$@"; do
    { t=$(date +%s)
      echo "Check suite $suite on $dev"
      TDL_TEST_DEVICE=$dev CK_FORK=no CK_RUN_SUITE=$suite "$b/check_tdl" 2>&1
      echo $? > "$tmp/$suite.rc"
      echo "Check suite $suite on $dev: $(($(date +%s) - t)) s"; } > "$tmp/$suite.log" 2>&1 &
    batch="$batch $suite" n=$((n + 1))
    [ $n -lt "$JOBS" ] || finish
done
finish
exit $status
