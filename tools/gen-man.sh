#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# Writes a man page (roff, section 1) for a program from its own --help and --version output,
# so the page never drifts from the binary.  Usage: tools/gen-man.sh BINARY 'one-line summary' > NAME.1
set -euo pipefail
bin=$1
name=$(basename "$bin")
version=$("$bin" --version 2>/dev/null | head -1 || true)
[ -n "$version" ] || version="$name"
help=$("$bin" --help 2>&1 || true)
summary=$2
esc() { sed -e 's/\\/\\e/g' -e 's/^\([.'"'"']\)/\\\&\1/' -e 's/-/\\-/g'; }
echo ".TH $(echo "$name" | tr a-z A-Z) 1 \"$(date -u +%Y-%m)\" \"$version\" \"Crescent\""
echo ".SH NAME"
echo "$name \\- $(printf '%s' "$summary" | esc)"
echo ".SH DESCRIPTION"
echo "The text below is the output of"
echo ".B $name \\-\\-help."
echo ".PP"
echo ".nf"
printf '%s\n' "$help" | esc
echo ".fi"
echo ".SH SEE ALSO"
echo "The documentation under share/doc/crescent, and https://redis.io/commands for the Redis commands."
