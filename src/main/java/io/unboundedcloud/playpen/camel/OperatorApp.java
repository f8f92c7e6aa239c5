package io.unboundedcloud.playpen.camel;

import java.io.File;
import java.time.Clock;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Properties;

import org.apache.camel.CamelContext;
import org.apache.camel.main.Main;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

import io.fabric8.kubernetes.client.KubernetesClient;
import io.micrometer.core.instrument.Gauge;
import io.unboundedcloud.playpen.auth.FrontProxyAuthenticator;
import io.unboundedcloud.playpen.config.PortInUse;
import io.unboundedcloud.playpen.config.Flag;
import io.unboundedcloud.playpen.config.OperatorConfig;
import io.unboundedcloud.playpen.kube.AccessReviewer;
import io.unboundedcloud.playpen.kube.Allocator;
import io.unboundedcloud.playpen.kube.ApiCallCounter;
import io.unboundedcloud.playpen.kube.ClaimWriter;
import io.unboundedcloud.playpen.kube.EventRecorder;
import io.unboundedcloud.playpen.kube.KubeClients;
import io.unboundedcloud.playpen.kube.LeaderElection;
import io.unboundedcloud.playpen.kube.PoolHandOut;
import io.unboundedcloud.playpen.kube.PoolReconciler;
import io.unboundedcloud.playpen.kube.PoolSignals;
import io.unboundedcloud.playpen.kube.PoolStatuses;
import io.unboundedcloud.playpen.model.PoolPlanner;
import io.unboundedcloud.playpen.kube.TtlExpirer;
import io.unboundedcloud.playpen.kube.WatchContinuity;
import io.unboundedcloud.playpen.model.ManagedPods;
import io.unboundedcloud.playpen.model.PodTemplates;
import io.unboundedcloud.playpen.model.TtlPolicy;
import io.unboundedcloud.playpen.kube.KubeApiCall;
import io.unboundedcloud.playpen.kube.NodeCache;
import io.unboundedcloud.playpen.kube.PodCache;
import io.unboundedcloud.playpen.kube.ServingCertificate;
import io.unboundedcloud.playpen.kube.ServingCertificateReload;
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

    /**
     * Under load the audit writer writes what has queued every 10 ms; after a second without a line it sleeps until
     * the next one, which it writes at once ({@link BatchingExecutor}).
     */
    static final long AUDIT_INTERVAL_MILLIS = 10;
    static final long AUDIT_QUIET_MILLIS = 1000;
    /** How long a stopping replica waits for the answers under way to close their connections before Camel stops. */
    static final java.time.Duration DRAIN_WAIT = java.time.Duration.ofSeconds(2);
    private final OperatorConfig config;
    private final KubernetesClient client;
    /** The pod cache's own client ({@link KubeClients#forWatch}); closed after the cache. */
    private KubernetesClient podWatchClient;
    private final Clock clock;
    private final Map<String, String> env;
    private final ApiCallCounter calls = new ApiCallCounter();
    private Main main;
    /** The audit line's writer thread (routes/audit.camel.yaml); null until the routes are set up. */
    private BatchingExecutor auditWriter;
    private PodCache pods;
    private NodeCache nodes;
    private TrustBundleSource trust;
    private Allocator allocator;
    private EventRecorder events;
    private LeaderElection leader;
    private LeaderRoutePolicy leaderRoutes;
    private PoolReconciler pool;
    private PoolStatuses poolStatuses;
    private TtlExpirer ttl;
    private final OperatorMetrics metrics = new OperatorMetrics();
    private ManagementServer management;
    private HealthServer probes;
    private io.unboundedcloud.playpen.model.OwnerHashes owners;
    private ConnectionGuard connections;
    private ServingCertificateReload servingReload;
    private io.unboundedcloud.playpen.kube.CapacityQueue waiting;
    private WatchStream.Registry watchStreams;
    /** The client of users' watches of allocations; closed after them. */
    private KubernetesClient allocWatchClient;
    /** Watches of allocations one replica keeps open at once (each holds a watch of pods on the API server). */
    static final int MAX_WATCHES = 500;
    /** Watches of allocations one user keeps open on one replica at once. */
    static final int MAX_WATCHES_PER_USER = 32;
    private io.unboundedcloud.playpen.kube.ReplicaLanes lanes;
    private final WaitingWake waitingWake = new WaitingWake();
    private volatile WatchContinuity watches = new WatchContinuity();

    /**
     * Forwards pod and node events to the waiting queue once it exists (listeners must be added before the caches
     * start): a node turning Ready or getting its ExternalIP can make an idle pod usable.
     */
    private static final class WaitingWake implements PodCache.Listener, Runnable {
        volatile io.unboundedcloud.playpen.kube.CapacityQueue target;

        @Override
        public void onPodEvent(PodCache.Change change, io.fabric8.kubernetes.api.model.Pod pod) {
            io.unboundedcloud.playpen.kube.CapacityQueue q = target;
            if (q != null) {
                q.onPodEvent(change, pod);
            }
        }

        @Override
        public void run() {
            io.unboundedcloud.playpen.kube.CapacityQueue q = target;
            if (q != null) {
                q.requestDrain();
            }
        }
    }

    /** The queue of allocs waiting for capacity (tests, metrics). */
    public io.unboundedcloud.playpen.kube.CapacityQueue waitingQueue() {
        return waiting;
    }

    public OperatorApp(OperatorConfig config, KubernetesClient client, Clock clock, Map<String, String> env) {
        this.config = config;
        this.client = client;
        this.clock = clock;
        this.env = env;
    }

    /** Starts caches and routes; returns once the HTTPS listener is up. */
    public void start() throws Exception {
        ServingCertificate serving = new ServingCertificate(client, config.namespace(), config.tlsSecretName(),
                config.serviceName(), clock, calls, config.servingCertRenewal());
        ServingCertificate.Material material = serving.ensure();

        // the cache's index needs only the kinds; the hand-out rules below need the cache
        Candidates kinds = new Candidates(config.runnerLabelSelector());
        // the pod cache lists and watches through a client of its own, whose I/O thread applies each event to the
        // cache and the claim ledger (KubeClients.forWatch): no thread wake-up per event in every replica
        podWatchClient = KubeClients.forWatch(client);
        pods = new PodCache(podWatchClient, config.runnerNamespace(), kinds::kindKey);
        nodes = new NodeCache(client);
        trust = new TrustBundleSource(client, calls, clock);

        events = new EventRecorder(client, clock, calls, 1000, config.eventBurst(), config.eventRateInterval());
        leader = new LeaderElection(client, config.leaderElect(), config.leaderElectionNamespace(),
                config.leaderElectionLeaseName(), leaseIdentity(), config.leaseDuration(), config.renewDeadline(),
                config.retryPeriod());
        TtlPolicy leases = new TtlPolicy(config.playpenTtl(), config.leases().maxLifetime());
        lanes = new io.unboundedcloud.playpen.kube.ReplicaLanes(leader.identity());
        ClaimWriter writer = new ClaimWriter(client, clock, calls, leases, lanes.self());
        PodTemplates templates = new PodTemplates(config, env);
        String selectorWarning = runnerSelectorWarning(config, templates);
        if (selectorWarning != null) {
            LOG.warn("{}", selectorWarning);
        }
        PoolPlanner planner = new PoolPlanner(config, templates);
        // every replica learns back-off, time-to-ready and demand from the watch; the leader acts on them
        PoolSignals signals = new PoolSignals(planner, nodes, clock, config.pools());
        pool = new PoolReconciler(client, config, pods, nodes, planner, signals, leader::isLeader, calls, clock);
        // the leader's refused creates ride on its Lease writes, where the replicas that do not lead read them
        io.unboundedcloud.playpen.kube.LeaseRefusals leaseRefusals = new io.unboundedcloud.playpen.kube.LeaseRefusals(
                client, config.leaderElectionNamespace(), config.leaderElectionLeaseName(), config.runnerNamespace(),
                calls);
        leader.annotateLeaseWith(io.unboundedcloud.playpen.kube.LeaseRefusals.annotations(leader.identity(),
                pool::publishedRefusals));
        poolStatuses = new PoolStatuses(pods, pool, clock, leaseRefusals);
        Candidates candidates = new Candidates(config.runnerLabelSelector(), new PoolHandOut(planner, nodes, pods));
        ttl = new TtlExpirer(pods, writer, leases, clock, leader::isLeader, config.reconcileInterval());
        pods.addListener(signals);
        pods.addListener(pool);
        pods.addListener(ttl);
        // the queue of allocs waiting for capacity is built with the allocator below; pod events wake it
        pods.addListener(waitingWake);
        nodes.addListener(waitingWake);
        // which other replicas are allocating, from the claims they write: each walks its own lane first
        pods.addListener(lanes);
        leaderRoutes = new LeaderRoutePolicy();
        leader.addListener(leaderRoutes);
        leader.addListener(new LeadershipWork(new LeadershipWork.Expiries(ttl::scheduleAll, ttl::onLeadingAgain),
                new LeadershipWork.Pools(pool::onLeadership, pool::onLeadershipLost, pool::onLeadingAgain),
                () -> publishCaBundle(serving, null)));
        ObservedEvents observed = new ObservedEvents(events, config, env);
        // Events and audit lines of expiries and the pools' side effects go through their routes (ttl-expired,
        // pool-created, pool-deleted, pool-unhealthy-allocated, pool-backoff, pool-exhausted,
        // pool-create-refused, trust-bundle-invalid) and passes through
        // pool-pass; the bridge records the Events (and an expiry's audit line) directly while Camel or the route is
        // not running
        AuditLog auditLog = new AuditLog(clock);
        FlowBridge bridge = new FlowBridge(observed, auditLog);
        pool.addObserver(bridge);
        ttl.addObserver(bridge);
        // refills run the pool-pass route once Camel runs, so its steps are the same for every pass
        pool.runPassesWith(() -> bridge.poolPass(pool));
        pool.addObserver(metrics);
        ttl.addObserver(metrics);
        trust.onInvalid(bridge::trustBundleInvalid);
        // start the watches only now that every listener is registered: fabric8 delivers the initial LIST's
        // events asynchronously, and a listener added later would miss them (the pool's refill-on-claim
        // trigger needs to have seen each pod idle once)
        pods.start();
        nodes.start();
        trust.start();

        ServingTls tls = new ServingTls(material.certificatePem(), material.privateKeyPem(), () -> trust.get().cas(),
                config.tlsProvider());
        LOG.info("serving TLS 1.3 with {}", tls.describe());
        AccessReviewer reviewer = new AccessReviewer(client, config.sarAllowedTtl(), config.sarDeniedTtl(),
                config.retryAfterSeconds(), calls);
        allocator = new Allocator(pods, nodes, writer,
                candidates, config.retryAfterSeconds(), config.maxAllocsPerUser(), lanes, leases, clock);
        waiting = new io.unboundedcloud.playpen.kube.CapacityQueue(allocator, new io.unboundedcloud.playpen.kube.CapacityQueue.Limits(
                config.waitingLimits().perUser(), config.waitingLimits().total(), config.retryAfterSeconds()));
        waitingWake.target = waiting;
        waiting.addObserver(metrics);
        AllocResponses responses = new AllocResponses(config.network(), config.redfishBaseUrl(),
                config.retryAfterSeconds(), leases);
        // the installation's owner-hash key (a Secret shared by every replica): claims name their owner with it
        io.unboundedcloud.playpen.model.OwnerHashes owners = new io.unboundedcloud.playpen.model.OwnerHashes(
                io.unboundedcloud.playpen.kube.OwnerHashKey.ensure(client, config.namespace(), config.ownerHashSecretName(), calls));
        this.owners = owners;
        ApiFlows flows = new ApiFlows(reviewer, new AllocRequestParser(config.controlPlaneVersions(), config.leases()),
                allocator, responses, this::notReady, config.retryAfterSeconds(), waiting);
        flows.events(observed);
        io.unboundedcloud.playpen.kube.LegacyOwnerClaims legacyClaims =
                new io.unboundedcloud.playpen.kube.LegacyOwnerClaims(client, pods, calls);
        flows.owners(owners, legacyClaims);
        // allocs turned away for lack of a pod are demand too (the demand-aware buffer); the pass that grows a pool
        // for it comes now, not at the next interval (a pool with no pod has no claim that would ask for one)
        flows.onUnserved(cmd -> {
            signals.unserved(io.unboundedcloud.playpen.model.PoolTarget.of(cmd));
            if (config.pools().demandBuffer()) {
                pool.requestRefill();
            }
        });
        flows.pooled(cmd -> planner.keeps(io.unboundedcloud.playpen.model.PoolTarget.of(cmd)));
        flows.backoffs(cmd -> signals.backoff(io.unboundedcloud.playpen.model.PoolTarget.of(cmd)).view(), clock);
        io.unboundedcloud.playpen.kube.Renewer renewer =
                new io.unboundedcloud.playpen.kube.Renewer(client, pods, leases, clock, calls, config.retryAfterSeconds(),
                        config.maxAllocsPerUser());
        // the TTL timer follows a renewal made here at once (other replicas' renewals reach it through the watch)
        renewer.addObserver((result, r) -> {
            if (r != null && r.written()) {
                ttl.onPodEvent(PodCache.Change.UPDATED, r.pod());
            }
        });
        renewer.addObserver(metrics);
        metrics.bind(config, pods, templates, reviewer, calls, leader, events);
        metrics.bindWaiting(config, templates, waiting);
        metrics.bindAllocator(allocator);
        metrics.bindPools(planner, poolStatuses::current);
        metrics.bindCreateRefusals(planner, pool);

        main = new Main();
        main.configure().withName("playpen-operator");
        main.configure().withRoutesIncludePattern(routesPattern());
        main.configure().withJmxManagementStatisticsLevel(org.apache.camel.ManagementStatisticsLevel.Default);
        main.configure().withShutdownTimeout(5);
        main.configure().setJmxEnabled(true);
        Properties props = new Properties();
        // the route's endpoint is a URI: an IPv6 host goes in brackets there, or the URI has no host at all
        String listenHost = config.listenHost().isEmpty() ? "0.0.0.0" : config.listenHost();
        props.setProperty("playpen.listen.host", listenHost.contains(":") ? "[" + listenHost + "]" : listenHost);
        props.setProperty("playpen.listen.port", String.valueOf(config.listenPort()));
        props.setProperty("playpen.reconcile.interval-ms", String.valueOf(config.reconcileInterval().toMillis()));
        props.setProperty("playpen.serving-cert.check-interval-ms",
                String.valueOf(config.servingCertRenewal().checkInterval().toMillis()));
        // camel-netty pins each connection to one thread of this pool (default 2 x cores + 1): alloc blocks on
        // API calls, so a small pool would serialise concurrent requests from kube-apiserver's connections
        props.setProperty("camel.component.netty-http.maximumPoolSize", String.valueOf(config.httpWorkerThreads()));
        main.setInitialProperties(props);
        main.bind("servingSslHandler", new NettyTls.SslHandlerFactory(tls));
        main.bind("servingSslContext", new NettyTls.ContextParameters(tls));
        main.bind("idleCloser", new NettyTls.IdleCloser(config.idleTimeout()));
        main.bind("playpenHttpBinding", new PlaypenHttpBinding());
        FrontProxyAuthenticator authenticator = new FrontProxyAuthenticator(trust, clock);
        // the count of refused certificates left out of the log is written by the next verdict or, when none
        // comes, by the periodic trust refresh
        trust.afterRefresh(authenticator::logRefusalsLeftOut);
        connections = new ConnectionGuard(authenticator, new ConnectionGuard.Limits(config.maxConnections(),
                config.maxUnauthenticatedConnections(), config.requestHeaderTimeout(), config.requestBodyTimeout(),
                ConnectionGuard.UNAUTHENTICATED_HEAD_BYTES, ConnectionGuard.UNAUTHENTICATED_BODY_BYTES,
                io.unboundedcloud.playpen.api.RequestBodies.MAX_BODY_BYTES));
        main.bind("connectionGuard", connections);
        main.bind("frontDoor", new FrontDoor(authenticator));
        main.bind("apiFlows", flows);
        // watches hold connections as waiting allocs do: together they leave connections for everything else
        watchStreams = new WatchStream.Registry(Math.max(1, Math.min(MAX_WATCHES, config.maxConnections()
                - config.waitingLimits().total() - 1)), MAX_WATCHES_PER_USER, config.retryAfterSeconds());
        metrics.bindWatches(watchStreams);
        // users' watches of allocations watch pods through a client of their own: the claims' requests never wait
        // behind them for a connection or an I/O thread
        allocWatchClient = KubeClients.forWatch(client);
        main.bind("allocsApi", new AllocsApi(reviewer, pods, nodes, clock, leases,
                config.retryAfterSeconds(), responses, owners,
                new io.unboundedcloud.playpen.kube.ClaimReads(pods, writer),
                new io.unboundedcloud.playpen.kube.ClaimWriter(allocWatchClient, clock, calls), watchStreams));
        main.bind("poolsApi", new PoolsApi(reviewer, poolStatuses, clock, config.retryAfterSeconds(),
                config.pools().maxSurge()));
        main.bind("renewalFlows", new RenewalFlows(new AllocRequestParser(config.controlPlaneVersions(), config.leases()),
                renewer, config.playpenTtl()));
        main.bind("replyWriter", new ReplyWriter(config.retryAfterSeconds(), metrics));
        main.bind("trustBundles", trust);
        main.bind("leaderOnly", leaderRoutes);
        main.bind("poolReconciler", pool);
        main.bind("ttlExpirer", ttl);
        main.bind("lostClaims", new io.unboundedcloud.playpen.kube.LostClaimSweeper(pods, writer));
        main.bind("legacyOwnerClaims", legacyClaims);
        main.bind("caBundle", (CaBundlePublisher) known -> publishCaBundle(serving, known));
        main.bind("servingCertificate", serving);
        servingReload = new ServingCertificateReload(serving, tls, KubeApiCall.API_SERVICE_NAME, clock,
                config.servingCertRenewal().publishGrace());
        main.bind("servingCertificateReload", servingReload);
        // the certificate served from the start may be one the caBundle does not trust yet: not ready until it does
        servingReload.checkServedTrust();
        main.bind("kubeEvents", observed);
        main.bind("auditLog", auditLog);
        auditWriter = new BatchingExecutor("audit-writer", AUDIT_INTERVAL_MILLIS, AUDIT_QUIET_MILLIS, 256, 1000);
        main.bind("auditWriter", auditWriter);
        RouteMetrics.bind(main, metrics.registry());
        // Camel's health-check registry: its context check plus our readiness (routes, consumers and producers
        // are left out: the leader-only routes are stopped on purpose on every other replica)
        main.configure().health().withEnabled(true).withRoutesEnabled(false);
        main.configure().health().setConsumersEnabled(false);
        main.configure().health().setProducersEnabled(false);
        // the HTTPS listener is the one Camel binds
        PortInUse.listening("--listen-addr", config.listenHost(), config.listenPort(), false, () -> {
            main.start();
            return main;
        });
        if (config.routesReload()) {
            // reload only the edited file (Camel's default would tear down every route, HTTPS included), and keep
            // the running routes when the edit cannot be loaded
            main.getCamelContext().addService(
                    new KeepingRouteReload(new File(config.routesDir()).getAbsolutePath(), "*.camel.yaml",
                            flows.routeWaits()));
        }
        // requests the connection guard refuses from their head never reach a flow: they are counted and their
        // audit line is sent here
        org.apache.camel.ProducerTemplate refusalAudits = main.getCamelContext().createProducerTemplate();
        connections.onRefusal((flow, refusal) -> {
            if (flow != null) {
                metrics.refusedAtTheDoor(flow.name().toLowerCase(java.util.Locale.ROOT), refusal.result(),
                        refusal.code());
            }
            refusalAudits.send("direct:audit", exchange -> {
                AuditLog.refusedAtTheDoor(exchange, flow,
                        refusal instanceof FrontProxyAuthenticator.Refused r ? r.why() : refusal.getMessage());
                exchange.setProperty(AuditLog.OUTCOME, refusal.result());
            });
        });
        bridge.start(main.getCamelContext());
        org.apache.camel.health.HealthCheckRegistry health = org.apache.camel.health.HealthCheckRegistry.get(main.getCamelContext());
        if (health != null) {
            health.register(new ReadinessHealthCheck(this::notReady));
        }
        LOG.info("playpen-operator serving https on {}:{} routes={}", config.listenHost(), config.listenPort(),
                routesPattern());
        leader.start();
        Gauge.builder("playpen_ready", this, app -> app.ready() ? 1 : 0)
                .description("1 while this replica is ready: caches synced, a valid trust bundle with a CA valid now, and a"
                + " serving certificate the APIService's caBundle trusts (or no APIService)").register(metrics.registry());
        Gauge.builder("playpen_trust_bundle_valid", trust, t -> t.get().validAt(clock.instant()) ? 1 : 0)
                .description("1 while a valid front-proxy trust bundle is loaded with a CA valid now")
                .register(metrics.registry());
        if (config.healthPort() >= 0) {
            probes = PortInUse.listening("--health-addr", config.healthHost(), config.healthPort(), false,
                    () -> new HealthServer(config.healthHost(), config.healthPort(), this::notReady,
                            config.retryAfterSeconds()));
            probes.start();
        }
        if (!config.managementHost().isEmpty() && config.managementPort() >= 0) {
            management = PortInUse.listening("--management-addr", config.managementHost(), config.managementPort(),
                    false, () -> new ManagementServer(config.managementHost(), config.managementPort(), metrics::scrape,
                            this::camelReady, ManagementAccess.of(config.managementAllowedOrigins(),
                                    config.managementAllowedHosts())));
            management.start();
        }
    }

    /**
     * The WARN for a --runner-label-selector that the runner pods this operator's pools create do not match, null
     * when they do. It is taken, as the Go operator takes it, but such pods fill the pool and count as ready and
     * idle while none is ever handed out.
     */
    static String runnerSelectorWarning(OperatorConfig config, PodTemplates templates) {
        List<String> outside = new ArrayList<>();
        Map<String, String> labels = Map.of();
        for (String arch : List.of(ManagedPods.AMD64, ManagedPods.ARM64)) {
            int count = arch.equals(ManagedPods.AMD64) ? config.runnerAmd64Count() : config.runnerArm64Count();
            Map<String, String> own = templates.runner(arch, config.runnerPorts().start()).getMetadata().getLabels();
            if ((count > 0 || config.pools().maxIdle() > 0) && !config.runnerLabelSelector().matches(own)) {
                outside.add(arch);
                labels = own;
            }
        }
        if (outside.isEmpty()) {
            return null;
        }
        String shown = labels.entrySet().stream().limit(2).map(e -> e.getKey() + "=" + e.getValue())
                .collect(java.util.stream.Collectors.joining(", "));
        return "--" + Flag.RUNNER_LABEL_SELECTOR.flagName() + "=" + config.runnerLabelSelector() + " does not match the "
                + String.join(" and ", outside) + " runner pods this operator creates (labels " + shown + ", ...): they"
                + " fill the pools and count as ready and idle, but none is handed out, so every alloc of such a runner"
                + " is answered 503; give a selector they match, such as the default "
                + Flag.RUNNER_LABEL_SELECTOR.defaultValue();
    }

    /** How this installation's claims name their owner (tests compare annotations with it). */
    public io.unboundedcloud.playpen.model.OwnerHashes ownerHashes() {
        return owners;
    }

    /** The probe listener's address, or null when it is disabled. */
    public java.net.InetSocketAddress healthAddress() {
        return probes == null ? null : probes.address();
    }

    /** The management listener's address, or null when it is disabled. */
    public java.net.InetSocketAddress managementAddress() {
        return management == null ? null : management.address();
    }

    private void publishCaBundle(ServingCertificate serving, ServingCertificate.Material known) {
        try {
            ServingCertificate.Bundle holds = serving.publishCaBundle(KubeApiCall.API_SERVICE_NAME, known);
            // the leader need not wait for its next check to learn that the caBundle trusts what it serves
            if (servingReload != null) {
                servingReload.observed(holds);
            }
        } catch (RuntimeException e) {
            LOG.warn("cannot publish the APIService caBundle: {}", e.toString());
        }
    }

    /** Bean behind the ca-bundle route: publishes from {@code known}, the Secret as the step before read it (null: read it). */
    @FunctionalInterface
    public interface CaBundlePublisher {
        void publish(@org.apache.camel.Body ServingCertificate.Material known);
    }

    /** Unique per process: the pod name (or host name) plus a random suffix, so restarts never reuse a holder id. */
    private String leaseIdentity() {
        String base = env.getOrDefault("POD_NAME", env.getOrDefault("HOSTNAME", "playpen-operator"));
        return base + "-" + java.util.UUID.randomUUID().toString().substring(0, 8);
    }

    /** The HTTPS listener's connection bounds (counters for tests and metrics). */
    public ConnectionGuard connectionGuard() {
        return connections;
    }

    /** Picks up a replaced or renewed serving certificate (tests read when it last switched). */
    public ServingCertificateReload servingCertificateReload() {
        return servingReload;
    }

    public LeaderElection leaderElection() {
        return leader;
    }

    public PoolReconciler poolReconciler() {
        return pool;
    }

    /** Every pool as this replica sees it (the pools resource reads the same). */
    public PoolStatuses poolStatuses() {
        return poolStatuses;
    }

    public EventRecorder events() {
        return events;
    }

    public String routesPattern() {
        File dir = new File(config.routesDir());
        if (dir.isDirectory()) {
            // the real path: Camel's file pattern finds nothing under a directory reached through a symbolic link
            // (a mounted volume, a checked-out link), and the operator would then run without a single route
            try {
                return "file:" + dir.toPath().toRealPath() + "/*.camel.yaml";
            } catch (java.io.IOException e) {
                return "file:" + dir.getAbsolutePath() + "/*.camel.yaml";
            }
        }
        LOG.info("routes folder {} not found; using the routes packaged in the jar", dir.getAbsolutePath());
        return "classpath:routes/*.camel.yaml";
    }

    /**
     * Readiness as Camel's health-check registry sees it (the management listener's /observe/health): every
     * readiness check UP, i.e. the Camel context started and {@link #ready()}.
     */
    boolean camelReady() {
        CamelContext c = camelContext();
        if (c == null) {
            return false;
        }
        java.util.Collection<org.apache.camel.health.HealthCheck.Result> results =
                org.apache.camel.health.HealthCheckHelper.invokeReadiness(c);
        return !results.isEmpty() && results.stream()
                .allMatch(r -> r.getState() == org.apache.camel.health.HealthCheck.State.UP);
    }

    /**
     * Ready when the caches are synced and watching, a valid trust bundle is loaded with at least one CA valid
     * now (with all of them expired or not valid yet, every request would be refused), and the APIService's caBundle
     * trusts the serving certificate (kube-apiserver could not verify it otherwise; no APIService: nobody does). A
     * watch that is being reopened (the informers do that every 5 to 10 minutes) keeps the replica ready for
     * {@link WatchContinuity#GRACE}.
     */
    public boolean ready() {
        return notReady() == null;
    }

    /**
     * Why this replica is not {@link #ready()}: what is missing and what to check, as {@code /readyz} answers it;
     * null while it is ready.
     */
    public String notReady() {
        if (pods == null || !pods.hasSynced() || !nodes.hasSynced()) {
            return Readiness.CACHES_NOT_SYNCED;
        }
        io.unboundedcloud.playpen.auth.TrustBundle bundle = trust.get();
        if (!bundle.validAt(clock.instant())) {
            return Readiness.noTrustBundle(bundle.valid() ? TrustBundleSource.NO_CA_VALID_NOW : bundle.invalidReason());
        }
        if (!watches.connected(pods.isWatching() && nodes.isWatching())) {
            return Readiness.WATCHES_DOWN;
        }
        return servingReload == null ? null : Readiness.servedCertificate(servingReload.servedTrust(),
                config.namespace() + "/" + config.tlsSecretName());
    }

    /** Tests: the clock ({@link System#nanoTime} by default) by which a gap in the watches is timed for readiness. */
    void timeWatchesWith(java.util.function.LongSupplier nanoTime) {
        watches = new WatchContinuity(nanoTime, WatchContinuity.GRACE);
    }

    public CamelContext camelContext() {
        return main == null ? null : main.getCamelContext();
    }

    public PodCache podCache() {
        return pods;
    }

    public Allocator allocator() {
        return allocator;
    }

    /** The watches of allocations this replica streams now (tests). */
    int openWatches() {
        return watchStreams == null ? 0 : watchStreams.openCount();
    }

    public NodeCache nodeCache() {
        return nodes;
    }

    @Override
    public void close() {
        // stop taking requests and background work first, then the executors they feed, then the caches
        closeQuietly(management);
        closeQuietly(probes);
        // kube-apiserver's open connections (which kube-proxy keeps on this pod whatever the endpoints say) are told
        // to go elsewhere: each answer from now on closes its connection, idle ones are closed now
        if (connections != null) {
            connections.drain();
        }
        // leadership ends at once; the Lease is given up on a thread of its own, waited for last (an API server that
        // does not answer must not hold the answers to waiting requests, the watches' ends or Camel's stop)
        if (leader != null) {
            leader.stepDown();
        }
        // the last requests' audit lines are written at once, while the route that writes them still runs
        if (auditWriter != null) {
            auditWriter.prompt();
        }
        // waiting requests are answered (503, retry elsewhere) while the routes can still write the answers: closed
        // after Camel, their connections were cut once its graceful stop timed out
        closeQuietly(waiting);
        // so do watches: each ends (its last chunk), and its client watches again from where it was, elsewhere
        closeQuietly(watchStreams);
        closeQuietly(allocWatchClient);
        if (connections != null) {
            // the answers under way go out on their connections, for a short while; a request still sent once Camel
            // stops is answered a Status 503 with Retry-After (client-go retries it), never netty-http's bare 503
            try {
                if (!connections.awaitDrained(DRAIN_WAIT)) {
                    LOG.info("{} connections still open {} s after the shutdown began; Camel stops them",
                            connections.openConnections(), DRAIN_WAIT.toSeconds());
                }
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
            }
            connections.refuseRequests(io.unboundedcloud.playpen.api.ApiException.unavailable(
                    io.unboundedcloud.playpen.kube.CapacityQueue.SHUTTING_DOWN, config.retryAfterSeconds()));
        }
        if (main != null) {
            try {
                main.stop();
            } catch (Exception e) {
                LOG.warn("error stopping Camel: {}", e.toString());
            }
        }
        closeQuietly(auditWriter);
        closeQuietly(leader);
        closeQuietly(pool);
        closeQuietly(ttl);
        if (leaderRoutes != null) {
            leaderRoutes.close();
        }
        closeQuietly(trust);
        closeQuietly(nodes);
        closeQuietly(pods);
        closeQuietly(podWatchClient);
        closeQuietly(events);
    }

    private static void closeQuietly(AutoCloseable c) {
        if (c == null) {
            return;
        }
        try {
            c.close();
        } catch (Exception e) {
            LOG.warn("error closing {}: {}", c.getClass().getSimpleName(), e.toString());
        }
    }

}
