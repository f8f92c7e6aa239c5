package io.unboundedcloud.playpen.camel;

import java.time.Clock;
import java.util.Map;

import org.apache.camel.Body;
import org.apache.camel.ExchangeProperty;
import org.apache.camel.Header;

import io.unboundedcloud.playpen.api.ApiException;
import io.unboundedcloud.playpen.api.ApiPaths;
import io.unboundedcloud.playpen.api.Json;
import io.unboundedcloud.playpen.api.OpenApi;
import io.unboundedcloud.playpen.auth.Identity;
import io.unboundedcloud.playpen.kube.AccessReviewer;
import io.unboundedcloud.playpen.kube.ClaimReads;
import io.unboundedcloud.playpen.kube.NodeCache;
import io.unboundedcloud.playpen.kube.PodCache;
import io.unboundedcloud.playpen.model.AllocResponses;
import io.unboundedcloud.playpen.model.AllocViews;
import io.unboundedcloud.playpen.model.ResourceType;
import io.unboundedcloud.playpen.model.OwnerHashes;
import io.unboundedcloud.playpen.model.PlaypenKeys;
import io.unboundedcloud.playpen.model.TtlPolicy;

/**
 * The allocs read and delete flows' steps (ours; the reference has none): authorize with the request's verb, parse
 * the options, decide whose allocations the caller sees (their own, or everyone's with the verb on
 * {@code allocs/all}), select them from the pod cache and render them as kubectl asked (Table or JSON).
 */
public final class AllocsApi {

    /** A read's options, whose allocations it covers ({@code owner} null = everyone's) and who asks. */
    public record Read(AllocViews.Query query, OwnerHashes.Owner owner, OwnerHashes.Owner viewer) {
        /** Whether the read asks for a watch (the route's choice). */
        public boolean isWatch() {
            return query.watch() != null;
        }

    }

    /** What a read found, and the pods it was built from as the API server listed them (by pod name). */
    public record Selection(Read read, AllocViews.Page page, Map<String, io.fabric8.kubernetes.api.model.Pod> listed) {
        public Selection(Read read, AllocViews.Page page) {
            this(read, page, Map.of());
        }
    }

    private final AccessReviewer reviewer;
    private final PodCache pods;
    private final NodeCache nodes;
    private final Clock clock;
    private final TtlPolicy leases;
    private final int retryAfterSeconds;
    private final AllocResponses responses;
    private final ClaimReads reads;
    private final io.unboundedcloud.playpen.kube.ClaimWriter writer;
    private final WatchStream.Registry watches;
    private final OwnerHashes owners;

    /**
     * {@code responses} renders a control plane's kubeconfig for its owner exactly as the alloc answer has it;
     * {@code reads} lists the claimed pods from the API server.
     */
    public AllocsApi(AccessReviewer reviewer, PodCache pods, NodeCache nodes, Clock clock, TtlPolicy leases,
            int retryAfterSeconds, AllocResponses responses, OwnerHashes owners, ClaimReads reads) {
        this(reviewer, pods, nodes, clock, leases, retryAfterSeconds, responses, owners, reads, null, null);
    }

    /** With what watches need: {@code writer} lists and watches pods on the API server, {@code watches} bounds them. */
    public AllocsApi(AccessReviewer reviewer, PodCache pods, NodeCache nodes, Clock clock, TtlPolicy leases,
            int retryAfterSeconds, AllocResponses responses, OwnerHashes owners, ClaimReads reads,
            io.unboundedcloud.playpen.kube.ClaimWriter writer, WatchStream.Registry watches) {
        this.writer = writer;
        this.watches = watches;
        this.owners = owners;
        this.reads = reads;
        this.responses = responses;
        this.retryAfterSeconds = retryAfterSeconds;
        this.reviewer = reviewer;
        this.pods = pods;
        this.nodes = nodes;
        this.clock = clock;
        this.leases = leases;
    }

