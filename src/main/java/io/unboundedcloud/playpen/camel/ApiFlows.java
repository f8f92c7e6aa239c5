package io.unboundedcloud.playpen.camel;

import java.util.function.BooleanSupplier;

import org.apache.camel.Body;
import org.apache.camel.ExchangeProperty;
import org.apache.camel.Header;

import io.unboundedcloud.playpen.api.ApiException;
import io.unboundedcloud.playpen.api.Discovery;
import io.unboundedcloud.playpen.api.Json;
import io.unboundedcloud.playpen.auth.Identity;
import io.unboundedcloud.playpen.kube.AccessReviewer;
import io.unboundedcloud.playpen.kube.Allocator;
import io.unboundedcloud.playpen.model.AllocCommand;
import io.unboundedcloud.playpen.model.AllocRequestParser;
import io.unboundedcloud.playpen.model.AllocResponses;

/** Thin adapters between the HTTP routes and the domain beans: bind exchange parts, return domain values. */
public final class ApiFlows {
    private final AccessReviewer reviewer;
    private final AllocRequestParser parser;
    private final Allocator allocator;
    private final AllocResponses responses;
    private final BooleanSupplier ready;
    private final int retryAfterSeconds;

    public ApiFlows(AccessReviewer reviewer, AllocRequestParser parser, Allocator allocator, AllocResponses responses,
            BooleanSupplier ready, int retryAfterSeconds) {
        this.reviewer = reviewer;
        this.parser = parser;
        this.allocator = allocator;
        this.responses = responses;
        this.ready = ready;
        this.retryAfterSeconds = retryAfterSeconds;
    }

    public void authorize(@ExchangeProperty(FrontDoor.IDENTITY) Identity identity) {
        reviewer.authorize(identity);
    }

    public AllocCommand parseAlloc(@Body byte[] body, @Header("Idempotency-Key") String key) {
        return parser.parseAlloc(body, key);
    }

    public Allocator.Allocation allocate(AllocCommand cmd) {
        return allocator.allocate(cmd);
    }

    public HttpReply allocated(Allocator.Allocation allocation) {
        return HttpReply.json(Json.encode(responses.build(allocation.pod(), allocation.externalIp())),
                allocation.replay() ? "replayed" : "allocated");
    }

    public String parseDealloc(@Body byte[] body, @Header("Idempotency-Key") String key) {
        return parser.parseDealloc(body, key);
    }

    public HttpReply deallocate(String keyHash) {
        int deleted = allocator.deallocate(keyHash);
        return HttpReply.noContent(deleted > 0 ? "deallocated" : "unknown-key");
    }

    public HttpReply discovery(@ExchangeProperty(FrontDoor.FLOW) String flow) {
        return HttpReply.json("discovery_group".equals(flow) ? Discovery.API_GROUP : Discovery.API_RESOURCE_LIST);
    }

    public HttpReply health(@ExchangeProperty(FrontDoor.FLOW) String flow) {
        if ("readyz".equals(flow) && !ready.getAsBoolean()) {
            throw ApiException.unavailable("not ready: caches not synced or front-proxy trust bundle not loaded",
                    retryAfterSeconds);
        }
        return HttpReply.text("ok");
    }
}
