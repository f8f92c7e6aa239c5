package io.unboundedcloud.playpen.kube;

import java.time.Clock;
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
    /** What the listener is told when a loaded bundle has no CA within its validity period at the clock. */
    public static final String NO_CA_VALID_NOW = "none of its CAs is valid now (all expired or not yet valid)";

    private final KubernetesClient client;
    private final ApiCallCounter calls;
    private final Clock clock;
    private final AtomicLong generation = new AtomicLong();
    private final AtomicReference<TrustBundle> current =
            new AtomicReference<>(TrustBundle.invalid("trust bundle not loaded yet", 0));
    private volatile Consumer<String> onInvalid = reason -> { };
    private volatile Runnable afterRefresh = () -> { };
    private volatile String lastData = null;
    /** The loaded bundle's lack of a CA valid now was told: not again until it has one again or another is loaded. */
    private boolean toldNoCaValidNow;
    /** Watch events applied so far: a backstop GET answered after a watch event is older than that event. */
    private long watchEvents;
    private SharedIndexInformer<ConfigMap> informer;

    public TrustBundleSource(KubernetesClient client, ApiCallCounter calls) {
        this(client, calls, Clock.systemUTC());
    }

    /** {@code clock}: the time at which the bundle's CAs are judged valid (tests move it). */
    public TrustBundleSource(KubernetesClient client, ApiCallCounter calls, Clock clock) {
        this.client = client;
        this.calls = calls;
        this.clock = clock;
    }

    /**
     * Called with the reason whenever a new bundle turns out invalid (for events and metrics), and once when the
     * loaded bundle has no CA valid now: when it is loaded so, or at the first {@link #refresh()} after its last CA
     * valid expired.
     */
    public void onInvalid(Consumer<String> listener) {
        this.onInvalid = listener;
    }

    /** Run after every {@link #refresh()}: a periodic check that needs no thread of its own rides along. */
    public void afterRefresh(Runnable check) {
        this.afterRefresh = check;
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

    /**
     * Re-reads the ConfigMap; returns whether the bundle can vouch for anyone now: valid, with a CA valid at the
     * clock (as readiness and the trust-bundle metric judge it).
     */
    public boolean refresh() {
        try {
            long seen = watchEventsSoFar();
            calls.count(KubeApiCall.CONFIGMAPS_GET);
            applyFromGet(client.configMaps().inNamespace(NAMESPACE).withName(KubeApiCall.TRUST_CONFIGMAP_NAME).get(), seen);
        } catch (RuntimeException e) {
            LOG.warn("cannot read {}/{}: {}", NAMESPACE, KubeApiCall.TRUST_CONFIGMAP_NAME, e.toString());
        }
        checkValidNow();
        try {
            afterRefresh.run();
        } catch (RuntimeException e) {
            LOG.warn("check after the trust refresh failed: {}", e.toString());
        }
        return current.get().validAt(clock.instant());
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
        toldNoCaValidNow = false;
        if (tb.valid()) {
            LOG.info("trust bundle loaded cas={} allowedNames={}", tb.cas().size(), tb.allowedNames());
            checkValidNow();
        } else {
            LOG.warn("trust bundle invalid: {}; every /apis request is refused until it is fixed", tb.invalidReason());
            onInvalid.accept(tb.invalidReason());
        }
    }

    /**
     * A valid bundle none of whose CAs is valid at the clock refuses every request as an invalid one does: the listener
     * is told once, and again only after the bundle had a CA valid now meanwhile or another bundle was loaded.
     */
    private synchronized void checkValidNow() {
        TrustBundle tb = current.get();
        if (!tb.valid()) {
            return; // told when it was loaded
        }
        if (tb.validAt(clock.instant())) {
            toldNoCaValidNow = false;
            return;
        }
        if (toldNoCaValidNow) {
            return;
        }
        toldNoCaValidNow = true;
        LOG.warn("trust bundle invalid: {}; every /apis request is refused until it is fixed", NO_CA_VALID_NOW);
        onInvalid.accept(NO_CA_VALID_NOW);
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
