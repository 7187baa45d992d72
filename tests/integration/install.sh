#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# make install into a scratch DESTDIR: every file lands where docs/operations.md says, a program
# built with the installed pkg-config file links against the installed libcrescent and runs,
# the man pages render (man -l) and name the options, the systemd unit points at the installed
# binary, the Python package imports and loads the installed libcrescent.
set -u
root=$(cd "$(dirname "$0")/../.." && pwd)
: "${CRESCENT_BUILD:=$root/build}"
dest=$(mktemp -d /tmp/crescent-install.XXXXXX)
trap 'rm -rf "$dest"' EXIT
fail() { echo "FAIL: $*"; exit 1; }

# BUILD relative to the tree when it lies inside it, as `make` spells it: the build flags name
# $(BUILD)/gen, and a different spelling of the same directory would rebuild everything.
build=$(realpath --relative-base="$root" "$CRESCENT_BUILD")
make -s -C "$root" install BUILD="$build" DESTDIR="$dest" PREFIX=/usr >"$dest/make.log" 2>&1 ||
    { cat "$dest/make.log"; fail "make install"; }
for f in bin/crescent-master bin/crescent-elect bin/crescent-bench bin/crescent-client \
    lib/libcrescent.so.0 \
    lib/libcrescent.so lib/libcrescent.a include/crescent/transfer.h lib/pkgconfig/crescent.pc \
    share/man/man1/crescent-master.1 share/man/man1/crescent-elect.1 \
    share/man/man1/crescent-bench.1 share/man/man1/crescent-client.1 \
    share/doc/crescent/quickstart.md \
    lib/systemd/system/crescent-master.service lib/systemd/system/crescent-master-ha.service \
    lib/systemd/system/crescent-client.service share/doc/crescent/crescent-ha.conf.example \
    lib/python3/dist-packages/crescent/store.py; do
    [ -e "$dest/usr/$f" ] || fail "missing /usr/$f"
done
[ "$(readlink "$dest/usr/lib/libcrescent.so")" = libcrescent.so.0 ] || fail "libcrescent.so link"
"$dest/usr/bin/crescent-master" --version | grep -q '^crescent-master ' || fail "installed --version"

# A client program built only from what was installed.
export PKG_CONFIG_PATH="$dest/usr/lib/pkgconfig"
pc="pkg-config --define-variable=prefix=$dest/usr crescent"
[ "$($pc --modversion)" = "$("$dest/usr/bin/crescent-master" --version | awk '{print $2}')" ] ||
    fail "crescent.pc version differs from the binary's"
cat >"$dest/prog.c" <<'C'
#include <crescent/transfer.h>
#include <stdio.h>
int main(void) {
    crescent_xfer_engine_destroy(NULL); /* _destroy accepts NULL */
    puts("linked");
    return 0;
}
C
# shellcheck disable=SC2046
san=()
if [ -n "${SANITIZER:-}" ]; then # a sanitized libcrescent needs its runtime in the program too
    san=(-fsanitize="$([ "$SANITIZER" = address ] && echo address,undefined || echo "$SANITIZER")")
fi
cc "${san[@]}" -o "$dest/prog" "$dest/prog.c" $($pc --cflags --libs) ||
    fail "compile against the install"
out=$(LD_LIBRARY_PATH="$dest/usr/lib" "$dest/prog") || fail "run"
[ "$out" = linked ] || fail "program printed '$out'"
ldd "$dest/prog" | grep -q "$dest/usr/lib/libcrescent.so.0" 2>/dev/null ||
    LD_LIBRARY_PATH="$dest/usr/lib" ldd "$dest/prog" | grep -q "$dest/usr/lib/libcrescent.so.0" ||
    fail "prog does not use the installed library"

# Man pages render and carry the --help text.
page=$(MANWIDTH=200 MANPAGER=cat man -l "$dest/usr/share/man/man1/crescent-master.1" 2>/dev/null |
    sed 's/.\x08//g')
echo "$page" | grep -q -- "--eviction_high_watermark_ratio" || fail "man page lacks the options"
echo "$page" | grep -q "^NAME" || fail "man page has no NAME section"
grep -q "^ExecStart=/usr/bin/crescent-master /etc/crescent/crescent.conf$" \
    "$dest/usr/lib/systemd/system/crescent-master.service" || fail "unit ExecStart"
grep -q "^ExecStart=/usr/bin/crescent-client " "$dest/usr/lib/systemd/system/crescent-client.service" ||
    fail "client unit ExecStart"
# The Python package imports from the install and loads the installed library (no CRESCENT_LIB).
pydir=$dest/usr/lib/python3/dist-packages
[ -e "$pydir/crescent/__init__.py" ] || fail "missing /usr/lib/python3/dist-packages/crescent"
san=$(ldd "$dest/usr/lib/libcrescent.so.0" | grep -oE '/[^ ]*lib(asan|tsan|ubsan)\.so[^ ]*' | tr '\n' ' ')
out=$(cd / && env -u CRESCENT_LIB PYTHONPATH="$pydir" LD_PRELOAD="$san" ASAN_OPTIONS=detect_leaks=0 \
    /usr/bin/python3 -c 'import crescent; print(crescent.LIB_PATH); print(crescent.Store().health_check())') ||
    fail "python import from the install"
[ "$out" = "$dest/usr/lib/libcrescent.so.0
1" ] || fail "python package loaded '$out', not the installed library"
echo "install: ok"
