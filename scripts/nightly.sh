#!/usr/bin/env bash
# Nightly corpus build: one `warcplex nightly` run at a time, logged, with clear exit codes.
#
#   scripts/nightly.sh --crawl CC-MAIN-2024-22 --output s3://bucket/corpus [--max-shards 200] [...]
#
# Every argument goes to `warcplex nightly` (see `warcplex nightly --help`). Environment:
#   WARCPLEX_LOCK      lock file (default /tmp/warcplex-nightly.lock); a run that finds it
#                      held exits 75 at once, so overlapping cron/timer starts are harmless
#   WARCPLEX_LOG_DIR   where each run's log goes (default <repo>/logs), nightly-<UTC time>.log
#   WARCPLEX_PYTHON    the Python with warcplex installed (default <repo>/.venv/bin/python)
# Exit status: 0 done, 1 the build failed (rerun resumes it), 2 usage/config error,
# 3 done but some shards could not be read (the next run retries them),
# 75 another run holds the lock.
set -uo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
LOCK="${WARCPLEX_LOCK:-/tmp/warcplex-nightly.lock}"
LOG_DIR="${WARCPLEX_LOG_DIR:-$ROOT/logs}"
PY="${WARCPLEX_PYTHON:-$ROOT/.venv/bin/python}"

if [ "$#" -eq 0 ]; then
    echo "usage: $0 (--crawl CC-MAIN-YYYY-WW | --manifest PATH) --output DIR [warcplex nightly flags]" >&2
    exit 2
fi
mkdir -p "$LOG_DIR" || exit 2
exec 9>>"$LOCK" || { echo "nightly: cannot open lock file $LOCK" >&2; exit 2; }
if ! flock -n 9; then
    echo "nightly: another build holds $LOCK; not starting" >&2
    exit 75
fi

export SPARK_LOCAL_IP="${SPARK_LOCAL_IP:-127.0.0.1}"
export PYSPARK_PYTHON="${PYSPARK_PYTHON:-$PY}"
export PYSPARK_DRIVER_PYTHON="${PYSPARK_DRIVER_PYTHON:-$PY}"
LOG="$LOG_DIR/nightly-$(date -u +%Y%m%dT%H%M%SZ).log"
echo "nightly: started $(date -u +%FT%TZ) pid $$: $*" >>"$LOG"
cd "$ROOT" && "$PY" -m pipeline.cli nightly "$@" >>"$LOG" 2>&1
status=$?
echo "nightly: finished $(date -u +%FT%TZ) with status $status" >>"$LOG"
if [ "$status" -ne 0 ]; then
    echo "nightly: failed with status $status, see $LOG" >&2
    tail -n 5 "$LOG" >&2
fi
exit "$status"
