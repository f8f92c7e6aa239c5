#!/usr/bin/env bash
# Gives the nodes of a kind cluster the two things the playpen operator needs from nodes and kind does not provide:
#  1. an ExternalIP address: the operator hands out <node ExternalIP>:<hostPort> and never claims a pod on a node
#     without one. kind's kubelets report only an InternalIP and would remove any other address on their next status
#     update, so each kubelet is switched to --cloud-provider=external (it then leaves addresses alone) and restarted,
#     and the node's own InternalIP is added as its ExternalIP (reachable from the machine running kind on Linux;
#     Docker Desktop on macOS and Windows runs the nodes in a VM whose addresses the host cannot reach);
#  2. /dev/net/tun, which runner pods mount (hostPath CharDevice): created in the node container when missing.
# Usage: kind/prepare-nodes.sh [CLUSTER_NAME]   (default playpen; kubectl's current context must be that cluster)
# Safe to run again.
set -euo pipefail
cluster="${1:-playpen}"
# read line by line, not with mapfile: macOS ships bash 3.2, which has none
nodes=()
while IFS= read -r n; do
  if [ -n "$n" ]; then
    nodes+=("$n")
  fi
done < <(kind get nodes --name "$cluster")
if [ "${#nodes[@]}" -eq 0 ]; then
  echo "no nodes found for kind cluster '$cluster'" >&2
  exit 1
fi

for n in "${nodes[@]}"; do
  docker exec "$n" sh -c 'test -c /dev/net/tun || { mkdir -p /dev/net && mknod -m 0666 /dev/net/tun c 10 200; }'
  docker exec "$n" sh -c '
    f=/var/lib/kubelet/kubeadm-flags.env
    if ! grep -q -- "--cloud-provider=external" "$f"; then
      sed -i "s|^KUBELET_KUBEADM_ARGS=\"|KUBELET_KUBEADM_ARGS=\"--cloud-provider=external |" "$f"
      grep -q -- "--cloud-provider=external" "$f"
      systemctl restart kubelet
    fi'
done
kubectl wait --for=condition=Ready nodes --all --timeout=180s

external_ip() {
  kubectl get node "$1" -o jsonpath='{.status.addresses[?(@.type=="ExternalIP")].address}'
}

for n in "${nodes[@]}"; do
  if [ -z "$(external_ip "$n")" ]; then
    ip=$(kubectl get node "$n" -o jsonpath='{.status.addresses[?(@.type=="InternalIP")].address}' | cut -d' ' -f1)
    kubectl patch node "$n" --subresource=status --type=json \
      -p "[{\"op\":\"add\",\"path\":\"/status/addresses/-\",\"value\":{\"type\":\"ExternalIP\",\"address\":\"$ip\"}}]"
  fi
done

# a kubelet still managing addresses would drop the ExternalIP at its next status update (every 10 s)
sleep 15
for n in "${nodes[@]}"; do
  ip=$(external_ip "$n")
  if [ -z "$ip" ]; then
    echo "node $n lost its ExternalIP again: its kubelet still manages node addresses" >&2
    exit 1
  fi
  echo "node $n: ExternalIP $ip"
done
