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
    private long lastResourceVersion = -1;
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
        informer = client.configMaps().inNamespace(NAMESPACE).withName(KubeApiCall.TRUST_CONFIGMAP_NAME).runnableInformer(0);
        informer.addEventHandler(new ResourceEventHandler<>() {
            @Override
            public void onAdd(ConfigMap cm) {
                apply(cm);
            }

            @Override
            public void onUpdate(ConfigMap oldCm, ConfigMap cm) {
                apply(cm);
            }

            @Override
            public void onDelete(ConfigMap cm, boolean unknown) {
                apply(null);
            }
        });
        informer.start();
        refresh();
    }

    /** Re-reads the ConfigMap; returns whether the bundle is valid. */
    public boolean refresh() {
        try {
            calls.count(KubeApiCall.CONFIGMAPS_GET);
            apply(client.configMaps().inNamespace(NAMESPACE).withName(KubeApiCall.TRUST_CONFIGMAP_NAME).get());
        } catch (RuntimeException e) {
            LOG.warn("cannot read {}/{}: {}", NAMESPACE, KubeApiCall.TRUST_CONFIGMAP_NAME, e.toString());
        }
        return current.get().valid();
    }

    private synchronized void apply(ConfigMap cm) {
        long rv = resourceVersion(cm);
        if (cm != null && rv >= 0 && rv < lastResourceVersion) {
            // a backstop GET that started before the watch delivered a newer version: keep the newer one
            return;
        }
        lastResourceVersion = cm == null ? -1 : rv;
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

    private static long resourceVersion(ConfigMap cm) {
        try {
            return cm == null ? -1 : Long.parseLong(cm.getMetadata().getResourceVersion());
        } catch (RuntimeException e) {
            return -1;
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
