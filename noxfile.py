"""Developer and CI sessions: ``nox -l`` lists them.

``scripts/test`` (the README's test command, run by ``.ci/run``) runs lint, typecheck, tests,
dist, e2e (containerd 1.7) and e2e-2x (containerd 2.x).
"""

from __future__ import annotations

import os

import nox

nox.options.sessions = ["lint", "typecheck", "tests"]
nox.options.reuse_existing_virtualenvs = True
nox.options.error_on_missing_interpreters = True

# The interpreter that runs nox (3.11+): no hunting for a specific minor version on PATH.
PYTHON = None
SOURCES = ["src", "tests", "bench", "tools", "noxfile.py", "setup.py"]


def install_dev(session: nox.Session, *extra: str, extras: str = "") -> None:
    """Both distributions editable from this tree: cpuset-core (project src/) and nri-cpuset
    (the root, whose pin on cpuset-core the first satisfies, so nothing is looked up on an
    index). All of src/ is then importable, including packages neither wheel ships
    (docs/decisions.md, item 22), with the lab's grpcio (the ``lab`` extra) beside ``extras``
    (``"[test]"``, ``"[test,proto]"``)."""
    names = ",".join(["lab", *filter(None, extras.strip("[]").split(","))])
    session.install("-e", "./src", "-e", f".[{names}]", *extra)


@nox.session(python=PYTHON)
def lint(session: nox.Session) -> None:
    """ruff over the code (generated code, when there is some, is excluded in pyproject)."""
    session.install("ruff>=0.6")
    session.run("ruff", "check", *SOURCES)


@nox.session(python=PYTHON)
def typecheck(session: nox.Session) -> None:
    """mypy --strict over src/."""
    install_dev(session, "mypy>=1.10", "types-PyYAML>=6.0", extras="[test]")
    session.run("mypy", "--strict", "src")


@nox.session(python=PYTHON)
def tests(session: nox.Session) -> None:
    """Unit and contract tests. The core's own tests and the contract tests run with branch
    coverage of cpuset_core, which must stay at >= 95 % from them alone; the rest run without
    coverage (tracing every frame made the whole suite 2.3 times slower: 282 s against 124 s,
    2026-11-29; ``nox -s coverage`` reports every package). grpcio-tools is installed so the
    generated-protobuf staleness test runs, never skips."""
    install_dev(session, extras="[test,proto]")
    session.run("pytest", "tests/unit/core", "tests/contract", "--cov=cpuset_core",
                "--cov-report=", "--durations=10", *session.posargs)
    session.run("coverage", "report", "--include=src/cpuset_core/*", "--fail-under=95",
                "--skip-covered")
    session.run("pytest", "tests/unit", "--ignore=tests/unit/core", "--durations=10",
                *session.posargs)


@nox.session(python=PYTHON)
def coverage(session: nox.Session) -> None:
    """Every unit and contract test with branch coverage of every package, reported (the
    ``tests`` session gates the core's alone)."""
    install_dev(session, extras="[test,proto]")
    session.run("pytest", "tests/unit", "tests/contract", "--cov", "--cov-report=term",
                *session.posargs)


@nox.session(python=PYTHON)
def dist(session: nox.Session) -> None:
    """Both distributions as users get them: wheels and sdists into dist/, cpuset-core alone in
    a fresh venv (one distribution; docs/library.md's examples run there), nri-cpuset from the
    wheels in another (--version, a dry-run plan). See tools/check_dist.py."""
    session.install("build>=1.2")
    session.run("python", "tools/check_dist.py", session.create_tmp())


@nox.session(python=PYTHON)
def bench(session: nox.Session) -> None:
    """Engine decision latency at 1024 CPUs and 1000 live containers (prints figures)."""
    install_dev(session)
    session.run("python", "bench/engine_latency.py", *session.posargs)


@nox.session(name="bench-verify", python=PYTHON)
def bench_verify(session: nox.Session) -> None:
    """The verifier's pass time at 100/500/1000 containers and its effect on decision latency
    (prints figures)."""
    install_dev(session)
    session.run("python", "bench/verify_pass.py", *session.posargs)


@nox.session(name="bench-nri", python=PYTHON)
def bench_nri(session: nox.Session) -> None:
    """What the plugin costs on a real containerd: creation latency, RSS, cold start (root)."""
    session.run("bash", "scripts/install-containerd", external=True)
    install_dev(session)
    session.run("python", "bench/nri_latency.py", *session.posargs)


