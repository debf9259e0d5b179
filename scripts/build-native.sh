#!/usr/bin/env bash
# Builds engine-rs (release profile) and places the Neon addon at engine-rs/index.node.
# Run by `npm install` / `npm ci` (the prepare script) and by `npm run build:native`.
set -euo pipefail
cd "$(dirname "$0")/../engine-rs"
if ! command -v cargo >/dev/null; then
  echo "engine-rs needs a Rust toolchain: install cargo (e.g. 'apt-get install cargo' or rustup), then run 'npm run build:native'" >&2
  exit 1
fi
mkdir -p target
echo "building engine-rs (cargo build --release); the first build takes a few minutes" >&2
cargo build --release -p hd-engine-node --message-format=json-render-diagnostics > target/cargo.log
npx --no-install neon dist -n hd-engine-node -l target/cargo.log
