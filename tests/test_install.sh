#!/bin/sh
# test_install.sh — the install test: `make install` of the build in BUILD_DIR into a temporary
# DESTDIR (PREFIX /opt/tdl), then the example host of examples/embed/ built with its own Makefile
# and nothing but `pkg-config --cflags --libs tdl` against that copy (shared library), and again
# against the static library with `pkg-config --static`; both are run and their output checked.
# The installed header must also compile on its own as C99 and as C++.
#
# usage: sh tests/test_install.sh [BUILD_DIR]      (run by `make test`)
# SANITIZE=1 with HOST_CFLAGS (the sanitizer flags) builds the hosts to link a sanitized build.
set -u
B=${1:-build}
top=$(cd "$(dirname "$0")/.." && pwd)
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
cc=${CC:-cc}
fail() { echo "FAIL test_install: $*"; exit 1; }

prefix=/opt/tdl
stage=$tmp/stage
root=$stage$prefix
make -s --no-print-directory -C "$top" B="$B" SANITIZE="${SANITIZE:-0}" PREFIX=$prefix DESTDIR="$stage" install \
    > "$tmp/install.log" 2>&1 || { cat "$tmp/install.log"; fail "make install"; }
for f in bin/tdl lib/libtdl.a lib/libtdl.so include/tdl.h lib/pkgconfig/tdl.pc; do
    [ -f "$root/$f" ] || fail "$f was not installed"
done
for f in "$top"/stdlib/*.tdl; do
    [ -f "$f" ] || continue
    cmp -s "$f" "$root/share/tdl/stdlib/$(basename "$f")" || fail "stdlib/$(basename "$f") was not installed"
done
grep -q "^prefix=$prefix\$" "$root/lib/pkgconfig/tdl.pc" || fail "tdl.pc does not say prefix=$prefix"

# pkg-config sees the staged copy through its sysroot (-I$stage/opt/tdl/include ...).
export PKG_CONFIG_PATH="$root/lib/pkgconfig" PKG_CONFIG_SYSROOT_DIR="$stage"
pkg-config --exists tdl || fail "pkg-config does not find tdl"

# The shared library exports its API and nothing else (a host links it beside its own code).
# clang exports the resolvers of target_clones functions (NAME.resolver: not a C name, so they
# cannot collide with a host's symbols); they are not counted.
if command -v nm >/dev/null; then
    others=$(nm -D --defined-only "$root/lib/libtdl.so" | awk '{print $3}' | grep -v '^tdl_' | grep -v '^_init$' \
             | grep -v '^_fini$' | grep -v '\.resolver$')
    [ -z "$others" ] || fail "libtdl.so exports symbols outside tdl_*: $(echo $others | head -c 300)"
fi

# The public header stands alone.
printf '#include <tdl.h>\nint main(void) { return tdl_version()[0] == 0; }\n' > "$tmp/alone.c"
$cc -std=c99 -Wall -Wextra -pedantic -Werror $(pkg-config --cflags tdl) -c "$tmp/alone.c" -o "$tmp/alone.o" \
    || fail "tdl.h does not compile alone as C99"
if command -v c++ >/dev/null; then
    c++ -x c++ -Wall -Wextra -Werror $(pkg-config --cflags tdl) -c "$tmp/alone.c" -o "$tmp/alone_cc.o" \
        || fail "tdl.h does not compile as C++"
fi

# The example, with its own Makefile (pkg-config --cflags --libs tdl: the shared library).
mkdir "$tmp/example"
cp "$top/examples/embed/host.c" "$top/examples/embed/Makefile" "$tmp/example/"
make -s --no-print-directory -C "$tmp/example" CC="$cc" CFLAGS="${HOST_CFLAGS:-} -O1 -g -Wall -Wextra -Werror" \
    > "$tmp/build.log" 2>&1 || { cat "$tmp/build.log"; fail "examples/embed does not build against the install"; }
# Statically: the archive and the libraries tdl.pc lists as private.
$cc ${HOST_CFLAGS:-} -O1 -g -Wall -Wextra -Werror -o "$tmp/example/host_static" "$tmp/example/host.c" \
    $(pkg-config --cflags tdl) "$root/lib/libtdl.a" $(pkg-config --static --libs-only-l tdl | sed 's/-ltdl//') -lm \
    || fail "examples/embed does not link statically"

expected="box areas: 4 24
box 0: tdl 16.5000, C 16.5000
box 1: tdl 33.5000, C 33.5000
host_note was called 1 time(s)
expected error: TypeError: box_mean() missing 1 required positional argument: 'boxes'"
if grep -q "^def roi_align" "$top"/stdlib/vision.tdl 2>/dev/null; then
    expected="$expected
vision.roi_align: output [2, 1, 2, 2], matches C"
else
    expected="$expected
vision.roi_align: not in this tdl's stdlib"
fi
expected="$expected
tdl released the image"

cd "$tmp" || exit 2
# The shared build finds its stdlib beside the installed lib/; the static one is told where.
LD_LIBRARY_PATH="$root/lib" ./example/host > shared.out 2> shared.err
rc=$?
[ $rc = 0 ] || { cat shared.out shared.err; fail "the example (shared) exited with status $rc"; }
TDL_PATH="$root/share/tdl/stdlib" ./example/host_static > static.out 2> static.err
rc=$?
[ $rc = 0 ] || { cat static.out static.err; fail "the example (static) exited with status $rc"; }
printf '%s\n' "$expected" > want.out
for run in shared static; do
    if ! cmp -s want.out $run.out; then
        echo "FAIL test_install: the $run example printed:"
        diff want.out $run.out
        cat $run.err
        exit 1
    fi
    [ -s $run.err ] && { cat $run.err; fail "the $run example wrote to stderr"; }
done
# The shared one really ran the installed library.
LD_LIBRARY_PATH="$root/lib" ldd ./example/host 2>/dev/null | grep -q "$root/lib/libtdl.so" \
    || fail "the example did not load $root/lib/libtdl.so"
echo "install test: ok (make install, pkg-config, examples/embed shared and static)"
