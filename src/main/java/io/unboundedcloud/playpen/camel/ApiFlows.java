package io.unboundedcloud.playpen.camel;

import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.stream.Collectors;

import org.apache.camel.Body;
import org.apache.camel.Exchange;
import org.apache.camel.ExchangeProperty;
import org.apache.camel.Header;
import org.apache.camel.component.netty.NettyConstants;

import io.netty.channel.Channel;
import io.netty.channel.ChannelFutureListener;
import io.netty.channel.ChannelHandlerContext;

import io.fabric8.kubernetes.api.model.Pod;
import io.unboundedcloud.playpen.api.ApiException;
import io.unboundedcloud.playpen.api.ApiPaths;
import io.unboundedcloud.playpen.api.Discovery;
import io.unboundedcloud.playpen.api.Json;
import io.unboundedcloud.playpen.api.RequestBodies;
import io.unboundedcloud.playpen.auth.Identity;
import io.unboundedcloud.playpen.config.Flag;
import io.unboundedcloud.playpen.kube.AccessReviewer;
import io.unboundedcloud.playpen.kube.Allocator;
import io.unboundedcloud.playpen.kube.CapacityQueue;
import io.unboundedcloud.playpen.kube.LegacyOwnerClaims;
import io.unboundedcloud.playpen.model.AllocCommand;
import io.unboundedcloud.playpen.model.AllocRequestParser;
import io.unboundedcloud.playpen.model.AllocResponses;
import io.unboundedcloud.playpen.model.GoStrings;
import io.unboundedcloud.playpen.model.Hashes;
import io.unboundedcloud.playpen.model.ManagedPods;
import io.unboundedcloud.playpen.model.OwnerHashes;
import io.unboundedcloud.playpen.model.PoolBackoff;
import io.unboundedcloud.playpen.model.PoolStatus;
import io.unboundedcloud.playpen.model.PoolTarget;
import io.unboundedcloud.playpen.model.ResourceType;

/**
 * Thin adapters between the HTTP routes and the domain beans: bind exchange parts, return domain values, and leave
 * the decisions the routes branch on (and the audit line reads) in exchange properties ({@link AuditLog}).
 */
public final class ApiFlows {
    private static final byte[] NO_BODY = new byte[0];
    /** Exchange property: the validated {@link AllocCommand} (holds the key hash, never the key). */
    public static final String COMMAND = "playpenCommand";

    private ObservedEvents events;
    private OwnerHashes owners;
    private LegacyOwnerClaims legacyClaims;
    /** Told about allocs turned away for lack of an idle pod (the demand-aware buffer counts them as demand). */
    private volatile java.util.function.Consumer<AllocCommand> unserved = cmd -> {
    };
    private volatile java.util.function.Predicate<AllocCommand> pooled = cmd -> true;
    /** The back-off of the pool of an alloc's kind (NONE: not backing off), and the clock it is read at. */
    private volatile java.util.function.Function<AllocCommand, PoolBackoff.View> backoff = cmd -> PoolBackoff.View.NONE;
    private volatile java.time.Clock clock = java.time.Clock.systemUTC();

    private final AccessReviewer reviewer;
    private final AllocRequestParser parser;
    private final Allocator allocator;
    private final AllocResponses responses;
    /** Why the replica is not ready, or null while it is. */
    private final java.util.function.Supplier<String> notReady;
    private final int retryAfterSeconds;
    private final CapacityQueue waiting;
    private final RouteWaits routeWaits;

    /** An alloc with waitSeconds waits in {@code waiting} for capacity instead of a 503. */
    public ApiFlows(AccessReviewer reviewer, AllocRequestParser parser, Allocator allocator, AllocResponses responses,
            java.util.function.Supplier<String> notReady, int retryAfterSeconds, CapacityQueue waiting) {
        this.waiting = waiting;
        this.routeWaits = new RouteWaits(retryAfterSeconds);
        this.reviewer = reviewer;
        this.parser = parser;
        this.allocator = allocator;
        this.responses = responses;
        this.notReady = notReady;
        this.retryAfterSeconds = retryAfterSeconds;
    }

