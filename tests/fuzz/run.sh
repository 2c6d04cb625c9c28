#!/bin/sh
# Runs each libFuzzer harness of BUILD/fuzz/ for SECONDS: usage: run.sh BUILD SECONDS NAME...
#
# Corpus of NAME: BUILD/corpus/NAME (grown across runs; new inputs go there), seeded from the
# inputs below, plus tests/fuzz/crashes/NAME (reproducers of bugs found before: each must run
# clean). A crash, leak, UB report, out-of-memory or timeout stops that fuzzer; the script goes on
# with the others, prints each reproducer's path and exits 1. FUZZ_FLAGS adds libFuzzer flags
# (e.g. FUZZ_FLAGS=-seed=1).
set -u
build=$1 seconds=$2
shift 2
root=$(cd "$(dirname "$0")/../.." && pwd)
failed=""
for name in "$@"; do
    bin=$build/fuzz/fuzz_$name
    corpus=$build/corpus/$name
    art=$build/artifacts/$name
    mkdir -p "$corpus" "$art" "$root/tests/fuzz/crashes/$name"
    case $name in
    interp) seeds="$root/tests/scripts/*.tdl $root/examples/*.tdl $root/stdlib/*.tdl" ;;
    npy) seeds="$root/tests/golden/fcdim_io/*.np[yz] $root/tests/golden/roi_align/empty*.npy" ;;
    *) seeds="" ;;      # embed: grown from nothing
    esac
    for f in $seeds; do [ -f "$f" ] && cp "$f" "$corpus/"; done
    # and the first-class dims programs checked against functorch.dim (tab-separated, escaped)
    [ "$name" = interp ] && awk -F'\t' -v dir="$corpus" '/^#/ || NF < 2 { next }
        { p = $2; gsub(/\\\\/, "\001", p); gsub(/\\n/, "\n", p); gsub(/\\t/, "\t", p); gsub(/\001/, "\\", p)
          f = dir "/dims-" NR ".tdl"; print p > f; close(f) }' "$root/tests/golden/dims/cases.txt"
    dict=""
    # Programs: the dictionary, and mutations that keep to ASCII (tdl source is mostly ASCII).
    case $name in interp) dict="-dict=$root/tests/fuzz/tdl.dict -only_ascii=1" ;; esac
    echo "fuzz: $name for ${seconds}s"
    # -timeout: seconds for one input (the watchdog interrupts tdl code after FUZZ_RUN_MS);
    # -rss_limit_mb / -malloc_limit_mb: an input that asks for more memory is a finding only if
    # tdl does not turn the failed allocation into a MemoryError, so the allocation limit is
    # below the RSS limit (libFuzzer reports a malloc over the limit as a crash).
    # A request too large for ASan's allocator returns NULL (tdl's MemoryError) instead of aborting.
    # shellcheck disable=SC2086
    if ! ASAN_OPTIONS="allocator_may_return_null=1:${ASAN_OPTIONS:-}" "$bin" -max_total_time="$seconds" -timeout=20 -rss_limit_mb=3072 -malloc_limit_mb=2048 \
        -max_len=4096 -print_final_stats=1 -artifact_prefix="$art/" $dict ${FUZZ_FLAGS:-} \
        "$corpus" "$root/tests/fuzz/crashes/$name" >"$build/fuzz-$name.log" 2>&1; then
        tail -n 60 "$build/fuzz-$name.log"
        echo "fuzz: $name FAILED; log $build/fuzz-$name.log; reproducer(s):" >&2
        ls -t "$art"/* 2>/dev/null | head -n 3 | sed 's/^/  /' >&2
        echo "  rerun one with: $bin FILE" >&2
        failed="$failed $name"
    else
        grep -E '^stat::number_of_executed_units|^Done ' "$build/fuzz-$name.log" | sed 's/^/  /'
    fi
done
if [ -n "$failed" ]; then
    echo "fuzz: failed:$failed" >&2
    exit 1
fi
echo "fuzz: all clean"
