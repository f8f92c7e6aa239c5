package io.unboundedcloud.playpen.model;

import java.io.IOException;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;

import com.fasterxml.jackson.core.JsonParser;
import com.fasterxml.jackson.core.JsonToken;
import com.fasterxml.jackson.databind.DeserializationContext;
import com.fasterxml.jackson.databind.JavaType;
import com.fasterxml.jackson.databind.JsonMappingException;
import com.fasterxml.jackson.databind.type.TypeFactory;

import io.fabric8.kubernetes.api.model.Container;
import io.fabric8.kubernetes.api.model.ContainerPort;
import io.fabric8.kubernetes.api.model.ContainerState;
import io.fabric8.kubernetes.api.model.ContainerStateRunning;
import io.fabric8.kubernetes.api.model.ContainerStateTerminated;
import io.fabric8.kubernetes.api.model.ContainerStateWaiting;
import io.fabric8.kubernetes.api.model.ContainerStatus;
import io.fabric8.kubernetes.api.model.ListMeta;
import io.fabric8.kubernetes.api.model.ObjectMeta;
import io.fabric8.kubernetes.api.model.OwnerReference;
import io.fabric8.kubernetes.api.model.Pod;
import io.fabric8.kubernetes.api.model.PodCondition;
import io.fabric8.kubernetes.api.model.PodSpec;
import io.fabric8.kubernetes.api.model.PodStatus;

/**
 * Reads a pod's JSON straight into its slim form ({@link SlimPods}): the fields the operator reads are taken from
 * the token stream as they pass, everything else (managedFields, volumes, environment, probes, most of the status)
 * is skipped without being built, where the client's own decoding builds the whole pod with every nested object
 * and its empty collections only for {@link SlimPods#slim} to drop most of it. The pod watch reads its events this
 * way ({@code PodWatchEvents}), and so do the pod cache's LIST pages ({@link SlimPodList}) and the answers to the
 * operator's pod PATCHes. The result equals
 * {@code SlimPods.slim} of the wholly decoded pod, and what that decoding refuses is refused ({@code SlimPodJsonTest});
 * a value of an odd shape (a string where an object belongs) goes to Jackson's own decoding of its type.
 */
public final class SlimPodJson {
    private static final JavaType OWNER_REFERENCES = TypeFactory.defaultInstance()
            .constructCollectionType(List.class, OwnerReference.class);
    private static final JavaType LIST_META = TypeFactory.defaultInstance().constructType(ListMeta.class);
    private static final JavaType STRING_MAP = TypeFactory.defaultInstance().constructMapType(LinkedHashMap.class,
            String.class, String.class);
    private static final JavaType STRINGS = TypeFactory.defaultInstance().constructCollectionType(List.class,
            String.class);

    private SlimPodJson() {
    }

    /**
     * The slim pod of an object whose {@code apiVersion} and {@code kind} the parser has read already; it is on the
     * name of the next field, {@code field}, or at the object's end when that is null: where a watch event's reader
     * is once it has seen that the object is a pod, and a list's reader at the start of an item (with the model's
     * defaults for the two).
     */
    public static Pod readRest(JsonParser p, DeserializationContext ctxt, String apiVersion, String kind, String field)
            throws IOException {
        Pod pod = new Pod();
        pod.setApiVersion(apiVersion);
        pod.setKind(kind);
        for (String f = field; f != null; f = p.nextFieldName()) {
            p.nextToken();
            switch (f) {
                case "apiVersion" -> pod.setApiVersion(text(p, ctxt));
                case "kind" -> pod.setKind(text(p, ctxt));
                case "metadata" -> pod.setMetadata(object(p, ctxt, ObjectMeta.class, SlimPodJson::metadata));
                case "spec" -> pod.setSpec(object(p, ctxt, PodSpec.class, SlimPodJson::spec));
                case "status" -> pod.setStatus(object(p, ctxt, PodStatus.class, SlimPodJson::status));
                default -> p.skipChildren();
            }
        }
        return SlimPods.slim(pod);
    }

    /**
     * A whole pod object, the parser on its start, as a slim pod (without apiVersion and kind, a v1 Pod, as the
     * client's model has it): how the operator reads the pod that answers its own writes.
     */
    public static Pod read(JsonParser p, DeserializationContext ctxt) throws IOException {
        return readRest(p, ctxt, "v1", "Pod", firstField(p, ctxt));
    }

