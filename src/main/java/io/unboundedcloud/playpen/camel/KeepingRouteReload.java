package io.unboundedcloud.playpen.camel;

import java.util.ArrayList;
import java.util.Collection;
import java.util.List;

import org.apache.camel.CamelContext;
import org.apache.camel.Route;
import org.apache.camel.model.Model;
import org.apache.camel.model.RouteConfigurationDefinition;
import org.apache.camel.model.RouteDefinition;
import org.apache.camel.spi.Resource;
import org.apache.camel.support.PatternHelper;
import org.apache.camel.support.RouteWatcherReloadStrategy;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Reloads an edited route file (--routes-reload) and replaces only that file's routes, like Camel's own watcher with
 * {@code removeAllRoutes=false}, and removes the routes the file no longer defines (all of a deleted file's); an edit
 * that cannot be loaded leaves every route of its file running as it was. Camel removes a file's routes before it
 * builds the new ones, one by one, so an edit that parses but cannot be built (a bean or an endpoint that does not
 * exist) would otherwise leave the flow without a route, or some of the file's routes new and the rest gone. The
 * requests waiting for capacity in the routes a reload replaces are answered once the edit parses ({@link
 * RouteWaits}). An edited route configuration (errors.camel.yaml) also loads again the files of the routes that use
 * it, and is refused, put back as it was, when one of them cannot be built with it.
 */
final class KeepingRouteReload extends RouteWatcherReloadStrategy {
    private static final Logger LOG = LoggerFactory.getLogger(KeepingRouteReload.class);

    private final RouteWaits waits;

    KeepingRouteReload(String directory, String pattern, RouteWaits waits) {
        super(directory, false);
        this.waits = waits;
        setPattern(pattern);
        setRemoveAllRoutes(false);
    }

    @Override
    protected void onRouteReload(Collection<Resource> resources, boolean removeEverything) {
        if (resources == null) {
            // every route file (a properties file reloaded): Camel's own reload, which the pattern never asks for
            super.onRouteReload(resources, removeEverything);
            return;
        }
        Model model = getCamelContext().getCamelContextExtension().getContextPlugin(Model.class);
        List<RouteConfigurationDefinition> configurations = new ArrayList<>(model.getRouteConfigurationDefinitions());
        reload(resources, resources);
        // a route takes its route configuration (the error handling the HTTP flows share) as it is built: an edited
        // one reaches the routes built before it once they are built again, so their files are loaded again too; if
        // one of them cannot be built with it, the edit is refused as a whole
        List<Resource> users = usersOfNewConfigurations(model, configurations, resources);
        if (!users.isEmpty()) {
            LOG.info("route configuration of {} reloaded; loading again the route files that use it: {}",
                    locations(resources), locations(users));
            try {
                reload(users, resources);
            } catch (RuntimeException e) {
                putBack(model, configurations);
                throw e;
            }
        }
    }

    /**
     * Loads {@code resources} again, or leaves every route of theirs as it was when one cannot be loaded ({@code
     * edited}, the files saved, named as the ones to fix). Camel's own reload is not used: it loads a file that failed
     * again with every later edit (so a good edit of another file was refused too, and blamed).
     */
    private void reload(Collection<Resource> resources, Collection<Resource> edited) {
        CamelContext context = getCamelContext();
        Model model = context.getCamelContextExtension().getContextPlugin(Model.class);
        List<Resource> present = resources.stream().filter(Resource::exists).toList();
        org.apache.camel.spi.RoutesLoader loader = org.apache.camel.support.PluginHelper.getRoutesLoader(context);
        try {
            // an edit that does not parse replaces nothing, so it ends no wait either
            loader.findRoutesBuilders(present);
        } catch (Exception e) {
            LOG.warn("route file {} not loaded, its routes run as before; fix the file and save it again: {}",
                    locations(edited), e.getMessage());
            throw org.apache.camel.RuntimeCamelException.wrapRuntimeException(e);
        }
        List<RouteDefinition> before = new ArrayList<>(model.getRouteDefinitions());
        // the requests waiting for capacity in the routes replaced are answered while those still run
        List<Route> replaced = replaced(context, resources);
        waits.replacing(replaced);
        try {
            java.util.Set<String> ids = loader.updateRoutes(present);
            LOG.info("route file {} loaded: routes {}", locations(resources), ids);
            int index = 1;
            for (String id : ids) {
                org.apache.camel.support.EventHelper.notifyRouteReloaded(context, context.getRoute(id), index++,
                        ids.size());
            }
            removeLeftOver(context, model, replaced);
        } catch (Exception e) {
            putBack(context, model, before, resources, edited, e);
            throw org.apache.camel.RuntimeCamelException.wrapRuntimeException(e);
        } finally {
            waits.replaced(replaced);
        }
    }

    /**
     * Puts every route of {@code resources} back as it was in {@code before} (Camel replaces a file's routes one by
     * one, so those before the one that failed run their new versions), drops the routes the failed load added, and
     * starts any other route of {@code before} that is not running.
     */
    private static void putBack(CamelContext context, Model model, List<RouteDefinition> before,
            Collection<Resource> resources, Collection<Resource> edited, Exception failure) {
        List<String> files = resources.stream().map(KeepingRouteReload::fileName).toList();
        List<RouteDefinition> back = before.stream()
                .filter(d -> ofFiles(d, files) || context.getRoute(d.getRouteId()) == null).toList();
        List<String> ids = back.stream().map(RouteDefinition::getRouteId).toList();
        try {
            for (RouteDefinition added : new ArrayList<>(model.getRouteDefinitions())) {
                if (ofFiles(added, files) && !ids.contains(added.getRouteId())) {
                    model.removeRouteDefinition(added);
                }
            }
            model.addRouteDefinitions(back);
            LOG.warn("route file {} not loaded, its routes run as before; fix the file and save it again: {}",
                    locations(edited), failure.getMessage());
        } catch (Exception restore) {
            LOG.error("route file {} not loaded, and routes {} could not be put back; restart the operator: {}",
                    locations(edited), ids, restore.toString());
        }
    }

    /** Puts the route configurations back as they were (those of a refused edit replaced in Camel's model). */
    private static void putBack(Model model, List<RouteConfigurationDefinition> configurations) {
        try {
            for (RouteConfigurationDefinition now : new ArrayList<>(model.getRouteConfigurationDefinitions())) {
                if (configurations.stream().noneMatch(c -> c == now)) {
                    model.removeRouteConfiguration(now);
                }
            }
            for (RouteConfigurationDefinition c : configurations) {
                if (model.getRouteConfigurationDefinitions().stream().noneMatch(now -> now == c)) {
                    model.addRouteConfiguration(c);
                }
            }
        } catch (Exception e) {
            LOG.error("route configurations could not be put back as they were; restart the operator: {}", e.toString());
        }
    }

    private static boolean ofFiles(RouteDefinition definition, List<String> files) {
        return definition.getResource() != null && files.contains(fileName(definition.getResource()));
    }

    /**
     * Stops and removes the routes of the reloaded files that the files no longer define (every route of a deleted
     * file): Camel replaces only the route ids the file it loads defines, so a route taken out of its file, renamed,
     * or left by a deleted file would otherwise run on (its timer firing) until a restart.
     */
    private static void removeLeftOver(CamelContext context, Model model, List<Route> replaced) {
        for (Route route : replaced) {
            if (context.getRoute(route.getId()) != route) {
                continue; // built again from its file
            }
            String file = route.getSourceResource().getLocation();
            RouteDefinition definition = model.getRouteDefinition(route.getId());
            try {
                if (definition != null) {
                    model.removeRouteDefinition(definition);
                } else {
                    context.getRouteController().stopRoute(route.getId());
                    context.removeRoute(route.getId());
                }
                LOG.info("route {} stopped and removed: {} {}", route.getId(), file,
                        route.getSourceResource().exists() ? "no longer defines it" : "was deleted");
            } catch (Exception e) {
                LOG.error("route {} of {} is no longer in the file but could not be removed; it runs until a restart:"
                        + " {}", route.getId(), file, e.toString());
            }
        }
    }

    /**
     * The files of the routes that use a route configuration loaded since {@code before} (by its id in their
     * {@code routeConfigurationId}), each once, but those of {@code reloaded}.
     */
    private static List<Resource> usersOfNewConfigurations(Model model,
            List<RouteConfigurationDefinition> before, Collection<Resource> reloaded) {
        List<String> ids = model.getRouteConfigurationDefinitions().stream()
                .filter(c -> before.stream().noneMatch(b -> b == c) && c.getId() != null)
                .map(RouteConfigurationDefinition::getId).toList();
        List<String> done = reloaded.stream().map(KeepingRouteReload::fileName).toList();
        java.util.Map<String, Resource> users = new java.util.LinkedHashMap<>();
        for (RouteDefinition d : model.getRouteDefinitions()) {
            if (d.getResource() != null && d.getRouteConfigurationId() != null && ids.stream().anyMatch(id ->
                    java.util.Arrays.stream(d.getRouteConfigurationId().split(","))
                            .anyMatch(p -> PatternHelper.matchPattern(id, p.trim())))
                    && !done.contains(fileName(d.getResource()))) {
                users.putIfAbsent(fileName(d.getResource()), d.getResource());
            }
        }
        return List.copyOf(users.values());
    }

    /**
     * The running routes a reload of {@code resources} replaces: those loaded from the same files (every route
     * folder file has its own name).
     */
    private static List<Route> replaced(CamelContext context, Collection<Resource> resources) {
        List<String> files = resources.stream().map(KeepingRouteReload::fileName).toList();
        return context.getRoutes().stream()
                .filter(r -> r.getSourceResource() != null && files.contains(fileName(r.getSourceResource())))
                .toList();
    }

    private static String fileName(Resource resource) {
        String location = String.valueOf(resource.getLocation());
        return location.substring(location.lastIndexOf('/') + 1);
    }

    private static String locations(Collection<Resource> resources) {
        return String.join(", ", resources.stream().map(Resource::getLocation).toList());
    }
}