    public void authorize(@ExchangeProperty(FrontDoor.IDENTITY) Identity identity) {
        reviewer.authorize(identity);
    }

    /**
     * A dealloc is reviewed for {@code create} on {@code deallocs}, the resource its POST names, as the Go operator
     * reviews it: a Role that may only release allocations (a clean-up job's) keeps working.
     */
    public void authorizeDealloc(@ExchangeProperty(FrontDoor.IDENTITY) Identity identity) {
        reviewer.authorize(identity, AccessReviewer.DEALLOCS, "create");
    }

    /** Exchange property: how the body's field names are checked ({@link AllocRequestParser.FieldValidation}). */
    public static final String FIELD_VALIDATION = "playpenFieldValidation";

    /**
     * The options of a POST (kube-apiserver's CreateOptions), read before its body. A POST that asks for a dry run
     * ({@code ?dryRun=All}) is refused (400): this server carries out no dry run, and doing the request for real
     * would surprise the caller who asked for one. {@code fieldValidation} (Strict, Warn, Ignore; any other value is
     * 422) says how the body's field names are checked, in {@link #FIELD_VALIDATION}.
     */
    public void createOptions(@ExchangeProperty(FrontDoor.TARGET) String target,
            @ExchangeProperty(AuditLog.VERB) String verb, Exchange exchange) {
        refuseDryRun(target, verb);
        exchange.setProperty(FIELD_VALIDATION,
                AllocRequestParser.FieldValidation.of(ApiPaths.queryValue(target, "fieldValidation")));
    }

    private static void refuseDryRun(String target, String verb) {
        if (!ApiPaths.asksDryRun(target)) {
            return;
        }
        String what = switch (verb == null ? "" : verb) {
            case "deallocate" -> "dry-run deallocations are not supported: nothing was released";
            case "renew" -> "dry-run renewals are not supported: nothing was renewed";
            default -> "dry-run allocations are not supported: nothing was allocated";
        };
        throw ApiException.badRequest(what + "; send the request without dryRun to carry it out");
    }

    /** The request body once its charset (UTF-8 only, 415) and size (64 KiB, 413) are acceptable. */
    public byte[] readBody(@Body byte[] body,
            @ExchangeProperty(PlaypenHttpBinding.ORIGINAL_CONTENT_TYPE) String contentType) {
        return RequestBodies.admit(contentType, body);
    }

    /**
     * The validated alloc; field names that name no field exactly become {@code Warning} headers of the answer
     * ({@link ReplyWriter#WARNINGS}), also when the request is refused.
     */
    public AllocCommand parseAlloc(@Body byte[] body, @Header("Idempotency-Key") String key, Exchange exchange) {
        return parser.parseAlloc(body, key, ReplyWriter.warnings(exchange), fieldValidation(exchange));
    }

    /** The POST's fieldValidation option (Warn when {@link #createOptions} did not run). */
    static AllocRequestParser.FieldValidation fieldValidation(Exchange exchange) {
        AllocRequestParser.FieldValidation v =
                exchange.getProperty(FIELD_VALIDATION, AllocRequestParser.FieldValidation.class);
        return v == null ? AllocRequestParser.FieldValidation.WARN : v;
    }

    /** How claims name their owner: the installation's keyed hash, and the legacy claims to move to it. */
    void owners(OwnerHashes owners, LegacyOwnerClaims legacyClaims) {
        this.owners = owners;
        this.legacyClaims = legacyClaims;
    }

