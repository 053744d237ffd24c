#!/usr/bin/env bash
# Compare the working tree with an older revision side by side (docs/bench/README.md).
set -euo pipefail
cd "$(dirname "$0")/../.."
exec go run ./docs/bench/compare "$@"
