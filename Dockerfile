# Groundhog: one image for every part. The command picks the part:
#   docker run groundhog resolver --host 0.0.0.0 --port 8070 --data /data   (the default)
#   docker run groundhog proxy    --host 0.0.0.0 --port 8080 --data /data
#   docker run groundhog worldsim --host 0.0.0.0 --port 8090
#   docker run groundhog bench --quick
# Two stages: the builder has compilers and pip's caches; the runtime stage gets only the
# finished virtual environment, so no build tool ships in the image that runs next to workers.
# tests/deploy/test_dockerfile.py holds these promises (stages, base, user, healthcheck).

ARG PYTHON_IMAGE=python:3.12-slim

# ---------------------------------------------------------------------------------------------
FROM ${PYTHON_IMAGE} AS builder

# Compilers only for a dependency that has no wheel on this platform; they stay in this stage.
# hadolint ignore=DL3008
RUN apt-get update \
    && apt-get install -y --no-install-recommends build-essential \
    && rm -rf /var/lib/apt/lists/*

ENV PIP_NO_CACHE_DIR=1 \
    PIP_DISABLE_PIP_VERSION_CHECK=1 \
    VIRTUAL_ENV=/opt/venv \
    PATH=/opt/venv/bin:$PATH
RUN python -m venv /opt/venv

WORKDIR /src
# Dependencies first, from pyproject alone, so a code change does not reinstall them.
COPY pyproject.toml README.md ./
# The image runs every service and the benchmark: core plus the services and bench extras
# (their self-references, groundhog-rl[...], are the package itself, installed below).
RUN python -c "import subprocess, sys, tomllib; \
project = tomllib.load(open('pyproject.toml', 'rb'))['project']; \
extras = project['optional-dependencies']; \
deps = [d for d in project['dependencies'] + extras['services'] + extras['bench'] \
        if not d.startswith('groundhog-rl')]; \
subprocess.check_call([sys.executable, '-m', 'pip', 'install', *deps])"

COPY . .
RUN pip install --no-deps . \
    && groundhog --help > /dev/null

# ---------------------------------------------------------------------------------------------
FROM ${PYTHON_IMAGE} AS runtime

LABEL org.opencontainers.image.title="groundhog" \
      org.opencontainers.image.description="Recording proxy, resolver and world simulator for branching agent RL" \
      org.opencontainers.image.licenses="Apache-2.0"

# iptables for the capture init container (deploy/kubernetes/rollout-worker-captured.yaml):
# it redirects a worker pod's outbound TCP to this proxy, as Istio's istio-init does.
# hadolint ignore=DL3008
RUN apt-get update \
    && apt-get install -y --no-install-recommends iptables \
    && rm -rf /var/lib/apt/lists/*

# A fixed numeric user so Kubernetes' runAsNonRoot can verify it without a passwd lookup.
# The mount points exist and belong to it, so named volumes start out writable by it. The
# store lives in /data, the CA in /data/ca (the proxy keeps its CA in <--data>/ca).
RUN groupadd --system --gid 10001 groundhog \
    && useradd --system --uid 10001 --gid 10001 --create-home --home-dir /home/groundhog \
       --shell /usr/sbin/nologin groundhog \
    && mkdir -p /data/ca /results /opt/groundhog \
    && chown -R 10001:10001 /data /results

COPY --from=builder /opt/venv /opt/venv
COPY deploy/healthcheck.py /opt/groundhog/healthcheck.py

ENV VIRTUAL_ENV=/opt/venv \
    PATH=/opt/venv/bin:$PATH \
    PYTHONUNBUFFERED=1 \
    PYTHONDONTWRITEBYTECODE=1 \
    GROUNDHOG_DATA_DIR=/data

WORKDIR /home/groundhog
USER 10001:10001

# resolver, proxy, worldsim
EXPOSE 8070 8080 8090

# The resolver's /healthz by default; docker-compose.yml overrides the target per service
# (worldsim: its own /healthz, proxy: tcp://127.0.0.1:8080). No curl in slim: Python probes.
HEALTHCHECK --interval=10s --timeout=5s --start-period=30s --retries=3 \
    CMD ["python", "/opt/groundhog/healthcheck.py", "http://127.0.0.1:8070/healthz"]

ENTRYPOINT ["groundhog"]
CMD ["resolver", "--host", "0.0.0.0", "--port", "8070", "--data", "/data"]
