#!/usr/bin/env bash
# The Ray Serve example (python/examples/serve): runs the load test in the environment
# scripts/setup/ray-venv.sh makes (Ray, iree-base-runtime 3.13 and the rtx wheel, which
# scripts/setup/python-package.sh builds): the digit classifier served over HTTP on 127.0.0.1
# through rtx and through iree.runtime, side by side, each load bounded in time and count.
# Arguments go to load_test.py (its defaults when none; --help lists them). Fails when an answer
# is wrong or Ray cannot run.
set -euo pipefail

repo=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
python=$("$repo/scripts/setup/ray-venv.sh")

# Token authentication would write a token under ~/.ray; this cluster lives only on 127.0.0.1.
export RAY_AUTH_MODE=disabled
exec "$python" "$repo/python/examples/serve/load_test.py" "$@"
