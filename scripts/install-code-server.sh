#!/usr/bin/env bash
# Install code-server (VS Code in the browser) from npm without its network-bound
# postinstall (kerberos build, ripgrep download): --ignore-scripts, then rebuild only
# the native modules VS Code needs. See shared/notes/vscode-e2e.md.
# Usage: [NODEDIR=<a Node install with include/node>] scripts/install-code-server.sh VERSION DEST
# (NODEDIR: the headers the native modules are built against; default the system Node's.)
set -euo pipefail
VERSION=${1:?version}
DEST=$(realpath -m "${2:?destination folder}")
if [[ -f "$DEST/.complete" ]]; then exit 0; fi
rm -rf "$DEST"
mkdir -p "$DEST"
cd "$DEST"
export npm_config_nodedir=${NODEDIR:-/usr} npm_config_yes=true npm_config_audit=false npm_config_fund=false
echo '{"private": true}' > package.json
npm install --ignore-scripts --no-save "code-server@$VERSION"
npm rebuild argon2
cd node_modules/code-server/lib/vscode
npm install --omit=dev --ignore-scripts
npm rebuild @parcel/watcher @vscode/spdlog node-pty native-watchdog @vscode/deviceid
mkdir -p node_modules/@vscode/ripgrep/bin
if command -v rg >/dev/null; then ln -sf "$(command -v rg)" node_modules/@vscode/ripgrep/bin/rg; fi
ln -sfn node_modules node_modules.asar
(cd bin/remote-cli && ln -sf code-linux.sh code-server)
(cd bin/helpers && ln -sf browser-linux.sh browser.sh)
(cd extensions && npm install --omit=dev --ignore-scripts && node ./postinstall.mjs)
touch "$DEST/.complete"
echo "code-server $VERSION installed in $DEST"