    static String verb(String flow) {
        return switch (flow) {
            case "allocs_list" -> "list";
            case "allocs_get" -> "get";
            case "allocs_delete" -> "delete";
            default -> throw new IllegalStateException("not an allocs flow: " + flow);
        };
    }

    /**
     * 403 unless RBAC lets the user {@code verb} allocs at all, or the one alloc a get or delete names (the same
     * check kube-apiserver makes: a Role's {@code resourceNames} grant those names). A list that asks for a watch is
     * reviewed with the verb watch, as kube-apiserver reviews it, before its 405.
     */
    public void authorize(@ExchangeProperty(FrontDoor.IDENTITY) Identity who, @ExchangeProperty(FrontDoor.FLOW) String flow,
            @ExchangeProperty(FrontDoor.TARGET) String target) {
        if ("allocs_list".equals(flow)) {
            AllocViews.ListReview list = AllocViews.listReview(ApiPaths.rawQuery(target));
            reviewer.authorize(who, AccessReviewer.ALLOCS, list.verb(), list.name());
        } else if ("allocs_get".equals(flow)) {
            // a watch of one allocation by its path is reviewed with the verb watch too
            String verb = "watch".equals(AllocViews.listReview(ApiPaths.rawQuery(target)).verb()) ? "watch" : "get";
            reviewer.authorize(who, AccessReviewer.ALLOCS, verb, ApiPaths.allocName(target));
        } else {
            reviewer.authorize(who, AccessReviewer.ALLOCS, verb(flow), ApiPaths.allocName(target));
        }
    }

    /**
     * The name and list options; get/delete of a name no allocation can have (not 16 lowercase hex characters) is
     * 404 like any other missing name, as kube-apiserver answers, so {@code --ignore-not-found} works; its message
     * says what an id looks like. Nothing is read from the cluster yet.
     */
    public AllocViews.Query parseQuery(@ExchangeProperty(FrontDoor.TARGET) String target,
            @ExchangeProperty(FrontDoor.FLOW) String flow, @Header("Accept") String accept) {
        ApiException.requireJsonAccepted(accept);
        String name = null;
        if (!"allocs_list".equals(flow)) {
            name = ApiPaths.allocName(target);
            if (!AllocViews.validName(name)) {
                throw notFound(name == null ? "" : name, "an allocation id is 16 lowercase hexadecimal characters, "
                        + "as kubectl get allocs lists them");
            }
        }
        try {
            return AllocViews.parseQuery(name, ApiPaths.rawQuery(target), accept);
        } catch (IllegalArgumentException e) {
            throw ApiException.badRequest(e.getMessage());
        }
    }

    /** The exchange property holding a delete's {@link Preconditions}. */
    public static final String PRECONDITIONS = "playpenDeletePreconditions";

    /**
     * A DeleteOptions body's {@code preconditions}: the uid and resourceVersion the allocation must still have
     * (null = not asked), as kube-apiserver honours them.
     */
    public record Preconditions(String uid, String resourceVersion) {
        static final Preconditions NONE = new Preconditions(null, null);
    }

    /**
     * A DELETE's options (query and DeleteOptions body), before anything else is read: a dry run is refused (400:
     * this server cannot promise one), the preconditions are kept for {@link #checkPreconditions}.
     */
    public Preconditions deleteOptions(@ExchangeProperty(FrontDoor.TARGET) String target, @Body byte[] body) {
        if (ApiPaths.asksDryRun(target)) {
            throw ApiException.badRequest(dryRunUnsupported(target));
        }
        if (body == null || body.length == 0 || ApiFlows.jsonBlank(body)) {
            return Preconditions.NONE;
        }
        Map<?, ?> options;
        try {
            options = Json.MAPPER.readValue(body, Map.class);
        } catch (Exception e) {
            throw ApiException.badRequest("invalid DeleteOptions body: not a JSON object; send {} or "
                    + "{\"preconditions\":{\"uid\":\"<the alloc's metadata.uid>\"}}, or no body");
        }
        if (options == null) {
            // the JSON null: no options, as kube-apiserver reads it
            return Preconditions.NONE;
        }
        Object dryRun = options.get("dryRun");
        if (dryRun != null && !(dryRun instanceof java.util.List<?>)) {
            throw ApiException.badRequest("invalid DeleteOptions body: dryRun must be a list such as [\"All\"]; "
                    + dryRunUnsupported(target));
        }
        if (dryRun instanceof java.util.List<?> dry && !dry.isEmpty()) {
            throw ApiException.badRequest(dryRunUnsupported(target));
        }
        Object pre = options.get("preconditions");
        if (pre == null) {
            return Preconditions.NONE;
        }
        if (!(pre instanceof Map<?, ?> p)) {
            throw ApiException.badRequest("invalid DeleteOptions body: preconditions must be an object such as "
                    + "{\"uid\":\"<the alloc's metadata.uid>\"}; nothing was deleted");
        }
        return new Preconditions(stringField(p, "uid"), stringField(p, "resourceVersion"));
    }

