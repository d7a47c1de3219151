# nri-cpuset's container image, for the DaemonSet (deploy/kubernetes/).
#   docker build -t nri-cpuset:0.2.0 .
# Pinned by tag here; in production pin by digest too (python:3.11-slim@sha256:...) so a
# rebuild cannot pick up a different base. Runs as root: see the DaemonSet's securityContext.
FROM python:3.11-slim

ENV PYTHONDONTWRITEBYTECODE=1 \
    PYTHONUNBUFFERED=1 \
    PIP_DISABLE_PIP_VERSION_CHECK=1 \
    PIP_ROOT_USER_ACTION=ignore

# Only what the builds need: the root project is nri-cpuset (setup.py adds its version and its
# pin on cpuset-core; pyproject names README.md as its readme), src/ the cpuset-core project it
# pins. Both are installed in one pip call, so the pin is met by this tree, not by an index.
COPY pyproject.toml setup.py MANIFEST.in README.md /tmp/nri-cpuset/
COPY src /tmp/nri-cpuset/src
RUN pip install --no-cache-dir /tmp/nri-cpuset/src /tmp/nri-cpuset \
    && rm -rf /tmp/nri-cpuset \
    && nri-cpuset --version

ENTRYPOINT ["nri-cpuset"]
CMD ["run"]
