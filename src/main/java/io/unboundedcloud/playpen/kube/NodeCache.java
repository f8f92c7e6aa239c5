package io.unboundedcloud.playpen.kube;

import java.util.Optional;

import org.slf4j.LoggerFactory;

import io.fabric8.kubernetes.api.model.Node;
import io.fabric8.kubernetes.api.model.NodeAddress;
import io.fabric8.kubernetes.client.KubernetesClient;
import io.fabric8.kubernetes.client.informers.SharedIndexInformer;

/** Watch-fed nodes: the ExternalIP a claimed pod's endpoint is published on, and whether a pool pod's node is there and Ready. */
public final class NodeCache implements AutoCloseable {
    private final KubernetesClient client;
    private volatile SharedIndexInformer<Node> informer;
    private final java.util.List<Runnable> listeners = new java.util.concurrent.CopyOnWriteArrayList<>();

    public NodeCache(KubernetesClient client) {
        this.client = client;
    }

    public synchronized void start() {
        if (informer == null) {
            SharedIndexInformer<Node> inf = Informers.keepRetrying(client.nodes().runnableInformer(0), "nodes");
            inf.addEventHandler(new io.fabric8.kubernetes.client.informers.ResourceEventHandler<>() {
                @Override
                public void onAdd(Node node) {
                    changed();
                }

                @Override
                public void onUpdate(Node oldNode, Node newNode) {
                    changed();
                }

                @Override
                public void onDelete(Node node, boolean finalStateUnknown) {
                    // a node gone makes no idle pod usable
                }
            });
            informer = inf;
            inf.start();
        }
    }

    /** Told of every node the watch adds or changes (a node turning Ready or getting its ExternalIP). */
    public void addListener(Runnable listener) {
        listeners.add(listener);
    }

    private void changed() {
        for (Runnable l : listeners) {
            try {
                l.run();
            } catch (RuntimeException e) {
                LoggerFactory.getLogger(NodeCache.class).warn("node listener failed: {}", e.toString());
            }
        }
    }

    /** Synced and the watch is connected now: false while the API server is unreachable (readiness). */
    public boolean isWatching() {
        SharedIndexInformer<Node> inf = informer;
        return inf != null && inf.hasSynced() && inf.isWatching();
    }

    public boolean hasSynced() {
        SharedIndexInformer<Node> inf = informer;
        return inf != null && inf.hasSynced() && inf.isRunning();
    }

    /** The node as the watch last saw it; empty when unknown (or the cache is not started). */
    public Optional<Node> node(String nodeName) {
        SharedIndexInformer<Node> inf = informer;
        if (inf == null || nodeName == null || nodeName.isEmpty()) {
            return Optional.empty();
        }
        return Optional.ofNullable(inf.getStore().getByKey(nodeName));
    }

    /** The node's first ExternalIP, empty when the node is unknown or has none. */
    public Optional<String> externalIp(String nodeName) {
        SharedIndexInformer<Node> inf = informer;
        if (inf == null || nodeName == null || nodeName.isEmpty()) {
            return Optional.empty();
        }
        Node node = inf.getStore().getByKey(nodeName);
        if (node == null || node.getStatus() == null || node.getStatus().getAddresses() == null) {
            return Optional.empty();
        }
        for (NodeAddress a : node.getStatus().getAddresses()) {
            if ("ExternalIP".equals(a.getType()) && a.getAddress() != null && !a.getAddress().isBlank()) {
                return Optional.of(a.getAddress().trim());
            }
        }
        return Optional.empty();
    }

    @Override
    public synchronized void close() {
        if (informer != null) {
            informer.close();
            informer = null;
        }
    }
}
