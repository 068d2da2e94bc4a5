#!/usr/bin/env bash
echo "the demo arrives with issue 3 (config, embedded server, jethost run)" >&2
exit 1