    /**
     * The caller's claims that still carry the legacy (unkeyed) owner hash are rewritten to the keyed one, before
     * the quota counts the caller's claims (step of the alloc route; nothing to do once they are all moved). The
     * link of the caller's two hashes is held until the exchange is done (answered or failed, also after a wait
     * for capacity), so the allocation's counts have it.
     */
    public void adoptLegacyClaims(@ExchangeProperty(FrontDoor.IDENTITY) Identity who, Exchange exchange) {
        if (who != null && legacyClaims != null) {
            OwnerHashes.Owner owner = owners.of(who.user());
            LegacyOwnerClaims claims = legacyClaims;
            exchange.getExchangeExtension().addOnCompletion(new org.apache.camel.support.SynchronizationAdapter() {
                @Override
                public void onDone(Exchange done) {
                    claims.release(owner);
                }
            });
            claims.adopt(owner);
        }
    }

    void onUnserved(java.util.function.Consumer<AllocCommand> hook) {
        this.unserved = hook;
    }

    /**
     * Whether a pool of this operator keeps the kind an alloc asks for: the 503's advice depends on it, at once and
     * after a wait in vain.
     */
    void pooled(java.util.function.Predicate<AllocCommand> keeps) {
        this.pooled = keeps;
        waiting.afterWait(cmd -> backingOff(cmd, backoffOf(cmd), clock.instant()) + whereToLook(cmd),
                cmd -> backingOffRetryAfter(backoffOf(cmd), clock.instant()));
    }

    /** The back-off of the pool of the alloc's kind (NONE when no pool keeps that kind). */
    private PoolBackoff.View backoffOf(AllocCommand cmd) {
        return pooled.test(cmd) ? backoff.apply(cmd) : PoolBackoff.View.NONE;
    }

    /**
     * The Retry-After of a "no idle" 503 while the pool backs off ({@code b}, read at {@code now}): the pause left,
     * when longer (else 0).
     */
    private int backingOffRetryAfter(PoolBackoff.View b, java.time.Instant now) {
        return b.backingOff() ? (int) Math.max(retryAfterSeconds, b.remainingSeconds(now)) : 0;
    }

    /**
     * That the pool of the alloc's kind is backing off ({@code b}, read at {@code now}), and why a pod did not come
     * (empty when it is not).
     */
    private String backingOff(AllocCommand cmd, PoolBackoff.View b, java.time.Instant now) {
        return b.backingOff() ? backingOffAdvice(PoolStatus.name(PoolTarget.of(cmd)), b, now) : "";
    }

    /**
     * The last words of a "no idle" 503, at once or after a wait: where to see which pools have idle pods, or, for
     * a kind no pool keeps, that none will come.
     */
    private String whereToLook(AllocCommand cmd) {
        return pooled.test(cmd) ? CapacityQueue.POOLS_ADVICE : noPoolAdvice(cmd);
    }

    /** Where the back-off of an alloc's pool is read: a 503 while it backs off says so instead of "try again". */
    void backoffs(java.util.function.Function<AllocCommand, PoolBackoff.View> views, java.time.Clock clock) {
        this.backoff = views;
        this.clock = clock;
    }

    /** Events go through the routes; this is where pods deallocated outside {@link #deleteClaimed} go. */
    void events(ObservedEvents events) {
        this.events = events;
    }

