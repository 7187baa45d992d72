#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# The Python package's tests (tests/python/test_*.py, pytest) against real processes: the
# crescent package from python/ over $CRESCENT_BUILD/lib/libcrescent.so.0. Debian's
# /usr/bin/python3 on purpose (python3-pytest, python3-numpy from scripts/install-deps.sh);
# exit 77 (skip) when they are missing. Under a sanitizer build the library's sanitizer
# runtimes are preloaded into python3 (leak checking off: the interpreter itself leaks).
set -u
root=$(cd "$(dirname "$0")/../.." && pwd)
: "${CRESCENT_BUILD:=$root/build}"
export CRESCENT_BUILD
lib=$CRESCENT_BUILD/lib/libcrescent.so.0
[ -e "$lib" ] || { echo "skip: $lib not built"; exit 77; }
for m in pytest numpy; do
    if ! /usr/bin/python3 -c "import $m" 2>/dev/null; then
        echo "skip: /usr/bin/python3 has no $m module (apt-get install python3-$m)"
        exit 77
    fi
done
export CRESCENT_LIB=$lib
export PYTHONPATH=$root/python${PYTHONPATH:+:$PYTHONPATH}
export PYTHONDONTWRITEBYTECODE=1
san=$(ldd "$lib" | grep -oE '/[^ ]*lib(asan|tsan|ubsan)\.so[^ ]*' | tr '\n' ' ')
if [ -n "$san" ]; then
    export LD_PRELOAD="$san${LD_PRELOAD:+ $LD_PRELOAD}"
    export ASAN_OPTIONS="detect_leaks=0${ASAN_OPTIONS:+:$ASAN_OPTIONS}"
fi
cd "$root/tests/python" || exit 1
exec /usr/bin/python3 -m pytest -p no:cacheprovider -q -ra "$@" test_store.py test_transfer.py
