#!/usr/bin/env bash
# Compares the time per call of each dispatch export, rtx against IREE, on the same module, input and
# CPU device: `rtx bench --dispatch_times` beside `iree-benchmark-module` with its host-execution
# profile (`iree-profile statistics`), alternating for a number of rounds, and prints per export the
# lowest of each side's per-round times, their ratio, and the sums (docs/PERFORMANCE.md).
#
#   scripts/bench/dispatch-times.sh X.vmfb FUNCTION INPUT [--device=local-sync] [--rounds=3] [--calls=10]
#
# INPUT is as for --input (e.g. @x.npy). Needs a release build of rtx and the IREE tools
# (scripts/setup/iree-tools.sh).
set -euo pipefail
repo=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
module=${1:?usage: compare-dispatch-times.sh X.vmfb FUNCTION INPUT [--device=D] [--rounds=N] [--calls=N]}
function=${2:?missing FUNCTION}
input=${3:?missing INPUT}
shift 3
device=local-sync rounds=3 calls=10
for flag in "$@"; do
    case $flag in
        --device=*) device=${flag#--device=} ;;
        --rounds=*) rounds=${flag#--rounds=} ;;
        --calls=*) calls=${flag#--calls=} ;;
        *) echo "compare-dispatch-times.sh: unknown flag $flag" >&2; exit 2 ;;
    esac
done
rtx=$repo/target/release/rtx
tools=$("$repo/scripts/setup/iree-tools.sh")
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
common=(--device="$device" --module="$module" --function="$function" --input="$input")
for round in $(seq "$rounds"); do
    # rtx: "  EXPORT: N per call, T µs per call (S %)"
    "$rtx" bench "${common[@]}" --no_iree --benchmark_min_time="${calls}x" --dispatch_times |
        sed -n 's/^  \([^:]*\): .* per call, \([0-9.]*\) µs per call .*/\1 \2/p' >"$work/rtx.$round"
    # IREE: "  host_execute EXPORT  count=C total=T UNIT avg=..." over exactly `calls` calls.
    if ! "$tools/iree-benchmark-module" "${common[@]}" --benchmark_min_time="${calls}x" \
        --device_profiling_mode=host-execution --device_profiling_output="$work/profile.ireeprof" \
        >"$work/iree.log" 2>&1; then
        cat "$work/iree.log" >&2
        exit 1
    fi
    "$tools/iree-profile" statistics "$work/profile.ireeprof" |
        awk -v calls="$calls" '$1 == "host_execute" {
            total = $4; sub("total=", "", total); unit = $5
            scale = unit == "s" ? 1e6 : unit == "ms" ? 1e3 : unit == "us" ? 1 : 1e-3
            print $2, total * scale / calls }' >"$work/iree.$round"
done
cat "$work"/rtx.* | awk '{ if (!($1 in m) || $2 < m[$1]) m[$1] = $2 } END { for (k in m) print k, m[k] }' | sort >"$work/rtx"
cat "$work"/iree.* | awk '{ if (!($1 in m) || $2 < m[$1]) m[$1] = $2 } END { for (k in m) print k, m[k] }' | sort >"$work/iree"
join "$work/rtx" "$work/iree" | sort -k2,2 -g -r |
    awk '{ printf "%-70s rtx %9.1f µs  IREE %9.1f µs  rtx/IREE %.3f\n", $1, $2, $3, $2 / $3; r += $2; i += $3 }
         END { printf "all %d exports: rtx %.1f µs, IREE %.1f µs per call, rtx/IREE %.3f\n", NR, r, i, r / i }'
