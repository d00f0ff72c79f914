#!/usr/bin/env bash
# Render the extension's icon, extension/media/icon.svg → icon.png (128×128, transparent
# corners), with headless Chromium. The PNG is committed (the .vsix ships it and building
# needs no browser); run this after changing the SVG.
set -euo pipefail
cd "$(dirname "$0")/.."
"${CHROMIUM:-/usr/bin/chromium}" --headless --no-sandbox --disable-gpu --hide-scrollbars \
  --default-background-color=00000000 --window-size=128,128 \
  --screenshot="$PWD/extension/media/icon.png" "file://$PWD/extension/media/icon.svg" 2>/dev/null
