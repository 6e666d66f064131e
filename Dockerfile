# The replayable CLI and service (`docker compose` builds it; see compose.yaml and docs/compose.md).
# Build: npm ci, compile to dist/, drop dev dependencies. Run: node bin/replayable.js <command>.
FROM node:24-bookworm-slim AS build
WORKDIR /app
COPY package.json package-lock.json ./
# npm ci's postinstall applies patches/ to KafkaJS (patches/README.md).
COPY scripts/postinstall.mjs ./scripts/
COPY patches ./patches
RUN npm ci --no-audit --no-fund
COPY tsconfig.json tsconfig.build.json ./
COPY bin ./bin
COPY src ./src
COPY drizzle ./drizzle
RUN npm run build && npm prune --omit=dev --no-audit --no-fund

FROM node:24-bookworm-slim
ENV NODE_ENV=production
WORKDIR /app
COPY --from=build /app/package.json /app/package-lock.json ./
COPY --from=build /app/node_modules ./node_modules
COPY --from=build /app/dist ./dist
COPY --from=build /app/bin ./bin
COPY --from=build /app/drizzle ./drizzle
USER node
# /metrics, /healthz, /readyz (REPLAYABLE_METRICS_PORT; set REPLAYABLE_METRICS_HOST=0.0.0.0 in a container).
EXPOSE 9464
ENTRYPOINT ["node", "bin/replayable.js"]
CMD ["--help"]
