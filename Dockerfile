# nri-cpuset's container image, for the DaemonSet (deploy/kubernetes/).
#   docker build -t nri-cpuset:0.6.0 .
# Builds its wheels from this tree in a first stage (PyPI for the dependencies), then installs
# them into a virtual environment in the image. scripts/build-image builds the same file with no
# registry and no index: BASE is a Debian bookworm root made with mmdebstrap and WHEELS=prebuilt
# takes the wheels it built outside from build/image/wheels/ (docs/decisions.md, item 46).
# BASE is pinned by tag here; in production pin by digest too (python:3.11-slim@sha256:...) so a
# rebuild cannot pick up a different base. Runs as root: see the DaemonSet's securityContext.
ARG BASE=python:3.11-slim
# source: build the wheels here (needs an index); prebuilt: copy build/image/wheels/. With
# podman or buildah (4.3/1.28 here), pass even the default (--build-arg WHEELS=source): they
# skip the stages the file does not name without the build arguments' values, defaults aside.
ARG WHEELS=source

FROM ${BASE} AS wheels-source
# Only what the builds need: the root project is nri-cpuset (setup.py adds its version and its
# pin on cpuset-core; pyproject names README.md as its readme), src/ the cpuset-core project it
# pins. Both are built in one pip call, so the pin is met by this tree, not by an index.
COPY pyproject.toml setup.py MANIFEST.in README.md /tmp/nri-cpuset/
COPY src /tmp/nri-cpuset/src
# pip's own wheel too: the image runs pip from it (below) and so never holds an installer.
RUN python3 -m venv /tmp/pip \
    && /tmp/pip/bin/pip wheel --no-cache-dir --disable-pip-version-check --wheel-dir /wheels \
        /tmp/nri-cpuset/src /tmp/nri-cpuset pip

FROM scratch AS wheels-prebuilt
COPY build/image/wheels/ /wheels/

FROM wheels-${WHEELS} AS wheels

FROM ${BASE}
# Names the wheels' content (scripts/build-image passes a hash of them): buildah's layer cache
# does not look inside a RUN's bind mount, so without it changed wheels would reuse a stale
# install layer. docker build (BuildKit) tracks the mount itself and needs none.
ARG WHEELS_ID=none
ENV PYTHONDONTWRITEBYTECODE=1 \
    PYTHONUNBUFFERED=1 \
    PATH=/opt/nri-cpuset/bin:$PATH
# A virtual environment, not the system's site-packages: Debian's python3 refuses pip there
# (PEP 668), and python:3.11-slim's is the same. Made without pip, which is run from its wheel
# in /wheels (as pip's documentation bootstraps it) and installs from the wheels only
# (--no-index): the image holds no installer, and the base needs no ensurepip (decision 53).
RUN --mount=type=bind,from=wheels,source=/wheels,target=/wheels \
    echo "wheels ${WHEELS_ID}" \
    && python3 -m venv --without-pip /opt/nri-cpuset \
    && set -- /wheels/pip-*.whl \
    && /opt/nri-cpuset/bin/python "$1"/pip install --no-cache-dir --disable-pip-version-check \
        --no-index --find-links /wheels nri-cpuset \
    && nri-cpuset --version

ENTRYPOINT ["nri-cpuset"]
CMD ["run"]
