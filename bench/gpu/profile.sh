#!/bin/sh
# profile.sh — each kernel of one forward + backward of roi_align on the GPU under Nsight Compute
# (ncu), tdl's and torchvision's, to see where the time goes before tuning (docs/gpu.md).
#
# usage: sh bench/gpu/profile.sh TDL DIR NAME OUT
#   DIR   bench/roi_align/make_data.py's output; NAME maskrcnn or adaptive (bench/grad.sh's workloads)
#   OUT   a folder: OUT/tdl_NAME.csv, OUT/tv_NAME.csv (ncu --csv, one row per kernel and metric)
#         and OUT/NAME.txt, one line per kernel: its time, DRAM and SM throughput, registers, grid
# Each side runs once (no warm-up: every kernel is profiled on its first launch, which is the
# steady state for these shapes; tdl's NVRTC compiles happen outside the kernels).
set -u
tdl=$1 d=$2 name=$3 out=$4
ncu=${NCU:-ncu}
here=$(cd "$(dirname "$0")/.." && pwd)
metrics=gpu__time_duration.sum,dram__throughput.avg.pct_of_peak_sustained_elapsed,sm__throughput.avg.pct_of_peak_sustained_elapsed,launch__registers_per_thread,launch__grid_size,launch__block_size,sm__warps_active.avg.pct_of_peak_sustained_active,dram__bytes_read.sum,dram__bytes_write.sum
"$ncu" --clock-control none --metrics "$metrics" --csv \
    "$tdl" "$here/grad/grad.tdl" "$d" 1 0 "$name" "$out/tdl_$name.npy" cuda > "$out/tdl_$name.csv" 2> "$out/tdl_$name.err"
ROI_DEVICE=cuda "$ncu" --clock-control none -k regex:roi --metrics "$metrics" --csv \
    python3 "$here/grad/torch_grad.py" "$d" 1 0 "$name" 1 "$out/tv_$name.npy" > "$out/tv_$name.csv" 2> "$out/tv_$name.err"
for side in tdl tv; do
    python3 - "$out/${side}_$name.csv" <<'PY'
import csv, sys
rows = {}
order = []
with open(sys.argv[1]) as f:
    lines = [l for l in f if l.startswith('"')]
for r in csv.DictReader(lines):
    k = (r["ID"], r["Kernel Name"])
    if k not in rows:
        rows[k] = {}
        order.append(k)
    rows[k][r["Metric Name"]] = r["Metric Value"].replace(",", "")
total = 0.0
for k in order:
    m = rows[k]
    t = float(m.get("gpu__time_duration.sum", "0"))
    total += t
    print("%4s %-40.40s %10.1f us  dram %5s%%  sm %5s%%  warps %5s%%  %6.1f MB  regs %3s  grid %8s x %4s" % (
        k[0], k[1], t / 1e3, m.get("dram__throughput.avg.pct_of_peak_sustained_elapsed", "-"),
        m.get("sm__throughput.avg.pct_of_peak_sustained_elapsed", "-"),
        m.get("sm__warps_active.avg.pct_of_peak_sustained_active", "-"),
        (float(m.get("dram__bytes_read.sum", "0")) + float(m.get("dram__bytes_write.sum", "0"))) / 1e6, m.get("launch__registers_per_thread", "-"),
        m.get("launch__grid_size", "-"), m.get("launch__block_size", "-")))
print("total %.1f us over %d kernels" % (total / 1e3, len(order)))
PY
done > "$out/$name.txt" 2>&1
