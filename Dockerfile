# One image for every part of mkq: `mkq manager serve`, `mkq agent run`, `mkq kubesim serve`...
#   docker build -t mkq:latest .
#   docker run --rm mkq:latest --help
# The build stage compiles nothing of ours; it only keeps pip and its caches out of the image.
FROM python:3.11-slim AS build
ENV PIP_NO_CACHE_DIR=1 PIP_DISABLE_PIP_VERSION_CHECK=1
WORKDIR /src
COPY pyproject.toml README.md ./
COPY kueue_api kueue_api
COPY worker_agent worker_agent
COPY manager manager
COPY kubesim kubesim
COPY mkq mkq
COPY bench bench
COPY migrations migrations
RUN pip install --prefix=/install .

FROM python:3.11-slim
ENV PYTHONUNBUFFERED=1 PYTHONDONTWRITEBYTECODE=1
# A fixed, unprivileged uid/gid that Kubernetes' runAsUser and compose's user can name.
RUN groupadd --gid 65532 mkq \
 && useradd --uid 65532 --gid 65532 --no-create-home --home-dir /nonexistent \
      --shell /usr/sbin/nologin mkq
COPY --from=build /install /usr/local
# The Kueue CRDs and example setups, for `mkq kubesim serve --crds /opt/mkq/deploy/crds`.
COPY deploy/crds /opt/mkq/deploy/crds
COPY deploy/examples /opt/mkq/deploy/examples
COPY deploy/compose /opt/mkq/deploy/compose
# Owned by mkq, so a named volume mounted here (docker-compose.yaml) is writable by it.
RUN mkdir -p /var/lib/mkq && chown 65532:65532 /var/lib/mkq
WORKDIR /opt/mkq
USER 65532:65532
EXPOSE 8080
ENTRYPOINT ["mkq"]
CMD ["--help"]