    /**
     * A page of a pod LIST, the parser on its start, with its items read as slim pods. An item that does not say
     * its apiVersion and kind (the API server leaves them out of a list's items) is a v1 Pod, as the client's model
     * has it.
     */
    public static SlimPodList readList(JsonParser p, DeserializationContext ctxt) throws IOException {
        SlimPodList list = new SlimPodList();
        for (String field = firstField(p, ctxt); field != null; field = p.nextFieldName()) {
            p.nextToken();
            switch (field) {
                case "apiVersion" -> list.setApiVersion(text(p, ctxt));
                case "kind" -> list.setKind(text(p, ctxt));
                case "metadata" -> list.setMetadata(whole(p, ctxt, LIST_META));
                case "items" -> list.setItems(list(p, ctxt, Pod.class, SlimPodJson::read));
                default -> p.skipChildren();
            }
        }
        return list;
    }

    /**
     * The first field name of the object the parser is on (null for an empty object). The readers below are called
     * on objects only ({@link #object}, {@link #list}); the list's own start is checked here.
     */
    private static String firstField(JsonParser p, DeserializationContext ctxt) throws IOException {
        if (p.currentToken() != JsonToken.START_OBJECT) {
            throw JsonMappingException.from(ctxt, "expected a JSON object, found " + p.currentToken());
        }
        return p.nextFieldName();
    }

    private static ObjectMeta metadata(JsonParser p, DeserializationContext ctxt) throws IOException {
        ObjectMeta m = new ObjectMeta();
        for (String field = p.nextFieldName(); field != null; field = p.nextFieldName()) {
            p.nextToken();
            switch (field) {
                case "name" -> m.setName(text(p, ctxt));
                case "namespace" -> m.setNamespace(text(p, ctxt));
                case "uid" -> m.setUid(text(p, ctxt));
                case "resourceVersion" -> m.setResourceVersion(text(p, ctxt));
                case "generateName" -> m.setGenerateName(text(p, ctxt));
                case "creationTimestamp" -> m.setCreationTimestamp(text(p, ctxt));
                case "deletionTimestamp" -> m.setDeletionTimestamp(text(p, ctxt));
                case "deletionGracePeriodSeconds" -> m.setDeletionGracePeriodSeconds(number(p, ctxt));
                case "generation" -> m.setGeneration(number(p, ctxt));
                case "labels" -> m.setLabels(strings(p, ctxt));
                case "annotations" -> m.setAnnotations(strings(p, ctxt));
                case "ownerReferences" -> m.setOwnerReferences(whole(p, ctxt, OWNER_REFERENCES));
                case "finalizers" -> m.setFinalizers(whole(p, ctxt, STRINGS));
                default -> p.skipChildren();
            }
        }
        return m;
    }

    private static PodSpec spec(JsonParser p, DeserializationContext ctxt) throws IOException {
        PodSpec s = new PodSpec();
        for (String field = p.nextFieldName(); field != null; field = p.nextFieldName()) {
            p.nextToken();
            switch (field) {
                case "nodeName" -> s.setNodeName(text(p, ctxt));
                case "containers" -> s.setContainers(list(p, ctxt, Container.class, SlimPodJson::container));
                default -> p.skipChildren();
            }
        }
        return s;
    }

    private static Container container(JsonParser p, DeserializationContext ctxt) throws IOException {
        Container c = new Container();
        for (String field = p.nextFieldName(); field != null; field = p.nextFieldName()) {
            p.nextToken();
            switch (field) {
                case "name" -> c.setName(text(p, ctxt));
                case "image" -> c.setImage(text(p, ctxt));
                case "ports" -> c.setPorts(list(p, ctxt, ContainerPort.class, SlimPodJson::port));
                default -> p.skipChildren();
            }
        }
        return c;
    }

    private static ContainerPort port(JsonParser p, DeserializationContext ctxt) throws IOException {
        ContainerPort port = new ContainerPort();
        for (String field = p.nextFieldName(); field != null; field = p.nextFieldName()) {
            p.nextToken();
            switch (field) {
                case "containerPort" -> port.setContainerPort(integer(p, ctxt));
                case "hostIP" -> port.setHostIP(text(p, ctxt));
                case "hostPort" -> port.setHostPort(integer(p, ctxt));
                case "name" -> port.setName(text(p, ctxt));
                case "protocol" -> port.setProtocol(text(p, ctxt));
                default -> p.skipChildren();
            }
        }
        return port;
    }