    /**
     * The 400 of a dry-run delete: nothing was deleted, and reading the allocation shows what the delete would
     * release (its id when the target names a valid one).
     */
    static String dryRunUnsupported(String target) {
        String name = ApiPaths.allocName(target);
        return "dry-run deletes are not supported on allocs: nothing was deleted; kubectl get alloc "
                + (AllocViews.validName(name) ? name : "<id>") + " -o yaml shows the allocation this delete would "
                + "release";
    }

    private static String stringField(Map<?, ?> preconditions, String field) {
        Object v = preconditions.get(field);
        if (v == null || v instanceof String) {
            return (String) v;
        }
        throw ApiException.badRequest("invalid DeleteOptions body: preconditions." + field + " must be a string; "
                + "nothing was deleted");
    }

    /**
     * 409 Conflict, nothing deleted, when the selected allocation is no longer the one the DeleteOptions'
     * preconditions name (its pod was released and claimed again, so it has another uid, or it changed since the
     * caller read it); kube-apiserver's words. The allocation was just read from the API server.
     */
    public Selection checkPreconditions(@Body Selection s, @ExchangeProperty(PRECONDITIONS) Preconditions pre) {
        if (pre != null) {
            hold(pre, s.page().items().get(0));
        }
        return s;
    }

    /** The exchange property holding what a delete may remove ({@link #deleteGuard}). */
    public static final String DELETE_GUARD = "playpenDeleteGuard";

    /**
     * What the delete may remove, tested on each pod of the key as the API server has it when it is deleted (the
     * delete is conditional on the version tested): the selected allocation's pod only (that pod, by its uid: the
     * pool's new pod of the same name is another allocation with the same id), while the caller may still
     * see it and, when the caller sent preconditions, it still meets them (a 409 otherwise). Another pod of the key
     * is left alone: it is not this allocation (the key may have been released and sent again since the read, by
     * anyone), and a claim of the key that lost is rolled back by its writer.
     */
    public java.util.function.Predicate<io.fabric8.kubernetes.api.model.Pod> deleteGuard(@Body Selection s,
            @ExchangeProperty(PRECONDITIONS) Preconditions pre) {
        String pod = s.page().items().get(0).pod();
        String uid = s.page().items().get(0).uid();
        OwnerHashes.Owner owner = s.read() == null ? null : s.read().owner();
        return p -> {
            if (!pod.equals(p.getMetadata().getName())) {
                return false;
            }
            if (owner != null && !owner.matches(io.unboundedcloud.playpen.model.ManagedPods.ownerHash(p))) {
                return false; // released and claimed again by someone else since the read: not the caller's
            }
            if (pre != null && (pre.uid() != null || pre.resourceVersion() != null)) {
                AllocViews.of(p, nodes::externalIp, leases).ifPresent(now -> hold(pre, now));
            }
            // the pool's new pod of that name (the same allocation id), claimed again since the read: another
            // allocation, even of the same owner and key
            return uid.equals(p.getMetadata().getUid());
        };
    }

