#!/bin/sh
# Runs one test program as TAP: g_test programs want --tap -k after their name.
t=$1; shift
exec "$t" --tap -k "$@"
