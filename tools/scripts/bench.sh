#!/usr/bin/env bash
# make bench: the side-by-side speed table (tools/bench). Every row runs
# with the same client loop, 16 concurrent clients and the same duration, in
# rounds, against a private registry started from bin/ next to the limits of
# this machine. Output: the table on stdout, bench/results.json (git-ignored)
# and, with PROFILE=1, bench/profiles/<row>/<process>.{cpu,heap}.pprof.
#
#   QUICK=1    seconds-long smoke run (one short round, tiny seed)
#   PROFILE=1  CPU and heap profiles of every process under each row
#   ROWS=re    only the rows matching re (and the limits they divide by)
#   ROUNDS, DURATION, WARMUP  override the defaults (3, 5s, 1s)
#   UPLOAD_SIZE, LARGE_UPLOAD  bytes of the upload rows' files (8 MiB, 1 GiB)
#   IMPORT_ROWS  rows of the bulk import (registry import) after the table (100000; QUICK: 1000; 0: none)
#   BASELINE=1  write this run's ratios as the baseline the next runs are compared with
#               (tools/bench/baseline.json, or baseline-quick.json with QUICK=1)
#   REGISTRY_KEEP_DIRS=1  keep the run's directory (every process's log) and say where
set -euo pipefail
cd "$(dirname "$0")/../.."
args=(-bin bin -out bench -root .)
[ "${QUICK:-}" = 1 ] && args+=(-quick)
[ "${PROFILE:-}" = 1 ] && args+=(-profile)
[ -n "${ROWS:-}" ] && args+=(-rows "$ROWS")
[ -n "${ROUNDS:-}" ] && args+=(-rounds "$ROUNDS")
[ -n "${DURATION:-}" ] && args+=(-duration "$DURATION")
[ -n "${WARMUP:-}" ] && args+=(-warmup "$WARMUP")
[ -n "${UPLOAD_SIZE:-}" ] && args+=(-upload-size "$UPLOAD_SIZE")
[ -n "${LARGE_UPLOAD:-}" ] && args+=(-large-upload "$LARGE_UPLOAD")
[ -n "${IMPORT_ROWS:-}" ] && args+=(-import-rows "$IMPORT_ROWS")
baseline=tools/bench/baseline.json
[ "${QUICK:-}" = 1 ] && baseline=tools/bench/baseline-quick.json
args+=(-baseline "$baseline")
[ "${BASELINE:-}" = 1 ] && args+=(-write-baseline)
if [ "${PROFILE:-}" = 1 ]; then rm -rf bench/profiles; fi
exec bin/loadtest "${args[@]}"
