"""metrics-server on the real node: the resource metrics API (`metrics.k8s.io`) an HPA reads.

It runs as a node component, inside the node's namespaces like CoreDNS: it scrapes the kubelet's
/metrics/resource on the node's address (a client certificate from the playground CA; the kubelet takes
x509 only) and serves on NODE_IP:4443 with a certificate for its Service name. The apiserver reaches it
through the aggregation layer (its front-proxy client certificate; --enable-aggregator-routing, so it
dials the EndpointSlice's address over the host's link to the node, not a ClusterIP): a selector-less
Service, an EndpointSlice naming NODE_IP:4443 and the APIService v1beta1.metrics.k8s.io with the CA.
"""

from __future__ import annotations

import base64
from pathlib import Path
from typing import Any

from generator.playground.node import spec as S

NAME = "metrics-server"
NAMESPACE = "kube-system"
PORT = 4443
API_SERVICE = "v1beta1.metrics.k8s.io"
SERVICE_DNS = f"{NAME}.{NAMESPACE}.svc"
RESOLUTION = "10s"  # metrics-server's minimum; its kubelet timeout must stay under 90% of it
LABELS = {"app.kubernetes.io/name": NAME, "app.kubernetes.io/managed-by": "dockyard-playground"}


def argv(binary_dir: Path, spec: S.NodeSpec, ca_file: str, serving: tuple[str, str],
         kubelet_client: tuple[str, str]) -> list[str]:
    kubeconfig = spec.kubeconfig(NAME)
    return [
        str(binary_dir / NAME),
        f"--bind-address={S.NODE_IP}", f"--secure-port={PORT}",
        f"--tls-cert-file={serving[0]}", f"--tls-private-key-file={serving[1]}",
        f"--kubeconfig={kubeconfig}", f"--authentication-kubeconfig={kubeconfig}",
        f"--authorization-kubeconfig={kubeconfig}",
        "--kubelet-preferred-address-types=InternalIP", f"--kubelet-certificate-authority={ca_file}",
        f"--kubelet-client-certificate={kubelet_client[0]}", f"--kubelet-client-key={kubelet_client[1]}",
        f"--metric-resolution={RESOLUTION}", "--kubelet-request-timeout=5s", "--profiling=false", "--v=1",
    ]


def objects(ca_file: str) -> list[tuple[str, dict[str, Any]]]:
    """(collection path, object) to create once the node has registered, in order."""
    ca = base64.b64encode(Path(ca_file).read_bytes()).decode()
    meta = {"name": NAME, "namespace": NAMESPACE, "labels": LABELS}
    return [
        (f"/api/v1/namespaces/{NAMESPACE}/services", {
            "apiVersion": "v1", "kind": "Service", "metadata": meta,
            "spec": {"ports": [{"name": "https", "port": 443, "targetPort": PORT, "protocol": "TCP"}]}}),
        (f"/apis/discovery.k8s.io/v1/namespaces/{NAMESPACE}/endpointslices", {
            "apiVersion": "discovery.k8s.io/v1", "kind": "EndpointSlice", "addressType": "IPv4",
            "metadata": {**meta, "labels": {**LABELS, "kubernetes.io/service-name": NAME,
                                            "endpointslice.kubernetes.io/managed-by": "dockyard-playground"}},
            "endpoints": [{"addresses": [S.NODE_IP], "conditions": {"ready": True}, "nodeName": S.NODE_NAME}],
            "ports": [{"name": "https", "port": PORT, "protocol": "TCP"}]}),
        ("/apis/apiregistration.k8s.io/v1/apiservices", {
            "apiVersion": "apiregistration.k8s.io/v1", "kind": "APIService",
            "metadata": {"name": API_SERVICE, "labels": LABELS},
            "spec": {"group": "metrics.k8s.io", "version": "v1beta1", "caBundle": ca,
                     "service": {"namespace": NAMESPACE, "name": NAME, "port": 443},
                     "groupPriorityMinimum": 100, "versionPriority": 100}}),
    ]


def available(api_service: dict[str, Any]) -> tuple[bool, str]:
    """The aggregator's Available condition of the APIService (it probes metrics-server itself)."""
    conds = (api_service.get("status") or {}).get("conditions") or []
    cond: dict[str, Any] = next((c for c in conds if c.get("type") == "Available"), {})
    ok = cond.get("status") == "True"
    return ok, f"{API_SERVICE} Available={cond.get('status', '?')}" + ("" if ok else f" {cond.get('message', '')}")
