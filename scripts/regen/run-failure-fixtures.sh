#!/usr/bin/env bash
# Records what `iree-run-module` 3.13 (found or installed by scripts/setup/iree-tools.sh) prints for each
# failing call in tests/fixtures/run_failures/cases.txt; tests/all/run_failures.rs replays the calls
# through `rtx run` and requires the same stdout and exit status.
#
# cases.txt: one call per line, `<fixture folder> <flags...>` (folder relative to tests/fixtures;
# the tool runs inside it, so only relative names reach the output); blank lines and lines starting
# with `#` are skipped. `--device=local-sync` comes first unless the line names a `--device`.
# Case n (counting from 1) is written to expected/<n>.txt:
#
#     $ iree-run-module <flags>
#     exit status: <code>
#     --- stdout
#     <stdout>
#     --- stderr
#     <stderr>
#
# Usage: scripts/regen/run-failure-fixtures.sh [--out DIR]   (default: tests/fixtures/run_failures)
set -euo pipefail

repo=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
fixtures=$repo/tests/fixtures/run_failures
out=$fixtures
if [[ $# -eq 2 && $1 == --out ]]; then
    out=$2
elif [[ $# -ne 0 ]]; then
    echo "regen/run-failure-fixtures.sh: usage: [--out DIR]" >&2
    exit 2
fi
tools=$("$repo/scripts/setup/iree-tools.sh")
mkdir -p "$out/expected"
out=$(cd "$out" && pwd)
rm -f "$out"/expected/*.txt

n=0
line_number=0
while IFS= read -r line || [[ -n "$line" ]]; do
    line_number=$((line_number + 1))
    [[ -z "${line//[[:space:]]/}" || "$line" =~ ^[[:space:]]*# ]] && continue
    read -r -a fields <<<"$line"
    folder=${fields[0]}
    flags=("${fields[@]:1}")
    if [[ ! -d "$repo/tests/fixtures/$folder" ]]; then
        echo "regen/run-failure-fixtures.sh: cases.txt:$line_number: no folder tests/fixtures/$folder" >&2
        exit 1
    fi
    [[ " ${flags[*]} " == *" --device="* ]] || flags=(--device=local-sync ${flags[@]+"${flags[@]}"})
    n=$((n + 1))
    expected=$out/expected/$n.txt
    status=0
    (cd "$repo/tests/fixtures/$folder" && "$tools/iree-run-module" ${flags[@]+"${flags[@]}"} \
        >"$expected.stdout" 2>"$expected.stderr") || status=$?
    {
        echo "\$ iree-run-module ${flags[*]}"
        echo "exit status: $status"
        echo "--- stdout"
        cat "$expected.stdout"
        echo "--- stderr"
        cat "$expected.stderr"
    } >"$expected"
    rm -f "$expected.stdout" "$expected.stderr"
done <"$fixtures/cases.txt"