    private static void hold(Preconditions pre, AllocViews.Alloc a) {
        if (pre.uid() != null && !pre.uid().equals(a.uid())) {
            throw ApiException.conflict("Precondition failed: UID in precondition: " + pre.uid()
                    + ", UID in object meta: " + a.uid() + "; the allocation " + a.name() + " is not the one you read: "
                    + "nothing was deleted; read it again (kubectl get alloc " + a.name() + " -o yaml)");
        }
        if (pre.resourceVersion() != null && !pre.resourceVersion().equals(a.resourceVersion())) {
            throw ApiException.conflict("Precondition failed: ResourceVersion in precondition: "
                    + pre.resourceVersion() + ", ResourceVersion in object meta: " + a.resourceVersion()
                    + "; the allocation " + a.name() + " changed since you read it: nothing was deleted; read it "
                    + "again (kubectl get alloc " + a.name() + " -o yaml)");
        }
    }

    /** Whose allocations: everyone's when RBAC grants the verb on allocs/all, else the caller's own. */
    public Read scope(@Body AllocViews.Query query, @ExchangeProperty(FrontDoor.IDENTITY) Identity who,
            @ExchangeProperty(FrontDoor.FLOW) String flow) {
        boolean everyone = reviewer.allowedForAllUsers(who, verb(flow), query.reviewedName());
        OwnerHashes.Owner viewer = owners.of(who.user());
        return new Read(query, everyone ? null : viewer, viewer);
    }

    /**
     * The visible allocations that match, as the API server has them now (whichever replica allocated them), those
     * whose pod is being deleted included (with their deletionTimestamp) while the pod is still there; for one name,
     * 404 when it is missing or not the caller's (the same answer, so ids of other users' allocations cannot be
     * probed).
     */
    public Selection select(@Body Read read) {
        requireSynced();
        // as the API server has them now: one allocation by its id, a user's own in both owner-hash forms (claims
        // older than the key carry the legacy one), or everyone's (allocs/all)
        String name = read.query().name();
        java.util.Collection<io.fabric8.kubernetes.api.model.Pod> visible;
        String version;
        // the versions of the API server's lists read: an exact read (resourceVersionMatch=Exact) must be all of them
        java.util.Set<String> readAt = new java.util.HashSet<>();
        if (read.owner() == null || name != null) {
            ClaimReads.Listed listed = reads.claimedAt(read.owner() == null ? null : read.owner().current(), name);
            visible = listed.pods();
            version = listed.resourceVersion();
            readAt.add(version);
        } else {
            java.util.Map<String, io.fabric8.kubernetes.api.model.Pod> mine = new java.util.LinkedHashMap<>();
            version = null;
            for (String hash : java.util.List.of(read.owner().current(), read.owner().legacy())) {
                ClaimReads.Listed listed = reads.claimedAt(hash, null);
                listed.pods().forEach(p -> mine.putIfAbsent(p.getMetadata().getName(), p));
                // the older of the two lists: a watch from it sees every change after either (some twice)
                version = version == null ? listed.resourceVersion() : older(version, listed.resourceVersion());
                readAt.add(listed.resourceVersion());
            }
            visible = mine.values();
        }
        String exact = read.query().exactVersion();
        if (exact != null && !(readAt.size() == 1 && readAt.contains(exact))) {
            // allocations are read as they are now: another version's are not to be had, which kube-apiserver
            // answers with its 410 (the version is no longer kept), not with another version's list
            throw new ApiException(410, "Expired", "too old resource version: " + AllocViews.quoteShort(exact)
                    + ": allocations are listed as they are now (resourceVersion " + AllocViews.quoteShort(version)
                    + "), not as of an earlier version; nothing was read. List them without resourceVersionMatch=Exact"
                    + " (or with NotOlderThan)");
        }
        AllocViews.Page page = AllocViews.selectMatching(visible, nodes::externalIp, leases,
                read.owner() == null ? null : read.owner()::matches, read.query()).withResourceVersion(version);
        if (read.query().name() != null && page.items().isEmpty()) {
            throw notFound(read.query().name());
        }
        // one allocation's read keeps its pod as listed (its owner's kubeconfig is built from it); a list needs none
        Map<String, io.fabric8.kubernetes.api.model.Pod> listed = new java.util.HashMap<>();
        if (name != null) {
            visible.forEach(p -> listed.put(p.getMetadata().getName(), p));
        }
        return new Selection(read, page, listed);
    }

