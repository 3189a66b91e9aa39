#!/usr/bin/env bash
# Runs the VS Code end-to-end test (test/e2e.mjs): installs what it needs (npm packages from
# package-lock.json, code-server into the cache, Debian's chromium), packages the extension,
# and drives real VS Code. Idempotent: later runs reuse the installs.
#
# Needs from the caller (the Go test sets them; for a manual run, start
#   go run ./editors/vscode/test/devserver    # from the repository root
# and export the lines it prints):
#   FROGNANO_BIN, OLLAMA_HOST, FROGNANO_MODEL, FROGNANO_NUM_CTX, FROGNANO_E2E_PROJECT
# Optional: FROGNANO_E2E_OUT (screenshots, logs), FROGNANO_CACHE (default ~/.cache/frognano).
set -euo pipefail
cd "$(dirname "$0")/.."

: "${FROGNANO_BIN:?set FROGNANO_BIN to the frognano binary (go build -o /tmp/frognano ./cmd/frognano)}"
: "${FROGNANO_E2E_PROJECT:?set FROGNANO_E2E_PROJECT to the sample project (go run ./editors/vscode/test/devserver prints one)}"
export FROGNANO_E2E_OUT=${FROGNANO_E2E_OUT:-$(mktemp -d -t frognano-e2e-out-XXXXXX)}

step() { echo "[run-e2e] $*"; }

if [[ ! -x ${CHROMIUM:-/usr/bin/chromium} ]]; then
  step "installing Debian chromium"
  sudo=; [[ $(id -u) == 0 ]] || sudo=sudo
  $sudo apt-get install -y --no-install-recommends chromium || { $sudo apt-get update && $sudo apt-get install -y --no-install-recommends chromium; }
fi

# npm ci when node_modules is missing or older than the lock file.
if [[ ! -f node_modules/.package-lock.json || package-lock.json -nt node_modules/.package-lock.json ]]; then
  step "npm ci"
  npm ci --no-audit --no-fund
fi

step "code-server"
CODE_SERVER=$(bash test/install-code-server.sh | tail -n 1)
export CODE_SERVER

step "packaging the extension"
npm run --silent package >/dev/null
export FROGNANO_VSIX=$PWD/frognano.vsix

step "e2e (screenshots and logs in $FROGNANO_E2E_OUT)"
exec node test/e2e.mjs
