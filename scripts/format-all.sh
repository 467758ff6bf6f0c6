#!/bin/sh
# Formats the whole tree with Prettier (.prettierrc.json) and applies ESLint's safe fixes.
set -e
cd "$(dirname "$0")/.."
npx prettier --write --log-level warn .
npx eslint --fix lib test bench scripts
