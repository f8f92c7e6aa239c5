#!/usr/bin/env python3
"""Writes the alloc and discovery golden files from the reference operator's rules, not from our output.

Rules (internal/playpen/operator/operator.go at 9064e39): structs are written in field order, omitempty
fields only when set (pod.kubernetesVersion, endpoint.apiServerTCPPort); `redfish` is a map[string]string and
the discovery documents are map[string]any, so their keys are sorted; json.Encoder escapes < > & U+2028
U+2029 and appends "\\n". The control-plane kubeconfig is what clientcmd.Write makes of the input file
(kubeconfig/k3s-two-clusters.yaml), written out by hand below: sigs.k8s.io/yaml, keys sorted, plain scalars.
Run from this folder: python3 generate.py
"""
import json

WG = "AAECAwQFBgcICQoLDA0ODxAREhMUFRYXGBkaGxwdHh8="
PEM = "-----BEGIN CERTIFICATE-----\nTUlJQmZha2U=\n-----END CERTIFICATE-----\n"
GROUP = "playpen.unbounded-cloud.io"


def go_encode(value):
    text = json.dumps(value, ensure_ascii=False, separators=(",", ":"))
    for ch, esc in (("<", "\\u003c"), (">", "\\u003e"), ("&", "\\u0026"), ("\u2028", "\\u2028"), ("\u2029", "\\u2029")):
        text = text.replace(ch, esc)
    return text + "\n"


def runner(name, node, ip, port, arch, cert, redfish_url):
    return {
        "resourceType": "runner",
        "pod": {"namespace": "playpen", "name": name, "nodeName": node, "nodePublicIP": ip,
                "resourceType": "runner", "architecture": arch},
        "endpoint": {"host": ip, "wireGuardUDPPort": port, "externalTrafficPolicy": "HostPort"},
        "wireGuard": {"interface": "wg0", "serverPublicKey": WG, "serverAddress": "10.88.0.1/24",
                      "clientAddress": "10.88.0.2/32", "listenPort": 51820},
        "vxlan": {"interface": "vxlan0", "vni": 12001, "udpPort": 4789, "serverAddress": "10.88.0.1",
                  "clientAddress": "10.88.0.2"},
        "network": {"guestMAC": "52:54:00:aa:bb:01", "guestIPv4": "192.168.200.10", "subnetMask": "255.255.255.0",
                    "gatewayIPv4": "192.168.200.1", "dns": ["8.8.8.8"]},
        "redfish": dict(sorted({
            "url": redfish_url, "username": "", "password": "", "certPEM": cert, "deviceID": "1",
            "systemURL": redfish_url + "/redfish/v1/Systems/1",
            "serialConsoleStreamURI": "/redfish/v1/Systems/1/Oem/Unbounded/SerialConsole/Stream"}.items())),
        "controlPlane": {"kubernetesVersion": "", "kubeconfig": "", "apiServerURL": "", "guestAPIServerURL": ""},
    }


KUBECONFIG = """apiVersion: v1
clusters:
- cluster:
    certificate-authority-data: Q0EtREFUQQ==
    server: https://203.0.113.10:16443
    tls-server-name: 192.168.200.1
  name: default
- cluster:
    certificate-authority-data: Q0EtREFUQS0y
    server: https://203.0.113.10:16443
    tls-server-name: 192.168.200.1
  name: internal
contexts:
- context:
    cluster: default
    user: default
  name: default
- context:
    cluster: internal
    namespace: kube-system
    user: default
  name: internal
current-context: default
kind: Config
preferences: {}
users:
- name: default
  user:
    client-certificate-data: Q0xJRU5ULUNFUlQ=
    client-key-data: Q0xJRU5ULUtFWQ==
"""

CONTROL_PLANE = {
    "resourceType": "controlPlane",
    "pod": {"namespace": "playpen", "name": "playpen-control-plane-1.33.0-16443", "nodeName": "node-a",
            "nodePublicIP": "203.0.113.10", "resourceType": "controlPlane", "architecture": "amd64",
            "kubernetesVersion": "v1.33.0"},
    "endpoint": {"host": "203.0.113.10", "wireGuardUDPPort": 0, "apiServerTCPPort": 16443,
                 "externalTrafficPolicy": "HostPort"},
    "wireGuard": {"interface": "", "serverPublicKey": "", "serverAddress": "", "clientAddress": "", "listenPort": 0},
    "vxlan": {"interface": "", "vni": 0, "udpPort": 0, "serverAddress": "", "clientAddress": ""},
    "network": {"guestMAC": "", "guestIPv4": "", "subnetMask": "", "gatewayIPv4": "", "dns": None},
    "redfish": None,
    "controlPlane": {"kubernetesVersion": "v1.33.0", "kubeconfig": KUBECONFIG,
                     "apiServerURL": "https://203.0.113.10:16443", "guestAPIServerURL": "https://192.168.200.1:6443"},
}


def sorted_deep(value):
    if isinstance(value, dict):
        return {k: sorted_deep(value[k]) for k in sorted(value)}
    if isinstance(value, list):
        return [sorted_deep(v) for v in value]
    return value


GV = {"groupVersion": GROUP + "/v1alpha1", "version": "v1alpha1"}
API_GROUP = {"kind": "APIGroup", "apiVersion": "v1", "name": GROUP, "versions": [GV], "preferredVersion": GV}
API_RESOURCE_LIST = {"kind": "APIResourceList", "apiVersion": "v1", "groupVersion": GROUP + "/v1alpha1", "resources": [
    {"name": "allocs", "singularName": "alloc", "namespaced": False, "kind": "Alloc", "verbs": ["create"]},
    {"name": "deallocs", "singularName": "dealloc", "namespaced": False, "kind": "Dealloc", "verbs": ["create"]},
    # ours: POST .../renewals, after the reference's two resources
    {"name": "renewals", "singularName": "renewal", "namespaced": False, "kind": "Renewal", "verbs": ["create"]},
]}

FILES = {
    "alloc-runner.json": runner("playpen-runner-amd64-51820", "node-a", "203.0.113.10", 51820, "amd64", PEM,
                                "https://10.88.0.1:8443"),
    "alloc-runner-public-redfish.json": runner("playpen-runner-arm64-51821", "node-b", "198.51.100.7", 51821, "arm64",
                                               "", "https://redfish.example.com:9443"),
    "alloc-control-plane.json": CONTROL_PLANE,
    "discovery-api-group.json": sorted_deep(API_GROUP),
    "discovery-api-resource-list.json": sorted_deep(API_RESOURCE_LIST),
}

for name, doc in FILES.items():
    with open(name, "w", encoding="utf-8", newline="") as f:
        f.write(go_encode(doc))
