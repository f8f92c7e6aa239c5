package io.unboundedcloud.playpen.kube;

import java.util.concurrent.atomic.AtomicLong;
import java.util.concurrent.atomic.AtomicReference;
import java.util.function.Consumer;
import java.util.function.Supplier;

import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

import io.fabric8.kubernetes.api.model.ConfigMap;
import io.fabric8.kubernetes.client.KubernetesClient;
import io.fabric8.kubernetes.client.informers.ResourceEventHandler;
import io.fabric8.kubernetes.client.informers.SharedIndexInformer;
import io.unboundedcloud.playpen.auth.TrustBundle;
import io.unboundedcloud.playpen.auth.TrustBundleParser;

/**
 * Keeps the front-proxy trust bundle current: a watch on kube-system/extension-apiserver-authentication
 * pushes changes at once, and {@link #refresh()} (the trust-refresh route) re-reads it as a backstop.
 */
public final class TrustBundleSource implements Supplier<TrustBundle>, AutoCloseable {
    public static final String NAMESPACE = "kube-system";
    private static final Logger LOG = LoggerFactory.getLogger(TrustBundleSource.class);

    private final KubernetesClient client;
    private final ApiCallCounter calls;
    private final AtomicLong generation = new AtomicLong();
    private final AtomicReference<TrustBundle> current =
            new AtomicReference<>(TrustBundle.invalid("trust bundle not loaded yet", 0));
    private volatile Consumer<String> onInvalid = reason -> { };
    private volatile String lastData = null;
    /** Watch events applied so far: a backstop GET answered after a watch event is older than that event. */
    private long watchEvents;
    private SharedIndexInformer<ConfigMap> informer;

    public TrustBundleSource(KubernetesClient client, ApiCallCounter calls) {
        this.client = client;
        this.calls = calls;
    }

    /** Called with the reason whenever a new bundle turns out invalid (for events and metrics). */
    public void onInvalid(Consumer<String> listener) {
        this.onInvalid = listener;
    }

    public synchronized void start() {
        if (informer != null) {
            return;
        }
        informer = Informers.keepRetrying(client.configMaps().inNamespace(NAMESPACE).withName(KubeApiCall.TRUST_CONFIGMAP_NAME)
                .runnableInformer(0), "trust bundle ConfigMap");
        informer.addEventHandler(new ResourceEventHandler<>() {
            @Override
            public void onAdd(ConfigMap cm) {
                applyFromWatch(cm);
            }

            @Override
            public void onUpdate(ConfigMap oldCm, ConfigMap cm) {
                applyFromWatch(cm);
            }

            @Override
            public void onDelete(ConfigMap cm, boolean unknown) {
                applyFromWatch(null);
            }
        });
        informer.start();
        refresh();
    }

    /** Re-reads the ConfigMap; returns whether the bundle is valid. */
    public boolean refresh() {
        try {
            long seen = watchEventsSoFar();
            calls.count(KubeApiCall.CONFIGMAPS_GET);
            applyFromGet(client.configMaps().inNamespace(NAMESPACE).withName(KubeApiCall.TRUST_CONFIGMAP_NAME).get(), seen);
        } catch (RuntimeException e) {
            LOG.warn("cannot read {}/{}: {}", NAMESPACE, KubeApiCall.TRUST_CONFIGMAP_NAME, e.toString());
        }
        return current.get().valid();
    }

    synchronized long watchEventsSoFar() {
        return watchEvents;
    }

    /** A watch event (ADD, UPDATE, or DELETE with {@code cm} null): always the newest state. */
    synchronized void applyFromWatch(ConfigMap cm) {
        watchEvents++;
        apply(cm);
    }

    /**
     * The answer of a backstop GET that started after {@code watchEventsAtStart} watch events: ignored when the
     * watch has delivered anything since, as the GET may then be older (a ConfigMap the watch saw deleted or
     * replaced, or "not found" for one the watch saw created).
     */
    synchronized void applyFromGet(ConfigMap cm, long watchEventsAtStart) {
        if (watchEvents != watchEventsAtStart) {
            return;
        }
        apply(cm);
    }

    private void apply(ConfigMap cm) {
        String data = cm == null || cm.getData() == null ? null : cm.getData().toString();
        if (data != null && data.equals(lastData) && current.get().valid()) {
            return;
        }
        lastData = data;
        TrustBundle tb = TrustBundleParser.parse(cm == null ? null : cm.getData(), generation.incrementAndGet());
        current.set(tb);
        if (tb.valid()) {
            LOG.info("trust bundle loaded cas={} allowedNames={}", tb.cas().size(), tb.allowedNames());
        } else {
            LOG.warn("trust bundle invalid: {}; every /apis request is refused until it is fixed", tb.invalidReason());
            onInvalid.accept(tb.invalidReason());
        }
    }

    @Override
    public TrustBundle get() {
        return current.get();
    }

    @Override
    public synchronized void close() {
        if (informer != null) {
            informer.close();
            informer = null;
        }
    }
}