    private static PodStatus status(JsonParser p, DeserializationContext ctxt) throws IOException {
        PodStatus s = new PodStatus();
        for (String field = p.nextFieldName(); field != null; field = p.nextFieldName()) {
            p.nextToken();
            switch (field) {
                case "phase" -> s.setPhase(text(p, ctxt));
                case "reason" -> s.setReason(text(p, ctxt));
                case "conditions" -> s.setConditions(list(p, ctxt, PodCondition.class, SlimPodJson::condition));
                case "containerStatuses" -> s.setContainerStatuses(list(p, ctxt, ContainerStatus.class,
                        SlimPodJson::containerStatus));
                default -> p.skipChildren();
            }
        }
        return s;
    }

    private static PodCondition condition(JsonParser p, DeserializationContext ctxt) throws IOException {
        PodCondition c = new PodCondition();
        for (String field = p.nextFieldName(); field != null; field = p.nextFieldName()) {
            p.nextToken();
            switch (field) {
                case "lastProbeTime" -> c.setLastProbeTime(text(p, ctxt));
                case "lastTransitionTime" -> c.setLastTransitionTime(text(p, ctxt));
                case "message" -> c.setMessage(text(p, ctxt));
                case "observedGeneration" -> c.setObservedGeneration(number(p, ctxt));
                case "reason" -> c.setReason(text(p, ctxt));
                case "status" -> c.setStatus(text(p, ctxt));
                case "type" -> c.setType(text(p, ctxt));
                default -> p.skipChildren();
            }
        }
        return c;
    }

    private static ContainerStatus containerStatus(JsonParser p, DeserializationContext ctxt) throws IOException {
        ContainerStatus c = new ContainerStatus();
        for (String field = p.nextFieldName(); field != null; field = p.nextFieldName()) {
            p.nextToken();
            switch (field) {
                case "name" -> c.setName(text(p, ctxt));
                case "ready" -> c.setReady(bool(p, ctxt));
                case "started" -> c.setStarted(bool(p, ctxt));
                case "restartCount" -> c.setRestartCount(integer(p, ctxt));
                case "image" -> c.setImage(text(p, ctxt));
                case "state" -> c.setState(object(p, ctxt, ContainerState.class, SlimPodJson::state));
                default -> p.skipChildren();
            }
        }
        return c;
    }

    private static ContainerState state(JsonParser p, DeserializationContext ctxt) throws IOException {
        ContainerState s = new ContainerState();
        for (String field = p.nextFieldName(); field != null; field = p.nextFieldName()) {
            if (p.nextToken() == JsonToken.VALUE_NULL) {
                continue;
            }
            switch (field) {
                case "running" -> s.setRunning(object(p, ctxt, ContainerStateRunning.class, SlimPodJson::running));
                case "terminated" -> s.setTerminated(object(p, ctxt, ContainerStateTerminated.class,
                        SlimPodJson::terminated));
                case "waiting" -> s.setWaiting(object(p, ctxt, ContainerStateWaiting.class, SlimPodJson::waiting));
                default -> p.skipChildren();
            }
        }
        return s;
    }

    private static ContainerStateRunning running(JsonParser p, DeserializationContext ctxt) throws IOException {
        ContainerStateRunning r = new ContainerStateRunning();
        for (String field = p.nextFieldName(); field != null; field = p.nextFieldName()) {
            p.nextToken();
            if (field.equals("startedAt")) {
                r.setStartedAt(text(p, ctxt));
            } else {
                p.skipChildren();
            }
        }
        return r;
    }

    private static ContainerStateTerminated terminated(JsonParser p, DeserializationContext ctxt) throws IOException {
        ContainerStateTerminated r = new ContainerStateTerminated();
        for (String field = p.nextFieldName(); field != null; field = p.nextFieldName()) {
            p.nextToken();
            switch (field) {
                case "containerID" -> r.setContainerID(text(p, ctxt));
                case "exitCode" -> r.setExitCode(integer(p, ctxt));
                case "finishedAt" -> r.setFinishedAt(text(p, ctxt));
                case "message" -> r.setMessage(text(p, ctxt));
                case "reason" -> r.setReason(text(p, ctxt));
                case "signal" -> r.setSignal(integer(p, ctxt));
                case "startedAt" -> r.setStartedAt(text(p, ctxt));
                default -> p.skipChildren();
            }
        }
        return r;
    }

