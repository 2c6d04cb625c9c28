#!/bin/sh
# nvrtc.sh — the NVRTC benchmark: how long the CUDA backend takes to compile its kernels (cold)
# and to find one in its disk cache (warm, the host side). Needs NVRTC, not a GPU.
#
# usage: sh bench/nvrtc.sh [path/to/tdl [SM [REPEATS]]]   (defaults: build/tdl, 90, 3)
#        NVRTC_TIME_CFLAGS=-DWHOLE_ONLY sh bench/nvrtc.sh OLD/build/tdl    (a build before the
#        backend compiled each entry point on its own: see nvrtc_time.c)
#
# The programs bench/nvrtc/*.tdl (a pointwise chain and (x + 1).sum(), reductions, roi_align
# forward and backward, matrix products and a masked contraction, gathers and scatters) run on
# the CPU; bench/nvrtc/nvrtc_time.c (built here against the libtdl.a next to the tdl binary, so
# that it generates and compiles as that build does) generates every kernel they run as CUDA and
# compiles each distinct one, plus the matrix product's module, for sm_SM: see its header for
# what is timed. Prints a line per kernel, then the median and max of the cold compile of the
# whole source and of what a launch compiles (ms), and of the warm lookup (us).
# Without NVRTC it says so and exits 0 (as bench/gpu.sh does without a GPU). Exit status 1 when a
# program or a compile fails, 2 when the build or the timer is missing. POSIX sh and cc.

tdl=${1:-build/tdl}
sm=${2:-90}
reps=${3:-3}
here=$(dirname "$0")
bdir=$(dirname "$tdl")
if [ ! -x "$tdl" ] || [ ! -f "$bdir/libtdl.a" ]; then
    echo "nvrtc.sh: no tdl binary and libtdl.a at $tdl (run make first)" >&2
    exit 2
fi
root=$(cd "$bdir/.." && pwd)
tmp=$(mktemp -d "${TMPDIR:-/tmp}/tdl-nvrtc.XXXXXX") || exit 2
trap 'rm -rf "$tmp"' EXIT
trap 'rm -rf "$tmp"; exit 130' INT TERM

# shellcheck disable=SC2086
if ! cc -std=c11 -D_GNU_SOURCE -O2 $NVRTC_TIME_CFLAGS -I"$root/lang" -I"$root/interp" -I"$root/fcdim" \
        -I"$root/backend" -I"$root/build/lang" -o "$tmp/nvrtc_time" "$here/nvrtc/nvrtc_time.c" "$bdir/libtdl.a" \
        -lz -lm -lpthread -ldl; then
    echo "nvrtc.sh: cannot build the timer" >&2
    exit 2
fi
echo "tdl: $tdl ($("$tdl" --version 2>/dev/null)); $(nproc 2>/dev/null) cores, load $(cut -d' ' -f1-3 /proc/loadavg 2>/dev/null)"
TDL_PATH="$root/stdlib${TDL_PATH:+:$TDL_PATH}" "$tmp/nvrtc_time" "$sm" "$reps" "$tmp/cache" "$here"/nvrtc/*.tdl
