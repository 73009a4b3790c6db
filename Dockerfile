# syntax=docker/dockerfile:1
#
# A small static image of the gateway: `docker build -t switchyard .`
#
#   docker run -p 8080:8080 -v switchyard-data:/data \
#     -v "$PWD/switchyard.yaml:/etc/switchyard/switchyard.yaml:ro" \
#     -e SWITCHYARD_API_KEY -e OPENAI_API_KEY -e ANTHROPIC_API_KEY \
#     switchyard serve --config /etc/switchyard/switchyard.yaml --listen 0.0.0.0:8080
#
# The store (sqlite://switchyard.db, relative to the working directory /data) lives in the
# /data volume. Reload the configuration with `docker kill --signal=HUP CONTAINER`. See
# docs/production.md.

FROM golang:1.26-bookworm AS build
WORKDIR /src
COPY go.mod go.sum ./
RUN go mod download
COPY . .
ARG VERSION=""
ARG REVISION=""
# modernc.org/sqlite is pure Go: with cgo off the binary is static and needs no libc.
RUN CGO_ENABLED=0 go build -trimpath -buildvcs=false \
      -ldflags "-s -w -X main.version=${VERSION} -X main.revision=${REVISION}" \
      -o /out/switchyard ./cmd/switchyard \
 && mkdir -p /out/data

# distroless/static: CA certificates (for https to the providers) and tzdata, no shell, no
# package manager; the :nonroot tag runs as uid/gid 65532.
FROM gcr.io/distroless/static-debian12:nonroot
COPY --from=build /out/switchyard /usr/local/bin/switchyard
COPY --from=build --chown=65532:65532 /out/data /data
WORKDIR /data
VOLUME ["/data"]
USER 65532:65532
EXPOSE 8080
ENTRYPOINT ["/usr/local/bin/switchyard"]
# Without a configuration file this serves the built-in catalog (deployments without a provider
# key are emulated) and refuses to start unless SWITCHYARD_API_KEY is set, since it listens on
# every interface.
CMD ["serve", "--listen", "0.0.0.0:8080"]
