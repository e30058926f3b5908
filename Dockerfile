# One image for the manager and the agent: `mkq manager serve ...` or `mkq agent run ...`.
FROM python:3.11-slim AS build
WORKDIR /src
COPY pyproject.toml README.md ./
COPY kueue_api kueue_api
COPY worker_agent worker_agent
COPY manager manager
COPY kubesim kubesim
COPY mkq mkq
COPY bench bench
COPY migrations migrations
RUN pip install --no-cache-dir --prefix=/install .

FROM python:3.11-slim
RUN useradd --uid 65532 --no-create-home --shell /usr/sbin/nologin mkq
COPY --from=build /install /usr/local
USER 65532:65532
ENTRYPOINT ["mkq"]
CMD ["--help"]
