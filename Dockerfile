# syntax=docker/dockerfile:1
# One image for every HD role (docs/deploy.md): the entrypoint `hd-node <role>` runs
# `hd run pipelines/<role>.yaml` from the reference's container variables. Roles: dms, proxy, scc,
# storage-node, sql, ingester.
#
#   docker build -t hdstore:0.1.0 .
#   docker run --rm -e PLATFORM_NODE_NAME=sn1 ... hdstore:0.1.0 storage-node

# 1. The engine addon (engine-rs, release profile), on the same Debian release as the runtime (glibc).
FROM rust:1-bookworm AS native
WORKDIR /src/engine-rs
COPY engine-rs/Cargo.toml engine-rs/Cargo.lock ./
COPY engine-rs/core ./core
COPY engine-rs/node ./node
RUN cargo build --release --locked -p hd-engine-node \
 && cp target/release/libhd_engine_node.so /src/index.node

# 2. The TypeScript, packed as `npm pack` packs it (package.json "files"), then its production
#    dependencies from the lock file.
FROM node:20-bookworm AS build
WORKDIR /src
COPY package.json package-lock.json ./
RUN npm ci --ignore-scripts --no-audit --no-fund
COPY . .
COPY --from=native /src/index.node engine-rs/index.node
RUN npm run build:ts \
 && npm pack --ignore-scripts \
 && mkdir /app \
 && tar -xzf hdstore-*.tgz -C /app --strip-components=1 \
 && cp package-lock.json /app/ \
 && cd /app && npm ci --omit=dev --ignore-scripts --no-audit --no-fund \
 && node -e "require('/app/dist/index.js')"

# 3. The runtime: no compilers, no sources, a non-root user.
FROM node:20-bookworm-slim
ENV NODE_ENV=production \
    HD_HOME=/opt/hd \
    HD_DATA_DIR=/var/lib/hd
RUN groupadd --system --gid 10001 hd \
 && useradd --system --uid 10001 --gid hd --home-dir /var/lib/hd --shell /usr/sbin/nologin hd \
 && mkdir -p /var/lib/hd /etc/hd \
 && chown hd:hd /var/lib/hd
COPY --from=build /app /opt/hd
COPY deploy/image/hd-node.js deploy/image/healthcheck.js /opt/hd/deploy/image/
RUN ln -s /opt/hd/bin/hd.js /usr/local/bin/hd
USER 10001:10001
WORKDIR /var/lib/hd
VOLUME ["/var/lib/hd"]
# Control plane 6986, data plane 6987, DMS/CA 6985, result return 6989, query gRPC 6990,
# observability 8080, hd_sql 5432 / 8081 / 31337.
EXPOSE 6985 6986 6987 6989 6990 8080 5432 8081 31337
HEALTHCHECK --interval=15s --timeout=5s --start-period=60s --retries=3 \
  CMD ["node", "/opt/hd/deploy/image/healthcheck.js"]
ENTRYPOINT ["node", "/opt/hd/deploy/image/hd-node.js"]
CMD ["storage-node"]
