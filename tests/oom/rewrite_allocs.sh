#!/bin/sh
# Routes the library's heap calls through the allocation choke point (lang/mem.h): malloc,
# calloc, realloc, free, strdup, strndup, aligned_alloc, vasprintf and asprintf become their mem_
# namesakes in lang/, interp/, fcdim/ and backend/, and each file changed includes "mem.h".
# Idempotent: run it again after merging code that calls libc directly.
#
# Left alone: comments and string literals; member names (be->free(...), .free = ...); any line
# with a comment starting "libc:" (code that must call libc itself says why there); interp/main.c,
# the tdl command, which is a host of the public API like any other (libedit frees its lines).
#
# Usage: sh tests/oom/rewrite_allocs.sh   (from the repository root)
set -eu
cd "$(dirname "$0")/../.."
files=$(find lang interp fcdim backend -name '*.[ch]' -o -name '*.re' -o -name '*.y' | sort \
        | grep -v -e '^interp/main\.c$' -e '^lang/mem\.[ch]$')
for f in $files; do
    perl -0777 -i -pe '
        my $n = 0;
        s{(^[^\n]*/\*\s*libc:[^\n]*$)
          |(/\*.*?\*/|//[^\n]*|"(?:\\.|[^"\\\n])*"|\x27(?:\\.|[^\x27\\\n])*\x27)
          |(?<![\w.>*\$])(malloc|calloc|realloc|free|strdup|strndup|aligned_alloc|vasprintf|asprintf)(?=\s*[(,)])}
         {defined $1 ? $1 : defined $2 ? $2 : ($n++, "mem_$3")}gsmxe;
        if ($n && !/^#include "mem\.h"$/m) {
            s{^(#include [^\n]*\n)}{$1#include "mem.h"\n}m;
        }
    ' "$f"
done
