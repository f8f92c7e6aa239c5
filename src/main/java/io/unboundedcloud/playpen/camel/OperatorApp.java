package io.unboundedcloud.playpen.camel;

import java.io.File;
import java.time.Clock;
import java.util.Map;
import java.util.Properties;

import org.apache.camel.CamelContext;
import org.apache.camel.main.Main;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

import io.fabric8.kubernetes.client.KubernetesClient;
import io.unboundedcloud.playpen.auth.FrontProxyAuthenticator;
import io.unboundedcloud.playpen.config.OperatorConfig;
import io.unboundedcloud.playpen.kube.AccessReviewer;
import io.unboundedcloud.playpen.kube.Allocator;
import io.unboundedcloud.playpen.kube.ApiCallCounter;
import io.unboundedcloud.playpen.kube.ClaimWriter;
import io.unboundedcloud.playpen.kube.KubeApiCall;
import io.unboundedcloud.playpen.kube.NodeCache;
import io.unboundedcloud.playpen.kube.PodCache;
import io.unboundedcloud.playpen.kube.ServingCertificate;
import io.unboundedcloud.playpen.kube.TrustBundleSource;
import io.unboundedcloud.playpen.model.AllocRequestParser;
import io.unboundedcloud.playpen.model.AllocResponses;
import io.unboundedcloud.playpen.model.Candidates;
import io.unboundedcloud.playpen.tls.ServingTls;

/**
 * The one place that wires the operator: builds every bean from the configuration and the shared
 * KubernetesClient, binds them by name, and runs the YAML routes in a Camel Main.
 */
public final class OperatorApp implements AutoCloseable {
    private static final Logger LOG = LoggerFactory.getLogger(OperatorApp.class);

    private final OperatorConfig config;
    private final KubernetesClient client;
    private final Clock clock;
    private final Map<String, String> env;
    private final ApiCallCounter calls = new ApiCallCounter();
    private Main main;
    private PodCache pods;
    private NodeCache nodes;
    private TrustBundleSource trust;
    private Allocator allocator;

    public OperatorApp(OperatorConfig config, KubernetesClient client, Clock clock, Map<String, String> env) {
        this.config = config;
        this.client = client;
        this.clock = clock;
        this.env = env;
    }

    /** Starts caches and routes; returns once the HTTPS listener is up. */
    public void start() throws Exception {
        ServingCertificate serving = new ServingCertificate(client, config.namespace(), config.tlsSecretName(),
                config.serviceName(), clock, calls);
        ServingCertificate.Material material = serving.ensure();

        pods = new PodCache(client, config.runnerNamespace());
        nodes = new NodeCache(client);
        trust = new TrustBundleSource(client, calls);
        pods.start();
        nodes.start();
        trust.start();

        ServingTls tls = new ServingTls(material.certificatePem(), material.privateKeyPem(), () -> trust.get().cas());
        AccessReviewer reviewer = new AccessReviewer(client, config.sarAllowedTtl(), config.sarDeniedTtl(),
                config.retryAfterSeconds(), calls);
        allocator = new Allocator(pods, nodes, new ClaimWriter(client, clock, calls),
                new Candidates(config.runnerLabelSelector()), config.retryAfterSeconds());
        ApiFlows flows = new ApiFlows(reviewer, new AllocRequestParser(config.controlPlaneVersions()), allocator,
                new AllocResponses(config.network(), config.redfishBaseUrl()), this::ready, config.retryAfterSeconds());

        main = new Main();
        main.configure().withName("playpen-operator");
        main.configure().withRoutesIncludePattern(routesPattern());
        main.configure().withJmxManagementStatisticsLevel(org.apache.camel.ManagementStatisticsLevel.Default);
        main.configure().withShutdownTimeout(5);
        Properties props = new Properties();
        props.setProperty("playpen.listen.host", config.listenHost().isEmpty() ? "0.0.0.0" : config.listenHost());
        props.setProperty("playpen.listen.port", String.valueOf(config.listenPort()));
        props.setProperty("playpen.reconcile.interval-ms", String.valueOf(config.reconcileInterval().toMillis()));
        main.setInitialProperties(props);
        main.bind("servingSslHandler", new NettyTls.SslHandlerFactory(tls));
        main.bind("servingSslContext", new NettyTls.ContextParameters(tls));
        main.bind("idleCloser", new NettyTls.IdleCloser(config.idleTimeout()));
        main.bind("playpenHttpBinding", new PlaypenHttpBinding());
        main.bind("frontDoor", new FrontDoor(new FrontProxyAuthenticator(trust, clock)));
        main.bind("apiFlows", flows);
        main.bind("replyWriter", new ReplyWriter(config.retryAfterSeconds()));
        main.bind("trustBundles", trust);
        main.start();
        LOG.info("playpen-operator serving https on {}:{} routes={}", config.listenHost(), config.listenPort(),
                routesPattern());
        serving.publishCaBundle(KubeApiCall.API_SERVICE_NAME, material.certificatePem());
    }

    String routesPattern() {
        File dir = new File(config.routesDir());
        if (dir.isDirectory()) {
            return "file:" + dir.getAbsolutePath() + "/*.camel.yaml";
        }
        LOG.info("routes folder {} not found; using the routes packaged in the jar", dir.getAbsolutePath());
        return "classpath:routes/*.camel.yaml";
    }

    /** Ready when the caches have synced and a valid trust bundle is loaded. */
    public boolean ready() {
        return pods != null && pods.hasSynced() && nodes.hasSynced() && trust.get().valid();
    }

    public CamelContext camelContext() {
        return main == null ? null : main.getCamelContext();
    }

    public ApiCallCounter apiCalls() {
        return calls;
    }

    public PodCache podCache() {
        return pods;
    }

    @Override
    public void close() {
        if (main != null) {
            try {
                main.stop();
            } catch (Exception e) {
                LOG.warn("error stopping Camel: {}", e.toString());
            }
        }
        if (trust != null) {
            trust.close();
        }
        if (nodes != null) {
            nodes.close();
        }
        if (pods != null) {
            pods.close();
        }
    }
}
