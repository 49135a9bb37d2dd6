# syntax=docker/dockerfile:1
#
# One Dockerfile, three images that share every layer but their last ones (docs/operations.md, "Deploying"):
#
#   docker build --target web        -t aop-web .         public API + dashboard, port 3000; also runs the migrations
#   docker build --target backend    -t aop-backend .     internal API, port 3001, with the pinned OpenClaw runtime
#   docker build --target summarizer -t aop-summarizer .  summarizer, port 3100
#
# One image per service rather than one image with the service chosen by its command: only the backend needs the
# OpenClaw runtime and its Node 24 (about 830 MB: it starts local agents and validates agent configs with the
# runtime's own `openclaw config validate`, whatever the provider), and each image's HEALTHCHECK can name its own
# service's health endpoint.
#
# NODE_IMAGE: any Debian-based image with Node >= 20.19 (root package.json `engines`) and npm 11; the services run
# on it. The OpenClaw runtime brings its own Node 24 (npm package `node`), as in a checkout.
ARG NODE_IMAGE=node:20-bookworm-slim

# ---------------------------------------------------------------- manifests: what `npm ci` needs, for layer caching
FROM ${NODE_IMAGE} AS manifests
WORKDIR /app
ENV npm_config_fund=false npm_config_audit=false npm_config_update_notifier=false
COPY package.json package-lock.json .npmrc ./
# The root `postinstall` (scripts/install-runtime.mjs) runs on every `npm ci`.
COPY scripts/install-runtime.mjs scripts/
COPY packages/core/package.json packages/core/
COPY packages/db/package.json packages/db/
COPY packages/gateway-client/package.json packages/gateway-client/
COPY packages/provisioner/package.json packages/provisioner/
COPY packages/testing/package.json packages/testing/
COPY apps/web/package.json apps/web/
COPY apps/backend/package.json apps/backend/
COPY apps/summarizer/package.json apps/summarizer/
COPY apps/dashboard/package.json apps/dashboard/
COPY runtime/package.json runtime/package-lock.json runtime/

# ---------------------------------------------------------------- build: every workspace's dist/ and the dashboard
FROM manifests AS build
# The runtime is installed in its own stage below; the build only needs TypeScript, Vite and the types.
RUN AOP_SKIP_RUNTIME=1 npm ci --no-progress
COPY tsconfig.json tsconfig.base.json ./
COPY packages packages
COPY apps apps
RUN npm run build

# ---------------------------------------------------------------- prod-deps: production dependencies only
FROM manifests AS prod-deps
RUN AOP_SKIP_RUNTIME=1 npm ci --omit=dev --no-progress \
 # The Node 24 binary (npm package `node`, a dependency of @aop/provisioner) is set aside: only the backend runs it.
 && mkdir /node24 && mv node_modules/node /node24/node

# ---------------------------------------------------------------- openclaw: the pinned runtime, installed with Node 24
FROM prod-deps AS openclaw
RUN mv /node24/node node_modules/node && node scripts/install-runtime.mjs

# ---------------------------------------------------------------- app: production dependencies + the build, one tree
FROM prod-deps AS app
COPY --from=build /app/packages/core/dist packages/core/dist
COPY --from=build /app/packages/db/dist packages/db/dist
COPY packages/db/migrations packages/db/migrations
COPY --from=build /app/packages/gateway-client/dist packages/gateway-client/dist
# dist/skills is the bundled agent skill script (build-skills.mjs); skills/ holds its SKILL.md.
COPY --from=build /app/packages/provisioner/dist packages/provisioner/dist
COPY packages/provisioner/skills packages/provisioner/skills
COPY --from=build /app/apps/web/dist apps/web/dist
COPY --from=build /app/apps/backend/dist apps/backend/dist
COPY --from=build /app/apps/summarizer/dist apps/summarizer/dist
COPY --from=build /app/apps/dashboard/dist apps/dashboard/dist
# Source maps stay (stack traces); the incremental build's state does not.
RUN find packages apps -name '.tsbuildinfo' -delete

# ---------------------------------------------------------------- service: the common final stage
FROM ${NODE_IMAGE} AS service
# No shell login, no home outside /app; uid/gid 10001 so it matches no user of the host or of the base image.
RUN groupadd --system --gid 10001 aop \
 && useradd --system --uid 10001 --gid aop --home-dir /app --no-create-home --shell /usr/sbin/nologin aop \
 && mkdir -p /data && chown aop:aop /data
WORKDIR /app
# Production: secrets must come from the environment, logs are JSON, services listen on 0.0.0.0.
# DATA_DIR holds only what a Postgres deployment keeps on disk (the backend's platform device key when
# PLATFORM_DEVICE_KEY is unset; local agents' state), or the embedded databases when DATABASE_URL is unset.
ENV NODE_ENV=production DATA_DIR=/data npm_config_update_notifier=false
COPY --from=app /app /app
VOLUME ["/data"]
USER aop

FROM service AS summarizer
EXPOSE 3100
HEALTHCHECK --interval=15s --timeout=5s --start-period=20s --retries=3 \
  CMD ["node", "-e", "fetch('http://127.0.0.1:'+(process.env.SUMMARIZER_PORT||3100)+'/health').then(r=>process.exit(r.ok?0:1),()=>process.exit(1))"]
CMD ["node", "apps/summarizer/dist/server.js"]

FROM service AS backend
# The runtime's files are root's and read-only to the service user; agents' state lives in DATA_DIR.
COPY --from=openclaw /app/node_modules/node /app/node_modules/node
COPY --from=openclaw /app/runtime/node_modules /app/runtime/node_modules
EXPOSE 3001
HEALTHCHECK --interval=15s --timeout=5s --start-period=60s --retries=3 \
  CMD ["node", "-e", "fetch('http://127.0.0.1:'+(process.env.BACKEND_PORT||3001)+'/health').then(r=>process.exit(r.ok?0:1),()=>process.exit(1))"]
CMD ["node", "apps/backend/dist/server.js"]

# Last, so a plain `docker build .` gives the web image. `docker run aop-web node packages/db/dist/cli.js` applies the
# migrations to DATABASE_URL and exits.
FROM service AS web
EXPOSE 3000
HEALTHCHECK --interval=15s --timeout=5s --start-period=30s --retries=3 \
  CMD ["node", "-e", "fetch('http://127.0.0.1:'+(process.env.PORT||3000)+'/api/health').then(r=>process.exit(r.ok?0:1),()=>process.exit(1))"]
CMD ["node", "apps/web/dist/server.js"]
