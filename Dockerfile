# forge-bash as a service of its own: MCP over Streamable HTTP on port 8080, one
# workspace per user (the X-User-ID header), the sandbox on. See docs/http.md.
#
#   docker build -t forge-bash .
#   docker run --rm -p 127.0.0.1:8080:8080 -e FORGE_BASH_HTTP_TOKEN=... \
#     -e FORGE_BASH_HTTP_ALLOWED_HOST=localhost -v forge-bash-workspace:/workspace forge-bash

FROM rust:1-bookworm AS build
WORKDIR /src
COPY . .
RUN cargo build --release --locked --bin forge-bash

FROM debian:bookworm-slim
# bash for the commands, tini to reap what they leave behind, and the tools an agent
# reaches for first; add your project's toolchains here.
RUN apt-get update \
    && apt-get install -y --no-install-recommends \
       bash tini ca-certificates coreutils findutils grep sed gawk diffutils patch \
       procps less file git curl python3 \
    && rm -rf /var/lib/apt/lists/*
# The server runs as root; each user's commands run under a uid of their own
# (70000-99999, no supplementary groups), recorded in the state volume so that users
# keep theirs when the container is recreated. Every uid may pass through the
# volumes' roots (0711), not list them.
RUN mkdir -p /workspace /var/lib/forge-bash/state \
    && chmod 0711 /workspace /var/lib/forge-bash /var/lib/forge-bash/state
COPY --from=build /src/target/release/forge-bash /usr/local/bin/forge-bash
ENV FORGE_BASH_HTTP=0.0.0.0:8080 \
    FORGE_BASH_HTTP_ALLOWED_HOST=forge-bash \
    FORGE_BASH_WORKDIR=/workspace/{user} \
    FORGE_BASH_STATE_DIR=/var/lib/forge-bash/state/{user} \
    FORGE_BASH_USER_UIDS_FILE=/var/lib/forge-bash/uids \
    FORGE_BASH_SANDBOX=1 \
    RUST_LOG=warn,forge_bash=info
VOLUME ["/workspace", "/var/lib/forge-bash"]
EXPOSE 8080
ENTRYPOINT ["/usr/bin/tini", "--", "/usr/local/bin/forge-bash"]