    /**
     * Replay or claim (kube/Allocator: exactly once per key), now or (waitSeconds) once a pod is claimable: the
     * allocation, with {@value AuditLog#OUTCOME} set to {@code allocated} (a pod was claimed now) or
     * {@code replayed}; a conflicting reuse of the key is a 409. The claim records the keyed hash of the caller's
     * user name (owner) and counts against their quota. A CompletionStage makes this step asynchronous in Camel: a
     * waiting request holds no thread, and the rest of the route runs when the future completes. A client that
     * closes its connection leaves the queue.
     */
    public CompletableFuture<Allocator.Allocation> allocate(AllocCommand cmd, Exchange exchange,
            @Header(NettyConstants.NETTY_CHANNEL_HANDLER_CONTEXT) ChannelHandlerContext ctx) {
        exchange.setProperty(COMMAND, cmd);
        exchange.setProperty(AuditLog.KEY_HASH_PREFIX, cmd.keyHashPrefix());
        Identity who = exchange.getProperty(FrontDoor.IDENTITY, Identity.class);
        String ownerHash = who == null ? null : owners.of(who.user()).current();
        return claim(cmd, ownerHash, ctx, exchange).thenApply(a -> {
            if (ctx != null && !ctx.channel().isActive() && allocator.release(a, cmd)) {
                // the client is gone before its answer: the new claim went back to the pool instead of waiting
                // for its TTL (and counting against the user's quota); the audit line's outcome is the answer's
                // result, clientClosedRequest, as for every failed exchange. One that could not go back (the API
                // server refused the take-back) stays with its key and goes on as an allocation, audited so
                throw new ApiException(499, "ClientClosedRequest", "the client closed the connection before the "
                        + "answer; the pod was not kept");
            }
            exchange.setProperty(AuditLog.ALLOCATION_ID, a.pod().getMetadata().getName());
            exchange.setProperty(AuditLog.OUTCOME, a.replay() ? "replayed" : "allocated");
            if (!a.replay()) {
                exchange.getExchangeExtension().addOnCompletion(new ReleaseUnanswered(a, cmd));
            }
            return a;
        });
    }

    /**
     * A new claim whose answer turns out not to be a 2xx (a step after the claim failed, or the route was stopped
     * under it) was handed to nobody: it goes back to the pool, as the claim of a client gone before its answer does
     * (a replay is never taken back: its claim was answered before). It runs on the thread of the request's
     * connection, also after a wait for capacity ({@link #connectionThread}), never on the waiting queue's dispatcher.
     */
    private final class ReleaseUnanswered extends org.apache.camel.support.SynchronizationAdapter {
        private final Allocator.Allocation allocation;
        private final AllocCommand cmd;

        ReleaseUnanswered(Allocator.Allocation allocation, AllocCommand cmd) {
            this.allocation = allocation;
            this.cmd = cmd;
        }

        @Override
        public void onDone(Exchange done) {
            Integer code = done.getMessage().getHeader(Exchange.HTTP_RESPONSE_CODE, Integer.class);
            if (done.isFailed() || code != null && code / 100 != 2) {
                allocator.release(allocation, cmd, "not-answered");
            }
        }
    }

    /** The waits for capacity a reload of their routes ends. */
    RouteWaits routeWaits() {
        return routeWaits;
    }

    private CompletableFuture<Allocator.Allocation> claim(AllocCommand cmd, String ownerHash, ChannelHandlerContext ctx,
            Exchange exchange) {
        try {
            if (cmd.waitSeconds() <= 0) {
                try {
                    return CompletableFuture.completedFuture(allocator.allocate(cmd, ownerHash));
                } catch (ApiException e) {
                    if (noIdle(e)) {
                        unserved.accept(cmd);
                        PoolBackoff.View b = backoffOf(cmd);
                        if (b.backingOff()) {
                            java.time.Instant now = clock.instant();
                            throw e.withAdvice(backingOff(cmd, b, now) + whereToLook(cmd))
                                    .withRetryAfter(backingOffRetryAfter(b, now));
                        }
                        String again = pooled.test(cmd) ? tryAgainAdvice(retryAfterSeconds, parser.maxWaitSeconds())
                                : "";
                        throw e.withAdvice(again + whereToLook(cmd));
                    }
                    throw e;
                }
            }
            // only a request that waits needs its routes: a reload of them ends its wait
            List<org.apache.camel.Route> routes = RouteWaits.routesOf(exchange);
            routeWaits.admit(routes);
            CapacityQueue.Ticket ticket = waiting.await(cmd, ownerHash);
            CompletableFuture<Allocator.Allocation> result = ticket.result();
            routeWaits.track(ticket, routes);
            // a wait in vain was turned away for lack of a pod too: demand the claims do not show
            result.whenComplete((a, e) -> {
                Throwable cause = e instanceof java.util.concurrent.CompletionException c ? c.getCause() : e;
                if (cause instanceof ApiException api && noIdle(api)) {
                    unserved.accept(cmd);
                }
            });
            Channel channel = ctx == null ? null : ctx.channel();
            if (result.isDone() || channel == null) {
                return result;
            }
            ChannelFutureListener gone = f -> ticket.subscription().leave();
            channel.closeFuture().addListener(gone);
            result.whenComplete((a, e) -> {
                channel.closeFuture().removeListener(gone);
            });
            // the rest of the route runs where the wait ended unless handed on: on a dispatcher of the waiting
            // queue, whose next hand-out would wait for it (the take-back of a claim answered with an error, or of
            // a client gone, is an API call)
            return result.whenCompleteAsync((a, e) -> {
            }, connectionThread(ctx));
        } catch (RuntimeException e) {
            return CompletableFuture.failedFuture(e);
        }
    }

