#!/bin/sh
# check_device.sh — the suite on another device: every script test with that device as the default
# (compared with its CPU expectation, device suffix and the wrapping it moves normalised: see
# run_scripts.sh --device), and the golden suites (first-class dims, indexing, roi_align against
# torchvision, nn against PyTorch) with their interpreters opened on it. `make check-gpu` runs it on cuda:0 where a GPU
# is, with the CUDA backend's own Check suite; `make check-device` runs it with TDL_FAKE_CUDA=1,
# cuda:0 being host memory run by the CPU backend, so that what lives where, what mixes and what is
# copied back is tested on every machine (CI has no GPU).
#
# usage: sh tests/check_device.sh BUILD_DIR DEVICE [extra Check suites...]
set -u
b=$1 dev=$2
shift 2
status=0
sh tests/run_scripts.sh --device "$dev" "$b/tdl" || status=1
for suite in dims indexing vision nn "$@"; do
    echo "Check suite $suite on $dev"
    TDL_TEST_DEVICE=$dev CK_FORK=no CK_RUN_SUITE=$suite "$b/check_tdl" || status=1
done
exit $status
