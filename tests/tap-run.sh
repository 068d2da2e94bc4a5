#!/bin/sh
# Runs one test program as TAP: g_test programs want --tap -k after their name.
# JET_TEST_TIMES=FILE: each program's wall-clock seconds are appended to FILE.
t=$1; shift
if [ -n "${JET_TEST_TIMES:-}" ]; then
    start=$(date +%s)
    "$t" --tap -k "$@"
    rc=$?
    echo "$t $(( $(date +%s) - start ))" >>"$JET_TEST_TIMES"
    exit $rc
fi
exec "$t" --tap -k "$@"
