#!/bin/sh
# test_mock_cuda.sh — the CUDA backend run end to end without a GPU, on the mock driver of
# tests/mock_cuda/ (a libcuda and an NVRTC whose device is host memory and whose kernels are the
# generated CUDA C built for the host by g++ behind the emulation of tests/cuda_emu.h).
#
# What it shows: cuda_backend.c, cuda_nvrtc.c and cuda_loader.c do on the mock what they do on a
# GPU — memory through the caching allocator, copies, modules and their entry points (every
# launch mode: thread, block and split reductions, sorted stores, precomputed tables, matrix
# products), argument structs, the error slot — for a set of script tests (compared with their CPU
# expectations as run_scripts.sh --device does: roi_align's gradient against torchvision's among
# them) and a few programs compared with their own CPU run (a host scalar staged into a kernel,
# running out of device memory and going on); and that the backend uses the driver rightly: every
# copy and fill inside one live block (else the mock fails the call and says so) and every block
# freed by exit. Under ASan (make check's second pass) the backend's own leaks and overflows are
# caught too; ASan's reports go to files here, as its warning about the emulation's coroutines
# would otherwise change every script's stderr.
# Not a GPU test: the GPU's arithmetic (FMA, CUDA's libm, warp order) is make check-gpu's.
#
# usage: sh tests/test_mock_cuda.sh BUILD_DIR KERNEL_CACHE_DIR
# KERNEL_CACHE_DIR keeps the host builds of the kernels (by their source) from one run to the next.
# Passes, saying why, where g++ is missing.
set -u
b=$(cd "$1" && pwd) cache=$2
mkdir -p "$cache" && cache=$(cd "$cache" && pwd)
here=$(cd "$(dirname "$0")" && pwd)
if ! command -v g++ >/dev/null; then
    echo "test_mock_cuda: no g++ here: the mock CUDA driver cannot build kernels: skipped"
    exit 0
fi
lib=$b/mock_cuda/libcuda.so.1
[ -f "$lib" ] || { echo "test_mock_cuda: $lib is missing (make $lib)" >&2; exit 1; }
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
LD_LIBRARY_PATH=$b/mock_cuda${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
TDL_NVRTC=$lib TDL_CACHE_DIR=off TDL_CUDNN=0 TDL_MOCK_CUDA_DIR=$cache TDL_MOCK_CUDA_LOG=$tmp/driver.log
ASAN_OPTIONS=${ASAN_OPTIONS:+$ASAN_OPTIONS:}log_path=$tmp/asan
export LD_LIBRARY_PATH TDL_NVRTC TDL_CACHE_DIR TDL_CUDNN TDL_MOCK_CUDA_DIR TDL_MOCK_CUDA_LOG ASAN_OPTIONS
status=0
fail() { echo "test_mock_cuda: FAIL $*"; status=1; }

t0=$(date +%s)
JOBS=${JOBS:-$(nproc 2>/dev/null || echo 1)} sh "$here/run_scripts.sh" --device cuda "$b/tdl" \
    tdiff_grad_roi_align tdiff_grad_basic tdiff_grad_ops tdiff_views_grad tdiff_dims_setitem tdiff_dims_split \
    tdiff_matmul tdiff_softmax tdiff_reduce fuzz_torch_001 err_index err_lazy_index err_lazy_int_div_zero ||
    fail "the scripts on the mock device"

# A program's output and errors on cuda:0 of the mock against its run on the CPU (D names the device).
same() {
    name=$1 prog=$2
    for d in cpu cuda; do
        "$b/tdl" -c "D = '$d'
$prog" > "$tmp/$name.$d" 2>&1
        echo "exit $?" >> "$tmp/$name.$d"
    done
    cmp -s "$tmp/$name.cpu" "$tmp/$name.cuda" ||
        fail "$name: on the mock device it gives
$(cat "$tmp/$name.cuda")
and on the cpu
$(cat "$tmp/$name.cpu")"
}
# a reduction long enough to be split across blocks (its finishing kernel), in float64 and int64
same split_reduction "x = arange(3000000, dtype=float64, device=D)
print((x * 0.5).sum().cpu(), (x.long() % 7).sum().cpu(), x.reshape(1000, 3000).amax(0)[:4].cpu())"
# a CPU 0-dim tensor in an expression on the device (staged into a device block for the launch)
same host_scalar "s = tensor(2.5)
x = arange(6.0, device=D)
print((x * s + s).cpu(), (x[s.long()] * s).cpu())"
# an index error from inside a kernel, and the interpreter going on after it
same index_error "x = arange(5.0, device=D)
i = tensor([1, 7], device=D)
try:
    print(x[i].cpu())
except IndexError as e:
    print('IndexError:', e)
print((x + 1).cpu())"
# out of device memory: the device's own error, then the kept blocks given back and the work going on
TDL_MOCK_CUDA_MEMORY=50000000 "$b/tdl" -c "
x = ones(4000000, device='cuda')
y = x + 1
print(y[0].cpu())
try:
    z = ones(9000000, device='cuda')
    print(z[0].cpu())
except MemoryError as e:
    print('MemoryError:', e)
del y
z = ones(9000000, device='cuda')
print(z[0].cpu(), (x * 3).sum().cpu())" > "$tmp/oom.out" 2>&1
printf '%s\n' 'tensor(2.)' \
    'MemoryError: CUDA out of memory (cuda:0, tdl mock device): tried to allocate 36700160 bytes' \
    'tensor(1.) tensor(12000000.)' > "$tmp/oom.want"
cmp -s "$tmp/oom.out" "$tmp/oom.want" || fail "out of device memory: got
$(cat "$tmp/oom.out")"

# The driver's view: no call it refused, every block freed by the end of each process.
grep -q '^launch tdl_finish ' "$tmp/driver.log" || fail "no split reduction ran (tdl_finish)"
grep -q '^launch tdl_keys ' "$tmp/driver.log" || fail "no sorted store ran (tdl_keys)"
if grep -q '^wrong' "$tmp/driver.log"; then fail "the mock driver refused calls (above)"; fi
leaks=$(grep '^live ' "$tmp/driver.log" | grep -vc '^live 0$')
[ "$leaks" = 0 ] || fail "$leaks processes left device blocks allocated at exit"
for f in "$tmp"/asan.*; do
    [ -f "$f" ] || continue
    if grep -q 'ERROR' "$f"; then cat "$f"; fail "ASan (above)"; fi
done
echo "test_mock_cuda: $(grep -c '^launch ' "$tmp/driver.log") launches, $(grep -c '^load ' "$tmp/driver.log") modules loaded; $(($(date +%s) - t0)) s"
[ $status = 0 ] && echo "test_mock_cuda: passed"
exit $status
