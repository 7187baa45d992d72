#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# deploy/systemd: every unit passes `systemd-analyze verify` without a warning once @PREFIX@
# points at a prefix holding the programs (crescent-client is a stand-in script until that
# program is built); each ExecStart runs a program of this tree; every key of
# crescent-ha.conf.example and every flag of the client unit's default options is an option of
# the program (HA-mode keys and the client's flags are checked against --help when the build
# has them). The last part runs without systemd-analyze (exit 77 only when python3 is missing).
set -u
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../.." && pwd)
: "${CRESCENT_BUILD:=$root/build}"
TMP=$(mktemp -d /tmp/crescent-systemd.XXXXXX)
trap 'rm -rf "$TMP"' EXIT
fail() { echo "FAIL: $*"; exit 1; }
units=("$root"/deploy/systemd/*.service)
[ ${#units[@]} -ge 3 ] || fail "expected the master, client and HA master units"

mkdir -p "$TMP/prefix/bin" "$TMP/units"
for b in crescent-master crescent-client; do
    if [ -x "$CRESCENT_BUILD/bin/$b" ]; then
        ln -s "$CRESCENT_BUILD/bin/$b" "$TMP/prefix/bin/$b"
    else
        printf '#!/bin/sh\nexit 0\n' >"$TMP/prefix/bin/$b"
        chmod +x "$TMP/prefix/bin/$b"
    fi
done
for u in "${units[@]}"; do
    n=$(basename "$u")
    sed "s|@PREFIX@|$TMP/prefix|g" "$u" >"$TMP/units/$n"
    exe=$(sed -n 's/^ExecStart=\([^ ]*\).*/\1/p' "$TMP/units/$n")
    case $(basename "$exe") in
    crescent-master | crescent-client) ;;
    *) fail "$n: ExecStart runs '$exe'" ;;
    esac
    grep -q '@PREFIX@' "$TMP/units/$n" && fail "$n: @PREFIX@ left"
done
if command -v systemd-analyze >/dev/null; then
    for n in "$TMP"/units/*.service; do
        out=$(cd "$TMP/units" && systemd-analyze verify --man=no "$n" 2>&1)
        rc=$?
        [ $rc -eq 0 ] && [ -z "$out" ] ||
            fail "systemd-analyze verify $(basename "$n") (rc $rc): $out"
    done
    echo "ok: systemd-analyze verify: ${#units[@]} units"
else
    echo "note: no systemd-analyze; units not verified"
fi

# Keys and flags against the programs.
"$CRESCENT_BUILD/bin/crescent-master" --help >"$TMP/master.help" 2>&1
client_help=
if [ -x "$CRESCENT_BUILD/bin/crescent-client" ]; then
    "$CRESCENT_BUILD/bin/crescent-client" --help >"$TMP/client.help" 2>&1
    client_help=$TMP/client.help
fi
/usr/bin/python3 - "$root/deploy/systemd" "$TMP/master.help" "$client_help" <<'PY' || exit 1
import os, re, shlex, sys
d, mhelp, chelp = sys.argv[1], open(sys.argv[2]).read(), sys.argv[3]
fails = []
known = set(re.findall(r"--([a-z][a-z0-9_-]*)", mhelp))
planned = re.search(r"--enable_ha .*planned", mhelp) is not None
keys = [l.split()[0] for l in open(os.path.join(d, "crescent-ha.conf.example"))
        if l.strip() and not l.startswith("#")]
for k in keys:
    if k in known:
        continue
    if planned and k in ("rpc_address", "oplog_store", "ha_state_dir"):
        print("note: %s is not in this crescent-master's --help (its HA mode is planned)" % k)
        continue
    fails.append("crescent-ha.conf.example: %s is not a crescent-master option" % k)
for k in ("enable_ha", "ha_backend_type", "ha_backend_connstring", "cluster_id"):
    if k not in keys:
        fails.append("crescent-ha.conf.example lacks %s" % k)
unit = open(os.path.join(d, "crescent-client.service")).read()
opts = re.search(r'^Environment="CRESCENT_CLIENT_OPTS=([^"]*)"', unit, re.M).group(1)
flags = [a[2:] for a in shlex.split(opts) if a.startswith("--")] + ["master"]
cknown = {"master", "protocol", "host", "port", "global_segment_size", "local_buffer_size"}
if chelp:
    cknown = set(re.findall(r"--([a-z][a-z0-9_-]*)", open(chelp).read()))
for f in flags:
    if f not in cknown:
        fails.append("crescent-client.service: --%s is not a crescent-client flag" % f)
for f in fails:
    print("FAIL: " + f)
sys.exit(1 if fails else 0)
PY
echo "ok: deploy/systemd"
