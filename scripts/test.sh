#!/usr/bin/env bash
# README's test command. pytest exits 5 when it collects no test: that is a failure here too,
# a suite that runs nothing proves nothing.
set -uo pipefail
.venv/bin/python -m pytest "$@"
rc=$?
if [ "$rc" -eq 5 ]; then echo "llmbench: pytest collected no tests" >&2; exit 1; fi
exit "$rc"