    /**
     * The thread of the connection's requests (one of --http-worker-threads), where a request that did not wait is
     * answered. A task handed to it while the listener stops still runs: Camel waits (up to 10 s) for those threads
     * to end as it stops, and each runs what it has queued before it ends; one handed to it after they have ended
     * runs on the caller. So a take-back is not dropped at shutdown; one the process's exit cuts short leaves its
     * claim to its TTL, as a take-back the API server refuses does.
     */
    private static java.util.concurrent.Executor connectionThread(ChannelHandlerContext ctx) {
        io.netty.util.concurrent.EventExecutor thread = ctx.executor();
        return task -> {
            try {
                thread.execute(task);
            } catch (java.util.concurrent.RejectedExecutionException stopped) {
                task.run();
            }
        };
    }

    /** The 503 of an alloc that found no idle pod (at once or after its wait). */
    private static boolean noIdle(ApiException e) {
        return e.code() == 503 && e.getMessage() != null && e.getMessage().startsWith("no idle");
    }

    /**
     * What to do after an immediate "no idle pods" 503 of a kind a pool keeps, appended to the Go operator's words
     * before {@link #whereToLook}: when to try again (the Retry-After header's value; kubectl does not retry by
     * itself) and, unless waiting is off, how to wait in line instead.
     */
    static String tryAgainAdvice(int retryAfterSeconds, int maxWaitSeconds) {
        String again = "; try again in " + retryAfterSeconds + (retryAfterSeconds == 1 ? " second" : " seconds");
        String wait = maxWaitSeconds <= 0 ? ""
                : ", or add \"waitSeconds\": <seconds> (a number, up to " + maxWaitSeconds
                        + ") to the request to wait in line for one";
        return again + wait;
    }

    /**
     * The advice instead of {@link #tryAgainAdvice} while the pool backs off: its new pods keep failing to become
     * ready, so a pod will not come in a second; since when, when it creates again, and where to see why.
     */
    static String backingOffAdvice(String pool, PoolBackoff.View b, java.time.Instant now) {
        String next = b.pausedAt(now)
                ? "it creates again in " + b.remainingSeconds(now) + " s (then one pod at a time until one is ready), "
                        + "so trying again sooner will not help"
                : "it creates one pod at a time until one is ready, so a pod may take a while";
        return "; the pool " + pool + " is backing off: " + b.failures() + " new pod(s) in a row never became ready, "
                + "the last at " + b.nextCreateAt().minus(b.delay()).truncatedTo(java.time.temporal.ChronoUnit.SECONDS)
                + ", and " + next + "; kubectl get pool " + pool + " -o yaml (condition Degraded, reason BackOff) "
                + "shows it, and the operator's Warning Event BackOff why its pods failed";
    }