@nox.session(name="bench-dense", python=PYTHON)
def bench_dense(session: nox.Session) -> None:
    """A dense node on the real containerd: 100/300/500 running shared containers, creation,
    a pin arriving and leaving, restarts, RSS and CPU, each beside its baseline (root; installs
    containerd first; about 20 minutes; ``-- --quick`` for a smoke run)."""
    session.run("bash", "scripts/install-containerd", external=True)
    install_dev(session)
    session.run("python", "bench/dense.py", *session.posargs)


@nox.session(name="bench-creation", python=PYTHON)
def bench_creation(session: nox.Session) -> None:
    """An integer pod's runp / create / start on a dense node of the real containerd (200 and
    500 running shared containers), nri-cpuset beside a no-op NRI plugin, interleaved, and the
    shared containers on its CPU when its start returns (root; installs containerd first;
    ``NRI_CPUSET_RUNTIME=2.x`` or ``-- --runtime 2.x`` for containerd 2.x; ``-- --quick`` for a
    smoke run)."""
    session.run("bash", "scripts/install-containerd", external=True)
    install_dev(session)
    session.run("python", "bench/creation.py", *session.posargs)


@nox.session(name="bench-dense-events", python=PYTHON)
def bench_dense_events(session: nox.Session) -> None:
    """Kubernetes Events on beside off on a dense node of the real containerd (500 running
    shared containers), the API server answering, unreachable and hanging: hook and creation
    times, placements, memory (root; installs containerd first; about 12 minutes; ``--
    --quick`` for a smoke run)."""
    session.run("bash", "scripts/install-containerd", external=True)
    install_dev(session)
    session.run("python", "bench/dense_events.py", *session.posargs)


@nox.session(name="bench-isolation", python=PYTHON)
def bench_isolation(session: nox.Session) -> None:
    """What an exclusive CPU buys the workload: a duty-cycle probe and a timed CPU-bound job in
    a Guaranteed 1-CPU pod, alone (the floor), beside spinning and disk-writing neighbours with
    no plugin, and with the plugin's defaults, each against the floor (root; installs
    containerd first, and gcc and libc6-dev when missing; a few minutes; ``-- --quick`` for a
    smoke run)."""
    session.run("bash", "scripts/install-containerd", external=True)
    install_dev(session)
    session.run("python", "bench/isolation.py", *session.posargs)


@nox.session(name="bench-cri", python=PYTHON)
def bench_cri(session: nox.Session) -> None:
    """The daemon's h2 CRI transport beside grpcio on the real containerd: the daemon's RSS
    after a CRI call through each, and per-call times at 100/500 containers (root; installs
    containerd first; prints figures)."""
    session.run("bash", "scripts/install-containerd", external=True)
    install_dev(session)
    session.run("python", "bench/cri_transports.py", *session.posargs)


@nox.session(python=PYTHON)
def soak(session: nox.Session) -> None:
    """A chaos soak on the real containerd: a seeded random walk of pods and faults (plugin
    killed and stopped, containerd restarted, runc refusing updates, config reloads), checked
    against the kernel's cgroup files (root; installs containerd first; ``-- --minutes 30
    --seed N``, ``-- --runtime 2.x``, ``-- --replay FILE``; exits 1 on a violation)."""
    session.run("bash", "scripts/install-containerd", external=True)
    install_dev(session)
    session.run("python", "-m", "cpuset_soak", *session.posargs)


@nox.session(python=PYTHON)
def proto(session: nox.Session) -> None:
    """Regenerate the protobuf modules (NRI, CRI) from their .proto files."""
    install_dev(session, extras="[proto]")
    session.run("python", "tools/genproto.py", *session.posargs)


# The DaemonSet's pod tests need the image scripts/build-image builds: their own sessions.
POD_TESTS = ["tests/e2e/test_daemonset_pod.py", "tests/e2e/test_daemonset_pod_plants.py",
             "tests/e2e/test_daemonset_pod_quiet.py"]