    private static ContainerStateWaiting waiting(JsonParser p, DeserializationContext ctxt) throws IOException {
        ContainerStateWaiting r = new ContainerStateWaiting();
        for (String field = p.nextFieldName(); field != null; field = p.nextFieldName()) {
            p.nextToken();
            switch (field) {
                case "message" -> r.setMessage(text(p, ctxt));
                case "reason" -> r.setReason(text(p, ctxt));
                default -> p.skipChildren();
            }
        }
        return r;
    }

    /**
     * A reader of one JSON value ({@link #object}, {@link #list}'s elements; {@link #read} and {@link #readList} as
     * the pod watch's deserializers).
     */
    public interface Element<T> {
        T read(JsonParser p, DeserializationContext ctxt) throws IOException;
    }

    /**
     * A JSON value of the model's {@code type}: an object by {@code reader}, null for null, anything else by
     * Jackson's own decoding of the type, which refuses it or makes of it what the client's model does.
     */
    private static <T> T object(JsonParser p, DeserializationContext ctxt, Class<T> type, Element<T> reader)
            throws IOException {
        return p.currentToken() == JsonToken.START_OBJECT ? reader.read(p, ctxt)
                : whole(p, ctxt, ctxt.constructType(type));
    }

    /** A JSON value decoded whole by Jackson as {@code type}, null for null. */
    private static <T> T whole(JsonParser p, DeserializationContext ctxt, JavaType type) throws IOException {
        return p.currentToken() == JsonToken.VALUE_NULL ? null : ctxt.readValue(p, type);
    }

    /**
     * A JSON array of {@code type}s, each as {@link #object} reads it (null for null; a null element stays null);
     * anything else as Jackson has it.
     */
    private static <T> List<T> list(JsonParser p, DeserializationContext ctxt, Class<T> type, Element<T> element)
            throws IOException {
        JsonToken t = p.currentToken();
        if (t == JsonToken.VALUE_NULL) {
            return null;
        }
        if (t != JsonToken.START_ARRAY) {
            return ctxt.readValue(p, ctxt.getTypeFactory().constructCollectionType(List.class, type));
        }
        List<T> out = new ArrayList<>();
        while (p.nextToken() != JsonToken.END_ARRAY) {
            out.add(object(p, ctxt, type, element));
        }
        return out;
    }

    /** A JSON object of strings (labels, annotations), in order; null for null, anything else as Jackson has it. */
    private static Map<String, String> strings(JsonParser p, DeserializationContext ctxt) throws IOException {
        if (p.currentToken() != JsonToken.START_OBJECT) {
            return whole(p, ctxt, STRING_MAP);
        }
        Map<String, String> out = new LinkedHashMap<>();
        for (String field = p.nextFieldName(); field != null; field = p.nextFieldName()) {
            p.nextToken();
            out.put(field, text(p, ctxt));
        }
        return out;
    }

    /**
     * A string field's value. Scalars the API server writes are read at once; anything else goes through Jackson's
     * own coercion, as in the client's model (a number becomes its text, an object fails).
     */
    private static String text(JsonParser p, DeserializationContext ctxt) throws IOException {
        JsonToken t = p.currentToken();
        if (t == JsonToken.VALUE_STRING) {
            return p.getText();
        }
        return t == JsonToken.VALUE_NULL ? null : ctxt.readValue(p, String.class);
    }

    private static Integer integer(JsonParser p, DeserializationContext ctxt) throws IOException {
        JsonToken t = p.currentToken();
        if (t == JsonToken.VALUE_NUMBER_INT && p.getNumberType() == JsonParser.NumberType.INT) {
            return p.getIntValue();
        }
        return t == JsonToken.VALUE_NULL ? null : ctxt.readValue(p, Integer.class);
    }

    private static Long number(JsonParser p, DeserializationContext ctxt) throws IOException {
        JsonToken t = p.currentToken();
        if (t == JsonToken.VALUE_NUMBER_INT && p.getNumberType() != JsonParser.NumberType.BIG_INTEGER) {
            return p.getLongValue();
        }
        return t == JsonToken.VALUE_NULL ? null : ctxt.readValue(p, Long.class);
    }

    private static Boolean bool(JsonParser p, DeserializationContext ctxt) throws IOException {
        JsonToken t = p.currentToken();
        if (t == JsonToken.VALUE_TRUE || t == JsonToken.VALUE_FALSE) {
            return t == JsonToken.VALUE_TRUE;
        }
        return t == JsonToken.VALUE_NULL ? null : ctxt.readValue(p, Boolean.class);
    }
}
