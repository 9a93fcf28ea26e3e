"""The two deployments of ``k8s/``, built once per test module."""

from __future__ import annotations

import pytest

from tests.k8s.manifests import K8S, OVERLAY, Doc, build


@pytest.fixture(scope="module")
def default() -> list[Doc]:
    """What ``kubectl apply -k k8s/`` applies."""
    return build(K8S)


@pytest.fixture(scope="module")
def overlay() -> list[Doc]:
    """What ``kubectl apply -k k8s/ingress-nginx/`` applies."""
    return build(OVERLAY)
