#!/usr/bin/env bash
# Release build: static binaries (CGO_ENABLED=0; the SQLite store is pure Go) for each target,
# built with -trimpath and the version and VCS revision stamped in (`switchyard --version`),
# packed as dist/switchyard_<version>_<os>_<arch>.tar.gz with LICENSE and README.md, plus
# dist/SHA256SUMS.
#
#   scripts/release.sh                       # version from `git describe`, every target
#   VERSION=v0.4.0 scripts/release.sh        # an explicit version
#   scripts/release.sh linux/amd64 darwin/arm64   # some targets only
set -euo pipefail
cd "$(dirname "$0")/.."

version="${VERSION:-$(git describe --tags --always --dirty 2>/dev/null || echo dev)}"
revision="${REVISION:-$(git rev-parse HEAD 2>/dev/null || true)}"
targets=("$@")
if [ ${#targets[@]} -eq 0 ]; then
  targets=(linux/amd64 linux/arm64 darwin/amd64 darwin/arm64)
fi

mkdir -p dist
rm -f dist/SHA256SUMS
for target in "${targets[@]}"; do
  goos="${target%/*}" goarch="${target#*/}"
  name="switchyard_${version}_${goos}_${goarch}"
  work="dist/${name}"
  rm -rf "$work"; mkdir -p "$work"
  echo "== ${goos}/${goarch} -> dist/${name}.tar.gz"
  CGO_ENABLED=0 GOOS="$goos" GOARCH="$goarch" go build -trimpath -buildvcs=false \
    -ldflags "-s -w -X main.version=${version} -X main.revision=${revision}" \
    -o "${work}/switchyard" ./cmd/switchyard
  cp LICENSE README.md "$work/"
  tar -C dist -czf "dist/${name}.tar.gz" "$name"
  rm -rf "$work"
done
(cd dist && sha256sum ./*.tar.gz | sed 's| \./| |' > SHA256SUMS)
cat dist/SHA256SUMS
