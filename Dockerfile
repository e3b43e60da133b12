# syntax=docker/dockerfile:1
# OAuth 2.0 authorization server. The TypeScript sources run as they are through
# tsx (a runtime dependency), so there is no build step and no dev dependencies.
#
#   docker build -t scheduling-oauth-server .
#   docker compose up --build          (see docker-compose.yml)
FROM node:22-bookworm-slim

ENV NODE_ENV=production \
    HOST=0.0.0.0 \
    PORT=3000 \
    NPM_CONFIG_UPDATE_NOTIFIER=false \
    NPM_CONFIG_FUND=false \
    NPM_CONFIG_AUDIT=false

WORKDIR /app

# Dependencies first, so that this layer is reused while only sources change.
COPY package.json package-lock.json ./
RUN npm ci --omit=dev && npm cache clean --force

COPY tsconfig.json ./
COPY migrations ./migrations
COPY views ./views
COPY src ./src

# The sources stay root-owned and read-only to the server. DATA_DIR is only used
# by the embedded database (development); production needs DATABASE_URL.
RUN mkdir -p /app/.data && chown node:node /app/.data
USER node

EXPOSE 3000

HEALTHCHECK --interval=10s --timeout=5s --start-period=30s --retries=5 \
  CMD ["node", "-e", "fetch('http://127.0.0.1:' + (process.env.PORT || 3000) + '/ready', { signal: AbortSignal.timeout(4000) }).then((r) => process.exit(r.ok ? 0 : 1), () => process.exit(1))"]

# node itself is the main process (not npm, not the tsx CLI, which would fork a
# second node), so SIGTERM reaches the server's graceful shutdown directly.
# Migrations are applied on start.
CMD ["node", "--import", "tsx", "src/main.ts"]
