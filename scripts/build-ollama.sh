#!/usr/bin/env bash
# Builds the Ollama server that frognano's tests (and `make demo`) run, from the Go module
# proxy, into a cache folder outside the repository, and prints the binary's path on stdout.
#
# Idempotent: a binary already in the cache is reused. Everything it fetches comes from Debian's
# packages and the Go module proxy. Why the header dance: the module zip of
# github.com/ollama/ollama lacks llama/llama.cpp/vendor, so the three header-only libraries it
# needs come from Debian (nlohmann-json, stb; miniaudio from trixie, unpacked, never installed).
set -euo pipefail

OLLAMA_VERSION="${OLLAMA_VERSION:-0.17.4}"
cache="${FROGNANO_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/frognano}"
dest="$cache/ollama-v$OLLAMA_VERSION"
bin="$dest/ollama"
log() { echo "build-ollama: $*" >&2; }

# ggml's CPU code is compiled for the machine's own instruction set: without flags cgo builds
# for baseline x86-64, and a small model then evaluates prompts ~11x and generates ~6x slower
# (measured: SmolLM2-135M, 16 -> 179 and 8.7 -> 50 tokens/s). The cached binary is keyed by
# the flags and the processor, so an old baseline build, or one made for another CPU, is
# replaced; the key and flags are recorded beside it (ollama.build), where `frognano doctor`
# reads them.
cflags="-O3 -march=native"
if ! echo 'int main(void){return 0;}' | cc $cflags -x c -o /dev/null - >/dev/null 2>&1; then
  cflags="-O3"   # a compiler without -march=native: still optimised, baseline instructions
elif echo 'int main(void){return 0;}' | cc $cflags -mno-amx-tile -mno-amx-int8 -mno-amx-bf16 -x c -o /dev/null - >/dev/null 2>&1; then
  # On a CPU with AMX, -march=native makes ggml-cpu call its AMX buffer type, whose source
  # (amx.cpp) the Go module does not compile: the link fails. AMX stays off; AVX-512 stays.
  cflags="$cflags -mno-amx-tile -mno-amx-int8 -mno-amx-bf16"
fi
cpu=$(grep -m1 '^model name' /proc/cpuinfo 2>/dev/null | cut -d: -f2- | sed 's/^ *//')
features=$(grep -m1 '^flags' /proc/cpuinfo 2>/dev/null | tr ' ' '\n' | grep -xE 'sse4_2|avx|avx2|fma|f16c|avx512f|avx512bw|avx512_vnni|avx_vnni|amx_tile' | tr '\n' ' ' | sed 's/ $//')
key=$(printf '%s|%s|%s|%s' "$OLLAMA_VERSION" "$cflags" "$cpu" "$features" | sha256sum | cut -c1-12)
stamp="$dest/ollama.build"

if [ -x "$bin" ] && "$bin" --version >/dev/null 2>&1 && grep -qx "key=$key" "$stamp" 2>/dev/null; then
  echo "$bin"
  exit 0
fi
mkdir -p "$dest"

need_apt=()
for p in nlohmann-json3-dev libstb-dev; do
  dpkg -s "$p" >/dev/null 2>&1 || need_apt+=("$p")
done
if [ ${#need_apt[@]} -gt 0 ]; then
  log "installing ${need_apt[*]}"
  apt-get update -qq >&2
  DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "${need_apt[@]}" >&2
fi

inc="$dest/include"
if [ ! -f "$inc/miniaudio/miniaudio.h" ]; then
  log "fetching miniaudio.h from Debian trixie (header only, unpacked into the cache)"
  tmp=$(mktemp -d)
  trap 'rm -rf "$tmp"' EXIT
  echo "deb http://deb.debian.org/debian trixie main" >"$tmp/sources.list"
  mkdir -p "$tmp/lists/partial" "$tmp/archives/partial"
  apt_opts=(-o Dir::Etc::sourcelist="$tmp/sources.list" -o Dir::Etc::sourceparts=-
            -o Dir::State::Lists="$tmp/lists" -o Dir::Cache::Archives="$tmp/archives"
            -o APT::Get::List-Cleanup=0)
  apt-get "${apt_opts[@]}" update -qq >&2
  (cd "$tmp" && apt-get "${apt_opts[@]}" download libminiaudio-dev >&2)
  dpkg -x "$tmp"/libminiaudio-dev_*.deb "$tmp/x"
  hdr=$(find "$tmp/x" -name miniaudio.h | head -1)
  [ -n "$hdr" ] || { log "miniaudio.h not found in libminiaudio-dev"; exit 1; }
  mkdir -p "$inc/miniaudio"
  cp "$hdr" "$inc/miniaudio/miniaudio.h"
fi

mod="$dest/src"
mkdir -p "$mod"
if [ ! -f "$mod/go.mod" ]; then
  (cd "$mod" && go mod init frognano.local/ollama-build >/dev/null 2>&1)
fi
(cd "$mod" && GOFLAGS=-mod=mod go get "github.com/ollama/ollama@v$OLLAMA_VERSION" >&2)
build() {
  (cd "$mod" && CGO_ENABLED=1 CGO_CPPFLAGS="-I$inc" CGO_CFLAGS="$1" CGO_CXXFLAGS="$1" go build \
    -ldflags "-X github.com/ollama/ollama/version.Version=$OLLAMA_VERSION" \
    -o "$bin.tmp" github.com/ollama/ollama >&2)
}
log "compiling ollama v$OLLAMA_VERSION with $cflags (cold: about 10 minutes on 2 cores; a warm Go cache: about 3)"
start=$(date +%s)
if ! build "$cflags"; then
  log "the build with $cflags failed; building for baseline x86-64 instead"
  cflags="-O2"
  build "$cflags"
fi
mv "$bin.tmp" "$bin"
printf 'key=%s\ncflags=%s\ncpu=%s\nfeatures=%s\n' "$key" "$cflags" "$cpu" "$features" >"$stamp.tmp"
mv "$stamp.tmp" "$stamp"
log "built in $(( $(date +%s) - start ))s"
echo "$bin"
