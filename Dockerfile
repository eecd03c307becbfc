# syntax=docker/dockerfile:1
# The hook server's image: docker build -t ghcr.io/challenge-hooks/challenge-hooks:0.1.0 .
# The base image is pinned by digest (the tag's multi-arch index), the same in
# every stage, so a rebuild gets the same Node and Debian unless this file
# changes. Refresh it on purpose (security updates), in all three FROM lines:
#   docker buildx imagetools inspect node:22-bookworm-slim   (or: crane digest)

# --- build: compile TypeScript to dist/, and bundle the server into dist/server.js ---
FROM node:22-bookworm-slim@sha256:43ac6c60b8f89723f746e8a92ce91abd5017e627ce1ddfe4238355d3a30b772c AS build
WORKDIR /app
COPY package.json package-lock.json ./
RUN --mount=type=cache,target=/root/.npm \
    npm ci --ignore-scripts --no-audit --no-fund
COPY tsconfig.json tsconfig.build.json ./
COPY scripts ./scripts
COPY src ./src
RUN npm run build

# --- deps: production dependencies only ---
FROM node:22-bookworm-slim@sha256:43ac6c60b8f89723f746e8a92ce91abd5017e627ce1ddfe4238355d3a30b772c AS deps
WORKDIR /app
ENV NODE_ENV=production
COPY package.json package-lock.json ./
RUN --mount=type=cache,target=/root/.npm \
    npm ci --omit=dev --ignore-scripts --no-audit --no-fund

# --- runtime: node, the compiled server and its production dependencies ---
FROM node:22-bookworm-slim@sha256:43ac6c60b8f89723f746e8a92ce91abd5017e627ce1ddfe4238355d3a30b772c AS runtime
ENV NODE_ENV=production
WORKDIR /app
COPY package.json package-lock.json ./
COPY --from=deps /app/node_modules ./node_modules
COPY --from=build /app/dist ./dist
# Files stay owned by root and read-only to the server; the Deployment also
# runs it as 10001 with a read-only root filesystem.
USER 10001:10001
# 8080: hook calls (PORT); 8081: probes and metrics (OPS_PORT).
EXPOSE 8080 8081
# Exec form, node as PID 1 with no npm or shell in between, so SIGTERM reaches
# the server, which then fails /readyz and drains.
CMD ["node", "dist/server.js"]
