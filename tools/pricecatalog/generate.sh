#!/bin/sh
# generate.sh [VERSION] regenerates internal/pricedata/prices.json and its license notice from the
# npm package @pydantic/genai-prices (default: the version recorded in prices.json's source).
# Run from the repository root; needs node >= 18 and npm (network: the npm registry).
set -eu
root=$(cd "$(dirname "$0")/../.." && pwd)
version=${1:-$(sed -n 's/.*"version":"\([^"]*\)".*/\1/p' "$root/internal/pricedata/prices.json" 2>/dev/null | head -n 1)}
version=${version:-latest}
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
(cd "$tmp" && npm pack --silent "@pydantic/genai-prices@$version" >/dev/null && tar xzf ./*.tgz)
GENAI_PRICES_DIR="$tmp/package" node "$root/tools/pricecatalog/generate.mjs" "$root/internal/pricedata/prices.json" "$root/internal/pricedata/testdata/vectors.json"
cp "$tmp/package/LICENSE" "$root/internal/pricedata/LICENSE.genai-prices"
