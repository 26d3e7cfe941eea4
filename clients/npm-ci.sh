#!/usr/bin/env bash
# `npm ci` of the pinned packages in the current folder, retried: the registry sometimes drops a
# connection, and a client folder's install is all or nothing.
set -euo pipefail
for attempt in 1 2 3; do
  npm ci --no-audit --no-fund --loglevel=error && exit 0
  [ "$attempt" = 3 ] && exit 1
  sleep 5
done
