package io.unboundedcloud.playpen.kube;

import java.io.IOException;

import com.fasterxml.jackson.core.JsonParser;
import com.fasterxml.jackson.core.JsonToken;
import com.fasterxml.jackson.databind.BeanDescription;
import com.fasterxml.jackson.databind.DeserializationConfig;
import com.fasterxml.jackson.databind.DeserializationContext;
import com.fasterxml.jackson.databind.JsonDeserializer;
import com.fasterxml.jackson.databind.Module;
import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.ObjectReader;
import com.fasterxml.jackson.databind.deser.BeanDeserializerModifier;
import com.fasterxml.jackson.databind.deser.std.DelegatingDeserializer;
import com.fasterxml.jackson.databind.deser.std.StdDeserializer;
import com.fasterxml.jackson.databind.module.SimpleModule;
import com.fasterxml.jackson.databind.util.TokenBuffer;

import io.fabric8.kubernetes.api.model.Pod;
import io.fabric8.kubernetes.api.model.WatchEvent;
import io.fabric8.kubernetes.client.utils.KubernetesSerialization;
import io.unboundedcloud.playpen.model.SlimPodJson;
import io.unboundedcloud.playpen.model.SlimPodList;

/**
 * Decodes a watch event whose object is a pod straight into the slim pod the cache keeps ({@link SlimPodJson}),
 * as its tokens arrive. The client's own decoding reads the event's object into a JSON tree, then the tree into
 * the whole pod model, and the cache then copies the few fields it keeps; every replica does that for every change
 * of every pod in the namespace (the claims of all replicas, the pool's new pods coming up).
 *
 * <p>Anything else (a node's or config map's event, the {@code Status} of an ERROR event, an object that does not
 * begin with its {@code kind} and {@code apiVersion}) is decoded by the client as before, from a copy of the tokens
 * read so far. The API server writes those two first; a pod that came otherwise would still be decoded, only the
 * slower way. Fields of the event other than {@code type} and {@code object}, which nobody reads, are not kept.
 * Pods are slim only in watch events, the cache's LIST pages, the answers to the operator's own pod PATCHes and its
 * GETs of one pod ({@link #slimPodReader}): a pod listed by a request is decoded whole, as before.
 */
final class PodWatchEvents extends DelegatingDeserializer {
    private static final long serialVersionUID = 1L;

    private PodWatchEvents(JsonDeserializer<?> clientsOwn) {
        super(clientsOwn);
    }

    /**
     * The Jackson module that installs this decoding of watch events into a client's object mapper, and the same
     * reading of the pod cache's LIST pages ({@link SlimPodList}).
     */
    static Module module() {
        SimpleModule module = new SimpleModule("playpen-slim-pods");
        module.addDeserializer(SlimPodList.class, reading(SlimPodList.class, SlimPodJson::readList));
        module.setDeserializerModifier(new BeanDeserializerModifier() {
            @Override
            public JsonDeserializer<?> modifyDeserializer(DeserializationConfig config, BeanDescription bean,
                    JsonDeserializer<?> deserializer) {
                return bean.getBeanClass() == WatchEvent.class ? new PodWatchEvents(deserializer) : deserializer;
            }
        });
        return module;
    }

    /**
     * How the pod that answers one of the operator's own writes, or its GET of one pod, is read: fabric8's JSON,
     * configured as the client's own, with the Pod read straight into its slim copy. Whatever the operator does with
     * the answer it does with that copy (the pod cache keeps nothing else), and a real API server's answer carries
     * managedFields and the whole spec and status, which the client's own decoding would build only for the slim
     * copy to drop them.
     */
    static ObjectReader slimPodReader() {
        ObjectMapper mapper = new ObjectMapper().registerModule(new SimpleModule("playpen-slim-answers")
                .addDeserializer(Pod.class, reading(Pod.class, SlimPodJson::read)));
        new KubernetesSerialization(mapper, true); // configures the mapper as the client's own
        return mapper.readerFor(Pod.class);
    }

    /** A reader of the slim pods' JSON ({@link SlimPodJson}) as a Jackson deserializer of {@code type}. */
    private static <T> StdDeserializer<T> reading(Class<T> type, SlimPodJson.Element<T> read) {
        return new StdDeserializer<>(type) {
            private static final long serialVersionUID = 1L;

            @Override
            public T deserialize(JsonParser p, DeserializationContext ctxt) throws IOException {
                return read.read(p, ctxt);
            }
        };
    }

