#!/bin/sh
# gpu_session.sh — what a session lent a GPU for a few minutes runs there, in one call: the device
# suite (make check-gpu's parts, each a job of its own under a share of the time) and then the
# benchmarks (bench/gpu.sh), every log written under OUT as it goes, so that whatever finished
# comes back even when the call's time runs out. Built here first (docs/gpu.md: the binaries in
# build/ and the shared libraries in .gpu-libs/ travel with the working tree).
#
# usage: sh tests/gpu_session.sh OUT SECONDS
#   OUT/env.txt        nvidia-smi, the libraries tdl resolves, torch's version
#   OUT/scripts.log    every script test with --device cuda (tests/run_scripts.sh --device)
#   OUT/suite_S.log    each Check suite on cuda (TDL_TEST_DEVICE=cuda), with its exit status and time;
#                      nn_cudnn_off.log: nn_cudnn again with TDL_CUDNN=0
#   OUT/bench.log      bench/gpu.sh, with the time that is left
# The suite gets about half of SECONDS, the benchmarks the rest.
set -u
out=$1 total=$2
[ -d .gpu-libs ] && export LD_LIBRARY_PATH=$PWD/.gpu-libs${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
export TDL_PATH=$PWD/stdlib
if ! build/tdl --device cuda -c 'pass' 2>"$out/env.txt"; then
    echo "gpu_session.sh: no GPU here ($(tail -n 1 "$out/env.txt")): nothing run"
    exit 0
fi
t0=$(date +%s)
left() { echo $((total - ($(date +%s) - t0))); }
{ nvidia-smi; ldd build/tdl; python3 -c 'import torch, torchvision; print(torch.__version__, torchvision.__version__, torch.cuda.is_available())'; } > "$out/env.txt" 2>&1
half=$((total / 2))
timeout "$half" sh tests/run_scripts.sh --device cuda build/tdl > "$out/scripts.log" 2>&1 &
for s in dims indexing vision nn nn_cudnn grad cuda cudnn; do
    ( t=$(date +%s); TDL_TEST_DEVICE=cuda CK_FORK=no CK_RUN_SUITE=$s timeout "$half" build/check_tdl > "$out/suite_$s.log" 2>&1
      echo "exit $? after $(($(date +%s) - t)) s" >> "$out/suite_$s.log" ) &
done
( TDL_CUDNN=0 TDL_TEST_DEVICE=cuda CK_FORK=no CK_RUN_SUITE=nn_cudnn timeout "$half" build/check_tdl > "$out/nn_cudnn_off.log" 2>&1
  echo "exit $?" >> "$out/nn_cudnn_off.log" ) &
wait
echo "suite done after $(($(date +%s) - t0)) s" >> "$out/env.txt"
timeout "$(($(left) - 5))" sh bench/gpu.sh build/tdl > "$out/bench.log" 2>&1
echo "exit $? after $(($(date +%s) - t0)) s" >> "$out/bench.log"
