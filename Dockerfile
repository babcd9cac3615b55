# syntax=docker/dockerfile:1
# berth's image: `berth serve` (extender) and `berth run` (standalone scheduler); see docs/deploy.md.
#
#   docker build -t REGISTRY/berth:0.1.0 \
#     --build-arg REVISION="$(git rev-parse HEAD)" --build-arg SOURCE="$(git remote get-url origin)" .
#
# The builder turns berth and exactly the locked runtime dependencies (uv.lock, no dev group) into
# wheels; the final stage installs those wheels offline, so it needs neither uv nor a compiler.

# Keep in step with requires-python in pyproject.toml (tests/deploy/test_dockerfile.py checks it).
ARG PYTHON_VERSION=3.11

FROM python:${PYTHON_VERSION}-slim AS builder
COPY --from=ghcr.io/astral-sh/uv:0.13.9 /uv /usr/local/bin/uv
WORKDIR /src
# The lock first: the dependency wheels stay cached while only berth's code changes.
COPY pyproject.toml uv.lock ./
RUN uv export --frozen --no-dev --no-emit-project --output-file requirements.txt \
 && pip wheel --no-cache-dir --wheel-dir /wheels --requirement requirements.txt
COPY README.md ./
COPY app ./app
RUN pip wheel --no-cache-dir --no-deps --wheel-dir /wheels .

FROM python:${PYTHON_VERSION}-slim
ARG VERSION=0.1.0
ARG REVISION=""
ARG SOURCE=""
LABEL org.opencontainers.image.title="berth" \
      org.opencontainers.image.description="A Kubernetes scheduler in Python with kube-scheduler v1.36.3 semantics: extender and standalone scheduler." \
      org.opencontainers.image.version="${VERSION}" \
      org.opencontainers.image.revision="${REVISION}" \
      org.opencontainers.image.source="${SOURCE}" \
      org.opencontainers.image.licenses="Apache-2.0"
# Bytecode is compiled at install time; at run time the root filesystem may be read-only.
ENV PYTHONDONTWRITEBYTECODE=1 \
    PYTHONUNBUFFERED=1
RUN --mount=type=bind,from=builder,source=/wheels,target=/wheels \
    pip install --no-cache-dir --no-index --find-links=/wheels berth \
 && groupadd --gid 65532 berth \
 && useradd --uid 65532 --gid 65532 --no-log-init --create-home --home-dir /home/berth \
    --shell /usr/sbin/nologin berth
USER 65532:65532
WORKDIR /home/berth
# 8888: `berth serve`'s plain loopback listener (sidecar); 8889: its HTTPS listener; 10259: `berth run`.
EXPOSE 8888 8889 10259
ENTRYPOINT ["berth"]
CMD ["--help"]
