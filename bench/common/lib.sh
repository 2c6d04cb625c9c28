# lib.sh — shell functions the side-by-side benchmarks share (sourced: . "$here/common/lib.sh").

# errline FILE: the line of FILE that says why a run failed (its last "...Error: ..." line, else
# its last line), cut to 100 characters.
errline() {
    awk 'NF { l = $0 } /Error: / { e = $0 } END { if (e != "") l = e; print substr(l, 1, 100) }' "$1"
}

# cpu_name: the processor's model name (the architecture where /proc/cpuinfo has none).
cpu_name() {
    c=$(awk -F': *' '/^model name/ { print $2; exit }' /proc/cpuinfo 2>/dev/null)
    echo "${c:-$(uname -m)}"
}

# npy_check PYTHON OURS.npy PEER.npy: "ok (err E of max)" when the largest difference is within
# 1e-4 of the peer's largest magnitude, else "WRONG: ..." (the caller fails the run on it).
npy_check() {
    "$1" -c 'import sys, numpy as np
a, b = np.load(sys.argv[1]), np.load(sys.argv[2])
e = float(np.abs(a - b).max() / np.abs(b).max()) if a.shape == b.shape else float("inf")
print(("ok (err %.1e of max)" if e <= 1e-4 else "WRONG: err %.3g of max") % e)' "$2" "$3"
}
