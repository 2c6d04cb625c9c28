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

# same_bits PYTHON A.npy B.npy: "yes" when the two arrays hold the same bits, else "NO (k of n
# differ)".
same_bits() {
    "$1" -c 'import numpy as np, sys
a, b = np.load(sys.argv[1]), np.load(sys.argv[2])
print("yes" if a.tobytes() == b.tobytes() else "NO (%d of %d differ)" % ((a != b).sum(), a.size))' "$2" "$3" 2>&1
}

# secs V: seconds V to 5 places, or V itself (a failed run prints its message instead).
secs() {
    awk -v v="$1" 'BEGIN { if (v + 0 > 0) printf "%.5f", v; else print v }'
}

# ratio A B: A / B to 2 places, "-" unless both are times.
ratio() {
    awk -v a="$1" -v b="$2" 'BEGIN { if (a + 0 > 0 && b + 0 > 0) printf "%.2f", a / b; else print "-" }'
}
