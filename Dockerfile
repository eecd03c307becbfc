# syntax=docker/dockerfile:1
# The hook server's image: docker build -t ghcr.io/challenge-hooks/challenge-hooks:0.1.0 .
#
# Node 24, the major of .node-version. The build runs on the official node image; the runtime is Google's distroless
# Node 24 image, which holds node and the C and TLS libraries it links, and no shell, npm or package manager. The
# server needs nothing more: dist/server.js is one bundle of the server and all its dependencies
# (scripts/bundle.mjs; test/load/bundle.test.ts runs it alone in an empty directory), so the runtime gets no
# node_modules, only that file and package.json (its "type": "module" tells node at once that the bundle is ESM).
#
# Both bases are pinned by the digest of their tag's multi-arch index, so a rebuild gets the same Node and Debian
# until this file changes. These digests were taken from public Dockerfiles that pin the same tags (no registry was
# reachable where this file was written): node:24-bookworm-slim@sha256:0e0ff40c… in three unrelated repositories,
# gcr.io/distroless/nodejs24-debian12:nonroot@sha256:14d42e25… in six. Refresh both on purpose (security updates):
#   docker buildx imagetools inspect node:24-bookworm-slim                      (or: crane digest node:24-bookworm-slim)
#   docker buildx imagetools inspect gcr.io/distroless/nodejs24-debian12:nonroot
# then build, and run `npm run test:load` against the image's node if its Node minor moved.

# --- build: compile TypeScript to dist/, and bundle the server into dist/server.js ---
FROM node:24-bookworm-slim@sha256:0e0ff40c39bc087845bfb27465a0df4ea419520094bc35842ff83dd8cbe6f9b6 AS build
WORKDIR /app
COPY package.json package-lock.json ./
RUN --mount=type=cache,target=/root/.npm \
    npm ci --ignore-scripts --no-audit --no-fund
COPY tsconfig.json tsconfig.build.json ./
COPY scripts ./scripts
COPY src ./src
RUN npm run build

# --- runtime: node and the bundled server, nothing else ---
FROM gcr.io/distroless/nodejs24-debian12:nonroot@sha256:14d42e2511532589a7c7e01a753667a74fcc96266e137e8125006b87b0c32d0a AS runtime
ENV NODE_ENV=production
WORKDIR /app
COPY package.json ./
COPY --from=build /app/dist/server.js ./dist/server.js
# The gateway (manifests/components/gateway): the same image, command dist/gateway-server.js.
COPY --from=build /app/dist/gateway-server.js ./dist/gateway-server.js
# The isolation gate, the init container of every instance's pod (ISOLATION_GATE_IMAGE is this image by default):
# node /app/dist/isolation-gate.js.
COPY --from=build /app/dist/isolation-gate.js ./dist/isolation-gate.js
# Files stay owned by root and read-only to the server; the Deployment also runs it as 10001 with a read-only root
# filesystem.
USER 10001:10001
# 8080: hook calls (PORT); 8081: probes and metrics (OPS_PORT).
EXPOSE 8080 8081
# Exec form, node as PID 1 with no npm or shell in between (the image has neither), so SIGTERM reaches the server,
# which then fails /readyz and drains. The distroless image keeps node at /nodejs/bin/node, not on PATH.
ENTRYPOINT ["/nodejs/bin/node"]
CMD ["dist/server.js"]