    /**
     * The advice instead when no pool of this operator keeps that kind (its count flag is 0, as for control planes
     * by default): trying again or waiting brings nothing unless someone makes such a pod outside the operator.
     */
    static String noPoolAdvice(AllocCommand cmd) {
        Flag count = cmd.resourceType() != ResourceType.RUNNER ? Flag.CONTROL_PLANE_COUNT
                : ManagedPods.ARM64.equals(cmd.architecture()) ? Flag.RUNNER_ARM64_COUNT : Flag.RUNNER_AMD64_COUNT;
        return "; this operator keeps no pool of them (--" + count.flagName() + " is 0), so trying again or waiting will not bring"
                + " one: ask its administrators for that pool; kubectl get pools lists the pools it keeps";
    }

    /** The Kubernetes Event of a new claim (step of the alloc route's "allocated" branch). */
    public List<KubeEvent> allocatedEvents(@Body Allocator.Allocation allocation,
            @ExchangeProperty(COMMAND) AllocCommand cmd) {
        return events.allocatedEvents(allocation, cmd);
    }

    public HttpReply allocated(Allocator.Allocation allocation) {
        return HttpReply.json(Json.encode(responses.build(allocation.pod(), allocation.externalIp())),
                allocation.replay() ? "replayed" : "allocated");
    }

    /**
     * The key hash of a dealloc. Like the reference, a non-blank Idempotency-Key header means the body is never
     * looked at (not its charset, size or JSON); without it, an empty body means the key is missing.
     */
    public String parseDealloc(@Body byte[] body, @Header("Idempotency-Key") String key,
            @ExchangeProperty(PlaypenHttpBinding.ORIGINAL_CONTENT_TYPE) String contentType, Exchange exchange) {
        if (key != null && !GoStrings.trimSpace(key).isEmpty()) {
            return parser.parseDealloc(NO_BODY, key);
        }
        byte[] admitted = RequestBodies.admit(contentType, body);
        if (jsonBlank(admitted)) {
            // Go's json.Decoder sees io.EOF, which the reference lets through to its "key required" answer
            throw ApiException.badRequest(AllocRequestParser.RELEASE_KEY_REQUIRED);
        }
        return parser.parseDealloc(admitted, null, ReplyWriter.warnings(exchange), fieldValidation(exchange));
    }

    /** Empty or JSON whitespace only (space, tab, CR, LF): what Go's json.Decoder reads as end of input. */
    static boolean jsonBlank(byte[] body) {
        for (byte b : body) {
            if (b != ' ' && b != '\t' && b != '\r' && b != '\n') {
                return false;
            }
        }
        return true;
    }

    /**
     * Deletes the pods claimed with this key hash (kube/Allocator), only those {@code guard} lets go when it is set
     * (a delete by id: that allocation's pod alone); returns them, with {@value AuditLog#OUTCOME} {@code deallocated},
     * {@code wait-cancelled} (no pod was claimed, but a request of the key waiting for capacity here was ended) or
     * {@code unknown-key}.
     */
    public List<Pod> deleteClaimed(@Body String keyHash,
            @ExchangeProperty(AllocsApi.DELETE_GUARD) java.util.function.Predicate<Pod> guard, Exchange exchange) {
        exchange.setProperty(AuditLog.KEY_HASH_PREFIX, Hashes.keyHashPrefix(keyHash));
        // refused before anything changes: a dealloc that cannot run leaves a waiting request of its key waiting
        allocator.requirePodsSynced();
        // a key still waiting for capacity must not be handed a pod after its dealloc; a delete by id releases that
        // one allocation only, and a request of its key that waits is none (the key was released and sent again)
        boolean waitCancelled = guard == null && waiting.cancel(keyHash);
        List<Pod> deleted;
        try {
            deleted = guard == null ? allocator.deallocate(keyHash) : allocator.deallocate(keyHash, guard);
        } catch (Allocator.PartlyReleased e) {
            if (guard != null) {
                // a delete by id releases that allocation's pod alone, and it is deleted: what failed after it (a
                // read to see that nothing of it is left) changes nothing the caller asked for
                org.slf4j.LoggerFactory.getLogger(ApiFlows.class).warn("allocation deleted, the read after its delete"
                        + " failed key={}: {}", Hashes.keyHashPrefix(keyHash), e.getMessage());
                deleted = e.released();
                exchange.setProperty(AuditLog.OUTCOME, dealloc(deleted, false));
                exchange.setProperty(WAIT_CANCELLED, false);
                exchange.setProperty(AuditLog.ALLOCATION_ID,
                        deleted.stream().map(p -> p.getMetadata().getName()).collect(Collectors.joining(",")));
                return deleted;
            }
            // the pods it did release are recorded all the same: the errors route writes their Events and the
            // audit line names them; the answer (503, result partly-deallocated) says to send the dealloc again
            exchange.setProperty(RELEASED, e.released());
            exchange.setProperty(AuditLog.ALLOCATION_ID,
                    e.released().stream().map(p -> p.getMetadata().getName()).collect(Collectors.joining(",")));
            throw e;
        }
        exchange.setProperty(AuditLog.OUTCOME, dealloc(deleted, waitCancelled));
        exchange.setProperty(WAIT_CANCELLED, waitCancelled);
        exchange.setProperty(AuditLog.ALLOCATION_ID,
                deleted.stream().map(p -> p.getMetadata().getName()).collect(Collectors.joining(",")));
        return deleted;
    }