def run_e2e(session: nox.Session, runtime: str, *, tests: list[str] | None = None,
            env: dict[str, str] | None = None) -> None:
    """The e2e suite against the lab's containerd ``runtime`` (cpuset_lab.containerd_install
    .RUNTIMES), which is installed first; tests whose expectations differ ask ``lab.runtime``.
    Without ``tests``: tests/e2e but the DaemonSet's pod (``e2e-pod``)."""
    session.run("bash", "scripts/install-containerd", "--runtime", runtime, external=True)
    # The quiet-CPU tests run a real irqbalance (its binary only, never its service).
    session.run("bash", "scripts/install-irqbalance", external=True)
    install_dev(session, extras="[test]")
    selection = tests or ["tests/e2e", *(f"--ignore={path}" for path in POD_TESTS)]
    session.run("pytest", *selection, "-p", "no:cacheprovider", "--durations=15", *session.posargs,
                env={"NRI_CPUSET_E2E_REQUIRED": "1", "NRI_CPUSET_RUNTIME": runtime, **(env or {})})


def burst_repeats(default: int) -> dict[str, str]:
    """How many times the mid-burst race runs (tests/e2e/test_verified.py; ~10 s each):
    ``NRI_CPUSET_BURST_REPEATS`` when set, else ``default``."""
    return {"NRI_CPUSET_BURST_REPEATS": os.environ.get("NRI_CPUSET_BURST_REPEATS", str(default))}


@nox.session(python=PYTHON)
def e2e(session: nox.Session) -> None:
    """Against a real containerd 1.7.24 with NRI v0.6.1 (needs root; installs it first); the
    mid-burst race 10 times (the search for it: ``NRI_CPUSET_BURST_REPEATS=50`` for a longer
    one)."""
    run_e2e(session, "1.7", env=burst_repeats(10))


@nox.session(name="e2e-2x", python=PYTHON)
def e2e_2x(session: nox.Session) -> None:
    """The same suite against a real containerd 2.1.x with NRI v0.12 (needs root; installs it
    first); the mid-burst race 5 times."""
    run_e2e(session, "2.x", env=burst_repeats(5))


@nox.session(name="e2e-pod", python=PYTHON)
def e2e_pod(session: nox.Session) -> None:
    """The DaemonSet's pod run as the kubelet runs it, the plugin's image inside, on containerd
    1.7 (needs root and ``bash scripts/build-image`` first: the OCI archive it leaves)."""
    run_e2e(session, "1.7", tests=POD_TESTS)


@nox.session(name="e2e-pod-2x", python=PYTHON)
def e2e_pod_2x(session: nox.Session) -> None:
    """The same on containerd 2.1.x."""
    run_e2e(session, "2.x", tests=POD_TESTS)


@nox.session(name="bench-image", python=PYTHON)
def bench_image(session: nox.Session) -> None:
    """The plugin's image imported into a fresh containerd of the lab, 1.7 and 2.x: archive
    size, import times, unpacked size (root; after ``bash scripts/build-image``)."""
    session.run("bash", "scripts/install-containerd", "--runtime", "all", external=True)
    install_dev(session)
    session.run("python", "bench/image_import.py", *session.posargs)


@nox.session(name="bench-quality", python=PYTHON)
def bench_quality(session: nox.Session) -> None:
    """Allocation quality vs the kubelet's packed takeByTopology, every trace × machine shape
    (prints both side by side and the issue's targets; ``-- --quick`` for a smoke run)."""
    install_dev(session)
    session.run("python", "bench/quality.py", *session.posargs)


@nox.session(python=None, venv_backend="none")
def vm(session: nox.Session) -> None:
    """The VM lab: real kernels under QEMU with every machine shape (2 sockets x 2 cores x 2
    threads on 2 NUMA nodes, a memoryless node, isolcpus=, cgroup v1, systemd as PID 1 with its
    cgroup driver), tests/vm in each (root; installs QEMU, a kernel, containerd and virtme-ng;
    see docs/vm-lab.md for the times). ``nox -s vm -- default`` (or ``-- systemd``) runs one
    shape, ``-- --list`` lists them."""
    session.run("bash", "scripts/vm-test", *(session.posargs or ["--all"]), external=True)


@nox.session(python=None, venv_backend="none")
def image(session: nox.Session) -> None:
    """The Dockerfile built as users build it, with Debian's podman and no registry: a bookworm
    base from mmdebstrap, wheels built here and installed with --no-index; leaves
    build/image/nri-cpuset-VERSION.oci.tar and its digest and size beside it, and runs the image
    once (root; installs podman and mmdebstrap; see scripts/build-image, decision 46)."""
    session.run("bash", "scripts/build-image", *session.posargs, external=True)