    /**
     * Opens a watch of the allocations the read covers (its answer streams them: see {@link WatchStream}), from the
     * API server's watch of their pods: from the resourceVersion asked for, or after a list whose allocations come
     * first as ADDED events (no resourceVersion, or "0", or sendInitialEvents=true). By a name (the path's, or
     * {@code fieldSelector=metadata.name=...}, as kubectl delete and wait ask) the pods that carry that allocation
     * id; otherwise the caller's own (the owner label) or everyone's (allocs/all). Whose allocations and which match
     * is decided per event, as for a list.
     */
    public HttpReply watch(@Body Read read, @ExchangeProperty(FrontDoor.IDENTITY) Identity who,
            org.apache.camel.Exchange exchange) {
        requireSynced();
        AllocViews.Query q = read.query();
        AllocViews.Watch options = q.watch();
        // one allocation by its id (a name no allocation has is selected among the caller's, and never matches:
        // the API server refuses a label value that is no allocation id)
        String name = AllocViews.validName(q.reviewedName()) ? q.reviewedName() : null;
        // the caller's own: under both owner hashes, as a list shows them (claims older than the key carry the legacy
        // one), in one watch of one selector (owner-hash in (keyed, legacy)) that keeps the order of their changes
        ClaimReads.Selector selector = ClaimReads.selector(read.owner(), name);
        java.util.function.Predicate<String> owner = read.owner() == null ? null : read.owner()::matches;
        java.util.function.Function<io.fabric8.kubernetes.api.model.Pod, java.util.Optional<AllocViews.Alloc>> named =
                p -> AllocViews.selectMatching(java.util.List.of(p), nodes::externalIp, leases, owner, q).items()
                        .stream().findFirst();
        WatchStream stream = watches.open(who.user(), watchMillis(options.timeoutSeconds()));
        // a client gone before the answer's head is written: the stream ends (its slot and the API server's watch
        // freed), as it does once started
        io.netty.channel.ChannelHandlerContext ctx = exchange.getMessage().getHeader(
                org.apache.camel.component.netty.NettyConstants.NETTY_CHANNEL_HANDLER_CONTEXT,
                io.netty.channel.ChannelHandlerContext.class);
        if (ctx != null) {
            io.netty.channel.ChannelFutureListener gone = f -> stream.end(null);
            ctx.channel().closeFuture().addListener(gone);
            stream.onEnd(() -> ctx.channel().closeFuture().removeListener(gone));
        }
        try {
            // shown: not a claim this replica judged lost (as a list); a delete is sent for any the caller could
            // have listed, so a claim listed while undecided and then lost is not left behind
            AllocWatch events = new AllocWatch(stream, p -> reads.shown(p, 0) ? named.apply(p)
                    : java.util.Optional.empty(), named, q, clock);
            String from = options.resourceVersion();
            if (options.initialEvents() || from.isEmpty() || from.equals("0")) {
                io.fabric8.kubernetes.api.model.PodList listed = writer.listPods(pods.namespace(), selector.label(),
                        selector.values());
                from = listed.getMetadata().getResourceVersion();
                if (options.initialEvents()) {
                    listed.getItems().forEach(events::initial);
                }
                if (options.bookmarkInitialEnd()) {
                    stream.emit(initialEventsEnd(from));
                }
            }
            // the API server's bookmarks only when the client asked for them (fabric8 passes them on only then)
            io.fabric8.kubernetes.client.Watch source = writer.watchPods(pods.namespace(), selector.label(),
                    selector.values(), from, options.bookmarks(), events);
            stream.onEnd(source::close);
        } catch (io.fabric8.kubernetes.client.KubernetesClientException e) {
            stream.end(null);
            if (e.getCode() == 410) {
                throw WatchStream.tooOld(options.resourceVersion());
            }
            throw e;
        } catch (RuntimeException e) {
            stream.end(null);
            throw e;
        }
        exchange.setProperty(WatchStream.class.getName(), stream);
        return new HttpReply(200, HttpReply.JSON, null, Map.of(), "watching");
    }