    /** The Kubernetes Events of a dealloc: one per deleted pod. */
    public List<KubeEvent> deallocatedEvents(@Body List<Pod> deleted) {
        return events.deallocatedEvents(deleted);
    }

    /** Set by {@link #deleteClaimed} when it failed after releasing pods: those pods (a {@code List<Pod>}). */
    public static final String RELEASED = "playpenReleasedPods";

    /** The Deallocated Events of the pods a failed dealloc released (step of the errors route). */
    public List<KubeEvent> releasedEvents(@ExchangeProperty(RELEASED) List<Pod> released) {
        return released == null ? List.of() : events.deallocatedEvents(released);
    }

    /** Set by {@link #deleteClaimed}: whether the dealloc ended a request of its key waiting for capacity. */
    static final String WAIT_CANCELLED = "playpenDeallocWaitCancelled";

    private static String dealloc(List<Pod> deleted, boolean waitCancelled) {
        return !deleted.isEmpty() ? "deallocated" : waitCancelled ? "wait-cancelled" : "unknown-key";
    }

    /**
     * The dealloc answer: 204 whether or not the key had a claim, like the reference (clients check for it). A key
     * without a claim and without a request waiting for it here also gets a {@code Warning} header, which kubectl
     * prints: nothing was released.
     */
    public HttpReply deallocated(@Body List<Pod> deleted, Exchange exchange) {
        boolean waitCancelled = Boolean.TRUE.equals(exchange.getProperty(WAIT_CANCELLED, Boolean.class));
        if (deleted.isEmpty() && !waitCancelled) {
            ReplyWriter.warnings(exchange).add(NOTHING_RELEASED);
        }
        return HttpReply.noContent(dealloc(deleted, waitCancelled));
    }

    /** The warning of a dealloc whose key holds no allocation. */
    public static final String NOTHING_RELEASED = "no allocation holds this idempotency key (released already, expired,"
            + " or never made): nothing was deallocated";

    public HttpReply discovery(@ExchangeProperty(FrontDoor.FLOW) String flow) {
        return HttpReply.json("discovery_group".equals(flow) ? Discovery.API_GROUP : Discovery.API_RESOURCE_LIST);
    }

    /**
     * /healthz and /readyz: 204 with no body, like the reference; /readyz is 503 while not ready (ours only), saying
     * what is missing and what to check.
     */
    public HttpReply health(@ExchangeProperty(FrontDoor.FLOW) String flow) {
        String why = "readyz".equals(flow) ? notReady.get() : null;
        if (why != null) {
            throw ApiException.unavailable(why, retryAfterSeconds);
        }
        return HttpReply.noContent("ok");
    }
}