    @Override
    protected JsonDeserializer<?> newDelegatingInstance(JsonDeserializer<?> clientsOwn) {
        return new PodWatchEvents(clientsOwn);
    }

    @Override
    public Object deserialize(JsonParser p, DeserializationContext ctxt) throws IOException {
        if (p.currentToken() != JsonToken.START_OBJECT) {
            return super.deserialize(p, ctxt);
        }
        WatchEvent event = new WatchEvent();
        for (String field = p.nextFieldName(); field != null; field = p.nextFieldName()) {
            JsonToken t = p.nextToken();
            if (field.equals("type")) {
                event.setType(t == JsonToken.VALUE_NULL ? null : p.getValueAsString());
            } else if (field.equals("object") && t == JsonToken.START_OBJECT) {
                Object read = podOrWholeEvent(p, ctxt, event.getType());
                if (!(read instanceof Pod)) {
                    return read;
                }
                event.setObject(read);
            } else if (field.equals("object")) {
                return clientsOwnValue(p, ctxt, event.getType());
            } else {
                p.skipChildren();
            }
        }
        return event;
    }

    /**
     * The event's object, the parser on its start: the slim pod when it begins with {@code "apiVersion": "v1"} and
     * {@code "kind": "Pod"}, in either order (fabric8 writes apiVersion first, the API server kind); else the whole
     * event as the client decodes it.
     */
    private Object podOrWholeEvent(JsonParser p, DeserializationContext ctxt, String type) throws IOException {
        String apiVersion = null;
        String kind = null;
        String field = p.nextFieldName();
        while (apiVersion == null && "apiVersion".equals(field) || kind == null && "kind".equals(field)) {
            if (p.nextToken() != JsonToken.VALUE_STRING) {
                return clientsOwn(p, ctxt, type, apiVersion, kind, field, true);
            }
            if (field.equals("kind")) {
                kind = p.getText();
            } else {
                apiVersion = p.getText();
            }
            field = p.nextFieldName();
        }
        if (!"v1".equals(apiVersion) || !"Pod".equals(kind)) {
            return clientsOwn(p, ctxt, type, apiVersion, kind, field, false);
        }
        return SlimPodJson.readRest(p, ctxt, apiVersion, kind, field);
    }

    /**
     * The client's own decoding of an event whose object is not a pod. The parser is inside the object: on the name
     * of its field {@code pending} (on that field's value when {@code onValue}), or at its end when pending is null;
     * {@code apiVersion} and {@code kind}, when not null, were read before.
     */
    private Object clientsOwn(JsonParser p, DeserializationContext ctxt, String type, String apiVersion, String kind,
            String pending, boolean onValue) throws IOException {
        TokenBuffer copy = started(p, ctxt, type);
        copy.writeStartObject();
        if (apiVersion != null) {
            copy.writeStringField("apiVersion", apiVersion);
        }
        if (kind != null) {
            copy.writeStringField("kind", kind);
        }
        if (pending != null) {
            copy.writeFieldName(pending);
            if (!onValue) {
                p.nextToken();
            }
            copy.copyCurrentStructure(p);
            while (p.nextToken() == JsonToken.FIELD_NAME) {
                copy.copyCurrentStructure(p);
            }
        }
        copy.writeEndObject();
        return rest(p, ctxt, copy);
    }

    /** The same for an object that is not a JSON object (null, or something no event carries): the parser is on it. */
    private Object clientsOwnValue(JsonParser p, DeserializationContext ctxt, String type) throws IOException {
        TokenBuffer copy = started(p, ctxt, type);
        copy.copyCurrentStructure(p);
        return rest(p, ctxt, copy);
    }

    /** A copy of the event up to its object's value: the type, if read already, and the field name. */
    private static TokenBuffer started(JsonParser p, DeserializationContext ctxt, String type) throws IOException {
        TokenBuffer copy = ctxt.bufferForInputBuffering(p);
        copy.writeStartObject();
        if (type != null) {
            copy.writeStringField("type", type);
        }
        copy.writeFieldName("object");
        return copy;
    }

    /** Copies the event's remaining fields and decodes the copy the client's own way. */
    private Object rest(JsonParser p, DeserializationContext ctxt, TokenBuffer copy) throws IOException {
        while (p.nextToken() == JsonToken.FIELD_NAME) {
            copy.copyCurrentStructure(p);
        }
        copy.writeEndObject();
        try (JsonParser replay = copy.asParserOnFirstToken()) {
            return _delegatee.deserialize(replay, ctxt);
        }
    }
}
