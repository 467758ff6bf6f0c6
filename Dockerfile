# syntax=docker/dockerfile:1
# Talk AI (educai) ExApp image. Multi-stage: native addons are built in the
# first stage; the runtime stage carries only production dependencies.

FROM node:24-bookworm-slim AS frontend
# The app page (ex_app/src, Vue + Vite) is built into ex_app/js and ex_app/css;
# dev dependencies are needed for the build only, and no install script is.
WORKDIR /app
COPY package.json package-lock.json ./
RUN npm ci --ignore-scripts
COPY ex_app ./ex_app
RUN npm run build:frontend

FROM node:24-bookworm-slim AS build
WORKDIR /app
RUN apt-get update && apt-get install -y --no-install-recommends python3 make g++ && rm -rf /var/lib/apt/lists/*
COPY package.json package-lock.json ./
RUN npm ci --omit=dev
COPY lib ./lib
COPY appinfo ./appinfo
COPY ex_app/img ./ex_app/img
COPY ex_app/l10n ./ex_app/l10n
COPY --from=frontend /app/ex_app/js ./ex_app/js
COPY --from=frontend /app/ex_app/css ./ex_app/css

FROM node:24-bookworm-slim AS frpc
# HaRP deployments reach the ExApp through FRP (contract §1.2). frpc is pinned to the
# version HaRP's README names, for amd64 and arm64, with the tarball digests it pins;
# they are constants of this file, not build arguments, so no build can swap them.
ARG TARGETARCH
RUN set -eu; \
    FRP_VERSION=0.61.1; \
    arch="${TARGETARCH:-$(dpkg --print-architecture)}"; \
    case "$arch" in \
      amd64) sum=bff260b68ca7b1461182a46c4f34e9709ba32764eed30a15dd94ac97f50a2c40 ;; \
      arm64) sum=af6366f2b43920ebfe6235dba6060770399ed1fb18601e5818552bd46a7621f8 ;; \
      *) echo "no frpc for architecture $arch" >&2; exit 1 ;; \
    esac; \
    apt-get update && apt-get install -y --no-install-recommends curl ca-certificates && rm -rf /var/lib/apt/lists/*; \
    curl -fsSL -o /tmp/frp.tgz "https://github.com/fatedier/frp/releases/download/v${FRP_VERSION}/frp_${FRP_VERSION}_linux_${arch}.tar.gz"; \
    echo "${sum}  /tmp/frp.tgz" | sha256sum -c -; \
    tar -xzf /tmp/frp.tgz -C /tmp; \
    mv "/tmp/frp_${FRP_VERSION}_linux_${arch}/frpc" /usr/local/bin/frpc

FROM node:24-bookworm-slim
ENV NODE_ENV=production
# Two malloc arenas instead of eight per core: the threads (HTTP, processing, checkpointer, libuv) otherwise
# each hold a partly used arena, which showed as about 10-20 MB more RSS under 1000 concurrent streams.
ENV MALLOC_ARENA_MAX=2
RUN apt-get update && apt-get install -y --no-install-recommends curl ca-certificates tini && rm -rf /var/lib/apt/lists/*
WORKDIR /app
COPY --from=build /app /app
COPY --from=frpc /usr/local/bin/frpc /usr/local/bin/frpc
COPY scripts/start.sh scripts/healthcheck.sh /usr/local/bin/
RUN chmod 0755 /usr/local/bin/start.sh /usr/local/bin/healthcheck.sh \
 && mkdir -p /nc_app_educai_data && chown node:node /nc_app_educai_data \
 && mkdir -p /certs/frp && chown node:node /certs/frp
# HaRP installs its FRP certificates by running `mkdir -p /certs/frp` as this user and then
# uploading the files (owned by root, mode 0644), so the folder must exist and the user read them.
USER node
HEALTHCHECK --interval=30s --timeout=5s --start-period=20s --retries=3 CMD ["/usr/local/bin/healthcheck.sh"]
ENTRYPOINT ["/usr/bin/tini", "--", "/usr/local/bin/start.sh"]
CMD ["node", "lib/main.ts"]