    /**
     * How long a watch stays open: {@code timeoutSeconds} when asked, else 30 to 60 minutes (at random, so the
     * watches of clients started together do not end together), as kube-apiserver's default bounds a watch.
     */
    static long watchMillis(long timeoutSeconds) {
        long max = java.util.concurrent.TimeUnit.MINUTES.toMillis(60);
        if (timeoutSeconds > 0) {
            return Math.min(max, java.util.concurrent.TimeUnit.SECONDS.toMillis(timeoutSeconds));
        }
        return max / 2 + java.util.concurrent.ThreadLocalRandom.current().nextLong(max / 2);
    }

    /** The BOOKMARK that ends a watch's initial events (sendInitialEvents=true), at the list's resourceVersion. */
    static Map<String, Object> initialEventsEnd(String resourceVersion) {
        return bookmark(resourceVersion, true);
    }

    /**
     * A BOOKMARK at {@code resourceVersion}: an Alloc with only that version (and, when {@code initialEventsEnd}, the
     * annotation that marks the end of the initial events), as kube-apiserver sends them.
     */
    static Map<String, Object> bookmark(String resourceVersion, boolean initialEventsEnd) {
        Map<String, Object> meta = new java.util.LinkedHashMap<>();
        meta.put("resourceVersion", resourceVersion);
        if (initialEventsEnd) {
            meta.put("annotations", Map.of("k8s.io/initial-events-end", "true"));
        }
        Map<String, Object> object = new java.util.LinkedHashMap<>();
        object.put("kind", AllocViews.KIND);
        object.put("apiVersion", PlaypenKeys.GROUP_VERSION);
        object.put("metadata", meta);
        Map<String, Object> event = new java.util.LinkedHashMap<>();
        event.put("type", "BOOKMARK");
        event.put("object", object);
        return event;
    }

    /** The older of two resourceVersions (etcd revisions, numbers in practice); "" when either is not a number. */
    static String older(String a, String b) {
        try {
            return Long.parseLong(a) <= Long.parseLong(b) ? a : b;
        } catch (NumberFormatException e) {
            return "";
        }
    }

    private void requireSynced() {
        if (!pods.hasSynced() || !nodes.hasSynced()) {
            throw ApiException.unavailable("the operator's pod and node caches are not synced yet; nothing was done,"
                    + " try again", retryAfterSeconds);
        }
    }

    static ApiException notFound(String name) {
        return notFound(name, null);
    }

    /** kube-apiserver's words for a missing name ({@code why}, when not null, after them); long names cut short. */
    static ApiException notFound(String name, String why) {
        return ApiException.notFound("allocs." + PlaypenKeys.GROUP + " " + AllocViews.quoteShort(name) + " not found"
                + (why == null ? "" : ": " + why)).withDetails(name, PlaypenKeys.GROUP, AccessReviewer.ALLOCS);
    }

    /** Table when kubectl asked for one (get), else the Alloc or AllocList JSON (-o json|yaml|name). */
    public HttpReply render(@Body Selection s) {
        AllocViews.Query q = s.read().query();
        if (q.table()) {
            String type = "application/json;as=Table;g=meta.k8s.io;v=" + q.tableVersion();
            return new HttpReply(200, type, Json.write(AllocViews.table(s.page(), q, clock.instant())), Map.of(), "ok");
        }
        if (q.name() == null) {
            return HttpReply.json(Json.write(AllocViews.list(s.page())));
        }
        AllocViews.Alloc a = s.page().items().get(0);
        Map<String, Object> o = AllocViews.object(a);
        ownersKubeconfig(a, s.listed().get(a.pod()), s.read().viewer()).ifPresent(k -> AllocViews.withKubeconfig(o, k));
        return HttpReply.json(Json.write(o));
    }

