"""A rollout loses no request to the platform: every Deployment keeps serving a few seconds
after its pod is marked terminating (the endpoints and the ingress catch up), then drains on
SIGTERM, and both fit in the pod's grace period."""

from __future__ import annotations

import pytest

from common.settings import Settings
from tests.support.k8s import K8S, render

pytestmark = pytest.mark.unit


@pytest.mark.parametrize("overlay", ["production", "cloudnative-pg", "strimzi"])
def test_every_deployment_serves_on_then_drains_within_its_grace(overlay: str) -> None:
    drain_s = Settings().gateway_timeout_s + 2  # the longest a request is held (gateway.__main__)
    deployments = [d for d in render(K8S / "overlays" / overlay) if d["kind"] == "Deployment"]
    assert {d["metadata"]["name"] for d in deployments} >= {"sluice-gateway", "sluice-admin"}
    for d in deployments:
        pod = d["spec"]["template"]["spec"]
        (container,) = pod["containers"]
        command = container["lifecycle"]["preStop"]["exec"]["command"]
        assert command[0] == "sleep" and int(command[1]) >= 3, d["metadata"]["name"]
        assert int(command[1]) + drain_s < pod["terminationGracePeriodSeconds"], d["metadata"]["name"]
