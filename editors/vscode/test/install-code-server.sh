#!/usr/bin/env bash
# Installs code-server (VS Code for the browser, the real extension host) from npm into
# $FROGNANO_CACHE/code-server, outside the repository, following the offline recipe in
# shared/notes/environment.md: no install scripts from the network, native modules built
# here, Debian's ripgrep instead of a download. Idempotent: a finished install is reused.
# Prints the code-server binary's path on its last line.
set -euo pipefail

version=${CODE_SERVER_VERSION:-4.100.3} # the last release that runs on Node 20
cache=${FROGNANO_CACHE:-$HOME/.cache/frognano}
prefix=$cache/code-server/$version
bin=$prefix/node_modules/code-server/out/node/entry.js

# One install at a time: a second one (setup.sh and a test, say) would rm -rf the first's
# folder under it (seen: "Cannot find module 'util-deprecate'"). It waits, then finds it done.
mkdir -p "$cache/code-server"
if command -v flock >/dev/null; then
  exec 9>"$cache/code-server/.install.lock"
  flock 9
fi

if [[ -f $prefix/.complete ]] && node "$bin" --version >/dev/null 2>&1; then
  echo "$prefix/node_modules/.bin/code-server"
  exit 0
fi

node_major=$(node -p 'process.versions.node.split(".")[0]')
if [[ $node_major != 20 ]]; then
  echo "code-server $version needs Node 20 (found $(node --version))" >&2
  exit 1
fi

need=()
for p in build-essential pkg-config libkrb5-dev libx11-dev libxkbfile-dev libsecret-1-dev ripgrep; do
  dpkg -s "$p" >/dev/null 2>&1 || need+=("$p")
done
if ((${#need[@]})); then
  echo "installing Debian packages: ${need[*]}" >&2
  if [[ $(id -u) == 0 ]]; then
    apt-get install -y --no-install-recommends "${need[@]}" >&2 || { apt-get update >&2 && apt-get install -y --no-install-recommends "${need[@]}" >&2; }
  else
    sudo apt-get install -y --no-install-recommends "${need[@]}" >&2
  fi
fi

export npm_config_unsafe_perm=true npm_config_yes=true npm_config_audit=false npm_config_fund=false
# npm 11.x blocks dependency install scripts unless allowed; the native modules need theirs
# (nothing is downloaded by them: the download step runs with --ignore-scripts, and ripgrep
# is Debian's). npm 10 ignores this setting.
export npm_config_dangerously_allow_all_scripts=true
rm -rf "$prefix"
mkdir -p "$prefix"
cd "$prefix"
echo '{"private": true}' > package.json
npm install --ignore-scripts --no-save "code-server@$version" >&2
npm rebuild argon2 >&2 # no prebuilt download: builds from source (argon2 is hoisted here)
cd node_modules/code-server

cd lib/vscode
npm install --ignore-scripts --omit=dev >&2
mkdir -p node_modules/@vscode/ripgrep/bin
cp /usr/bin/rg node_modules/@vscode/ripgrep/bin/rg
npm rebuild >&2
cd ../..
# postinstall.sh reads the Node version from npm's user agent, as when npm runs it.
npm_config_user_agent="npm/$(npm --version) node/$(node --version) linux x64" sh ./postinstall.sh >&2

# Only a server that starts counts as installed.
node "$bin" --version >&2
touch "$prefix/.complete"
echo "$prefix/node_modules/.bin/code-server"
