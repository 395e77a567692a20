#!/usr/bin/env bash
# Poll v3_lease.sh's background chain: wait at most $1 s for the stage matching $2 (in $R/stages.txt), print the
# stages and each log's tail, and put its text files in $OUT/run.tar.gz; with $3, also copy the packed weights
# matching that glob under $R (e.g. 'target/v3-target.tar.gz.part*'). $1 must leave the session's device time
# for the transfers (v3_lease.sh says why).
# No chain on this machine (no $R/stages.txt): the machine is a fresh one (the one that ran the chain went back,
# idle more than 30 s), so it stops at once (exit 3) instead of waiting its $1 s: a lease lost 420 s that way.
set -u
R=${R:-/tmp/v3run}; end=$(( $(date +%s) + $1 ))
if [ ! -f "$R/stages.txt" ]; then
  echo "no chain here ($R/stages.txt missing): a fresh machine, the chain's went back; start v3_lease.sh again" >&2
  exit 3
fi
while [ "$(date +%s)" -lt "$end" ] && ! grep -q "$2" "$R/stages.txt" 2>/dev/null; do sleep 5; done
cat "$R/stages.txt"; nvidia-smi --query-gpu=name,utilization.gpu,memory.used --format=csv,noheader 2>/dev/null
for f in "$R"/*.log; do echo "== $f"; tail -n 4 "$f"; done
(cd "$R" && tar -czf "$OUT/run.tar.gz" --exclude='*.part*' .)
if [ -n "${3:-}" ]; then
  for f in "$R"/$3; do [ -f "$f" ] && cp "$f" "$OUT/"; done
fi
ls -la "$OUT"
