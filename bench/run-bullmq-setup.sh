#!/usr/bin/env bash
# Installs the BullMQ side of the benchmark from the committed lock file.
# Needs node >= 20 and npm; run from anywhere.
set -euo pipefail
cd "$(dirname "$0")/bullmq"
command -v node >/dev/null || { echo "node not found: install Node.js 20 or newer" >&2; exit 1; }
npm ci --no-audit --no-fund
