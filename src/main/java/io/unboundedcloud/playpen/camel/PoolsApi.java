package io.unboundedcloud.playpen.camel;

import java.time.Clock;
import java.util.List;
import java.util.Map;

import org.apache.camel.Body;
import org.apache.camel.ExchangeProperty;
import org.apache.camel.Header;

import io.unboundedcloud.playpen.api.ApiException;
import io.unboundedcloud.playpen.api.ApiPaths;
import io.unboundedcloud.playpen.api.Json;
import io.unboundedcloud.playpen.auth.Identity;
import io.unboundedcloud.playpen.kube.AccessReviewer;
import io.unboundedcloud.playpen.kube.PoolStatuses;
import io.unboundedcloud.playpen.model.AllocViews;
import io.unboundedcloud.playpen.model.PlaypenKeys;
import io.unboundedcloud.playpen.model.PoolStatus;
import io.unboundedcloud.playpen.model.PoolViews;

/**
 * The pools read flow's steps (ours): authorize (get or list on pools), parse the name and options, select the
 * pools as this replica sees them, render them as kubectl asked (Table or JSON). Read-only: pools are made by the
 * flags, not through the API.
 */
public final class PoolsApi {

    /**
     * What a read found; {@code refusals}: why each pool's pod creates are refused (null for a pool whose are not;
     * the function itself null before the create-refusals step).
     */
    public record Selection(PoolViews.Query query, List<PoolStatus> pools,
            java.util.function.Function<io.unboundedcloud.playpen.model.PoolTarget, String> refusals) {
        public Selection(PoolViews.Query query, List<PoolStatus> pools) {
            this(query, pools, null);
        }
    }

    private final AccessReviewer reviewer;
    private final PoolStatuses statuses;
    private final Clock clock;
    private final int retryAfterSeconds;
    private final PoolViews views;

    public PoolsApi(AccessReviewer reviewer, PoolStatuses statuses, Clock clock, int retryAfterSeconds,
            String maxSurge) {
        this.reviewer = reviewer;
        this.statuses = statuses;
        this.clock = clock;
        this.retryAfterSeconds = retryAfterSeconds;
        this.views = new PoolViews(maxSurge);
    }

    /**
     * 403 unless RBAC lets the user get the one pool named or list pools (a list whose fieldSelector requires one
     * name is reviewed with it, one that asks for a watch with the verb watch before its 405); a Role's resourceNames
     * count, as in kube-apiserver.
     */
    public void authorize(@ExchangeProperty(FrontDoor.IDENTITY) Identity who, @ExchangeProperty(FrontDoor.FLOW) String flow,
            @ExchangeProperty(FrontDoor.TARGET) String target) {
        if ("pools_get".equals(flow)) {
            reviewer.authorize(who, AccessReviewer.POOLS, "get", ApiPaths.poolName(target));
            return;
        }
        AllocViews.ListReview list = AllocViews.listReview(ApiPaths.rawQuery(target));
        reviewer.authorize(who, AccessReviewer.POOLS, list.verb(), list.name());
    }

    /** The name (get) and the list options; 400 for bad options, 405 for a watch. */
    public PoolViews.Query parseQuery(@ExchangeProperty(FrontDoor.TARGET) String target,
            @ExchangeProperty(FrontDoor.FLOW) String flow, @Header("Accept") String accept) {
        ApiException.requireJsonAccepted(accept);
        String name = "pools_get".equals(flow) ? ApiPaths.poolName(target) : null;
        try {
            return PoolViews.parseQuery(name, ApiPaths.rawQuery(target), accept);
        } catch (IllegalArgumentException e) {
            throw ApiException.badRequest(e.getMessage());
        } catch (UnsupportedOperationException e) {
            throw ApiException.methodNotAllowed(e.getMessage(), "GET");
        }
    }

    /** The pools that match, as this replica sees them now; 404 for a name that is no pool. */
    public Selection select(@Body PoolViews.Query query) {
        if (!statuses.synced()) {
            throw ApiException.unavailable("the operator's pod cache is not synced yet; nothing was read, try again",
                    retryAfterSeconds);
        }
        List<PoolStatus> pools = PoolViews.select(statuses.fresh().values(), query);
        if (query.name() != null && pools.isEmpty()) {
            throw ApiException.notFound("pools." + PlaypenKeys.GROUP + " \"" + query.name() + "\" not found")
                    .withDetails(query.name(), PlaypenKeys.GROUP, AccessReviewer.POOLS);
        }
        return new Selection(query, pools);
    }

    /**
     * Why the selected pools' pod creates are refused: the leader knows its own; a replica that does not lead reads
     * what the leader publishes on its Lease (one GET per read).
     */
    public Selection createRefusals(@Body Selection s) {
        return new Selection(s.query(), s.pools(), statuses.createRefusals());
    }

    /** Table when kubectl asked for one (get), else the Pool or PoolList JSON (-o json|yaml|name). */
    public HttpReply render(@Body Selection s) {
        PoolViews.Query q = s.query();
        var refusals = s.refusals() != null ? s.refusals() : statuses.createRefusals();
        if (q.table()) {
            String type = "application/json;as=Table;g=meta.k8s.io;v=" + q.tableVersion();
            return new HttpReply(200, type, Json.write(views.table(s.pools(), q, clock.instant(), refusals)), Map.of(),
                    "ok");
        }
        if (q.name() == null) {
            return HttpReply.json(Json.write(views.list(s.pools(), clock.instant(), refusals)));
        }
        return HttpReply.json(Json.write(views.object(s.pools().get(0), clock.instant(), refusals)));
    }
}