    /**
     * A control plane's kubeconfig as its alloc answer gives it, for one object read by its owner only (an admin
     * reading someone else's, and every list or table, never sees it); empty when it cannot be rendered now. Built
     * from {@code listed}, the pod the object was made from as the API server listed it: the watch cache may hold
     * an older version of it (before it published a new kubeconfig), or an earlier pod of the same name.
     */
    private java.util.Optional<String> ownersKubeconfig(AllocViews.Alloc a, io.fabric8.kubernetes.api.model.Pod listed,
            OwnerHashes.Owner viewer) {
        if (!ResourceType.CONTROL_PLANE.wire().equals(a.resourceType()) || !viewer.matches(a.ownerHash())) {
            return java.util.Optional.empty();
        }
        return java.util.Optional.ofNullable(listed).flatMap(pod -> {
            try {
                String kubeconfig = responses.build(pod, nodes.externalIp(a.node()).orElse("")).controlPlane()
                        .kubeconfig();
                return kubeconfig == null || kubeconfig.isEmpty() ? java.util.Optional.empty()
                        : java.util.Optional.of(kubeconfig);
            } catch (ApiException e) {
                return java.util.Optional.empty();
            }
        });
    }

    /** The key hash to deallocate the one selected allocation with (the dealloc flow's input). */
    public String claimKey(@Body Selection s) {
        return s.page().items().get(0).keyHash();
    }

    /**
     * After the dealloc step (the pods it deleted): the deleted Alloc (200, what kubectl delete expects), or 404 when
     * its pod was already gone or re-claimed by then, as for any missing name (without the dealloc's warning about an
     * idempotency key, which the caller never sent). An allocation whose pod was being deleted when it was read
     * (its deletionTimestamp set), or went into deletion since (read once more), is answered as kube-apiserver
     * answers a delete of an object already being deleted: 200 with the object, its deletionTimestamp in it; nothing
     * more is deleted (outcome {@code being-deleted}).
     */
    public HttpReply deleted(@Body java.util.List<io.fabric8.kubernetes.api.model.Pod> deleted,
            @ExchangeProperty("playpenAlloc") Selection s, org.apache.camel.Exchange exchange) {
        AllocViews.Alloc a = s.page().items().get(0);
        if (deleted.isEmpty()) {
            AllocViews.Alloc ending = a.deletionTimestamp() != null ? a : beingDeletedSince(a).orElseThrow(
                    () -> notFound(a.name()));
            exchange.setProperty(AuditLog.OUTCOME, BEING_DELETED);
            return HttpReply.json(Json.write(AllocViews.object(ending)), BEING_DELETED);
        }
        return HttpReply.json(Json.write(AllocViews.object(a)), "deallocated");
    }

    /**
     * The allocation {@code read}, as the API server has it now, when its pod (the same uid) went into deletion
     * after it was read: its TTL, or a release through another replica, came first. Empty when the pod is gone or
     * is another.
     */
    private java.util.Optional<AllocViews.Alloc> beingDeletedSince(AllocViews.Alloc read) {
        io.fabric8.kubernetes.api.model.Pod now = writer.read(pods.namespace(), read.pod());
        if (now == null || !read.uid().equals(now.getMetadata().getUid())
                || !io.unboundedcloud.playpen.model.ManagedPods.isTerminating(now)) {
            return java.util.Optional.empty();
        }
        return AllocViews.of(now, nodes::externalIp, leases);
    }

    /** The outcome of a delete of an allocation whose pod was already being deleted. */
    static final String BEING_DELETED = "being-deleted";

    /** /openapi/v2, /openapi/v3 and the group's v3 document. */
    public HttpReply openapi(@ExchangeProperty(FrontDoor.FLOW) String flow) {
        return HttpReply.json(switch (flow) {
            case "openapi_v2" -> OpenApi.V2;
            case "openapi_v3" -> OpenApi.V3_ROOT;
            default -> OpenApi.V3_GROUP;
        });
    }
}
