"""The real kubectl reads the lab's fake API server: ``kubectl describe pod`` lists the plugin's
events on the pod, and ``kubectl get events --field-selector`` prints them as the API server's
table (namespaced, ``-A``, ``-o wide``, ``-o json``)."""

from __future__ import annotations

import http.client
import json
import re
import shutil
import subprocess
from collections.abc import Callable, Iterator
from datetime import UTC, datetime
from pathlib import Path

import pytest

from cpuset_adapters.kubernetes.event_object import PlacementEvent, build_event, container
from cpuset_lab.kube_pods import PodContainer, pod_object
from cpuset_lab.pod_spec import PodSpec, QosClass
from tests.support.kube_api import FakeApi, serve, write_kubeconfig

pytestmark = pytest.mark.skipif(shutil.which("kubectl") is None,
                                reason="no kubectl on PATH (Debian's kubectl package has one)")

Kubectl = Callable[..., str]
UID = "7d0c1a52-3b8e-4f7a-9c11-0e6f1f1f2a3b"


def write(api: FakeApi, pod: str, uid: str, reason: str, note: str, *,
          namespace: str = "default") -> None:
    event = build_event(PlacementEvent(
        regarding=container(namespace=namespace, pod=pod, pod_uid=uid, name="postgres"),
        reason=reason, action="Placed", note=note), instance="lab-node", at=datetime.now(UTC))
    connection = http.client.HTTPConnection("127.0.0.1", api.port, timeout=5)
    connection.request("POST", f"/apis/events.k8s.io/v1/namespaces/{namespace}/events",
                       json.dumps(event), {"Content-Type": "application/json"})
    assert connection.getresponse().status == 201


@pytest.fixture
def kubectl(tmp_path: Path) -> Iterator[Kubectl]:
    with serve() as api:
        api.add_pod(pod_object(PodSpec(name="db", uid=UID), node="lab-node",
                               qos=QosClass.GUARANTEED,
                               containers=[PodContainer(name="postgres", image="busybox")]))
        write(api, "db", UID, "ExclusiveCpusAssigned", "exclusive CPUs 1 (NUMA node 0)")
        write(api, "db", UID, "MovedForPin",
              "exclusive CPUs moved from 1 to 0: pod default/io pins 1")
        write(api, "db", "an-earlier-pod-uid", "ExclusiveCpusAssigned", "of an earlier db")
        write(api, "web", "web-uid", "MovedForPin", "in another namespace", namespace="team-a")
        kubeconfig = write_kubeconfig(tmp_path / "kubeconfig", api)

        def run(*args: str) -> str:
            done = subprocess.run(["kubectl", "--kubeconfig", str(kubeconfig), "--cache-dir",
                                   str(tmp_path / "cache"), *args],
                                  capture_output=True, text=True, timeout=60, check=False)
            assert done.returncode == 0, done.stderr
            return done.stdout
        yield run


def rows(text: str) -> list[list[str]]:
    return [re.split(r" {2,}", line.strip()) for line in text.strip().splitlines()]


def test_kubectl_describe_pod_lists_the_events_on_that_pod(kubectl: Kubectl) -> None:
    out = kubectl("describe", "pod", "db")
    assert re.search(r"^Node:\s+lab-node", out, re.MULTILINE)
    events = rows(out.split("\nEvents:\n", 1)[1])
    assert events[:2] == [["Type", "Reason", "Age", "From", "Message"],
                          ["----", "------", "----", "----", "-------"]]
    # the event on an earlier pod of that name (another uid) is not among them
    assert [row[:2] + row[3:] for row in events[2:]] == [
        ["Normal", "ExclusiveCpusAssigned", "weka.io/nri-cpuset",
         "exclusive CPUs 1 (NUMA node 0)"],
        ["Normal", "MovedForPin", "weka.io/nri-cpuset",
         "exclusive CPUs moved from 1 to 0: pod default/io pins 1"]]
    assert all(re.fullmatch(r"\d+s", row[2]) for row in events[2:])


def test_kubectl_get_events_by_reason_prints_the_api_servers_table(kubectl: Kubectl) -> None:
    [header, row] = rows(kubectl("get", "events",
                                 "--field-selector", "reason=MovedForPin"))
    assert header == ["LAST SEEN", "TYPE", "REASON", "OBJECT", "MESSAGE"]
    assert row[1:] == ["Normal", "MovedForPin", "pod/db",
                       "exclusive CPUs moved from 1 to 0: pod default/io pins 1"]
    everywhere = rows(kubectl("get", "events", "-A",
                              "--field-selector", "reason=MovedForPin"))
    assert [(r[0], r[4]) for r in everywhere] == [("NAMESPACE", "OBJECT"), ("default", "pod/db"),
                                                 ("team-a", "pod/web")]
    [header, row] = rows(kubectl("get", "events", "-o", "wide",
                                 "--field-selector", "reason=MovedForPin"))
    assert header == ["LAST SEEN", "TYPE", "REASON", "OBJECT", "SUBOBJECT", "SOURCE", "MESSAGE",
                      "FIRST SEEN", "COUNT", "NAME"]
    assert row[4:6] == ["spec.containers{postgres}", "weka.io/nri-cpuset, lab-node"]
    assert row[8] == "1"
    assert row[9].startswith("db.")


def test_kubectl_get_events_as_json_lists_core_v1_events(kubectl: Kubectl) -> None:
    listed = json.loads(kubectl("get", "events", "-o", "json",
                                "--field-selector", f"involvedObject.uid={UID}"))
    assert sorted(e["reason"] for e in listed["items"]) == ["ExclusiveCpusAssigned",
                                                           "MovedForPin"]
    assert all(e["reportingComponent"] == "weka.io/nri-cpuset" for e in listed["items"])


def test_kubectl_reports_the_api_servers_refusal_of_an_unsupported_field(tmp_path: Path) -> None:
    with serve() as api:
        done = subprocess.run(["kubectl", "--kubeconfig",
                               str(write_kubeconfig(tmp_path / "kubeconfig", api)),
                               "--cache-dir", str(tmp_path / "cache"), "get", "events",
                               "--field-selector", "note=x"],
                              capture_output=True, text=True, timeout=60, check=False)
    assert done.returncode == 1
    assert "(BadRequest)" in done.stderr
    assert "field label not supported: note" in done.stderr
