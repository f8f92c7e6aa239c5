package io.unboundedcloud.playpen;

import io.unboundedcloud.playpen.config.ConfigException;
import io.unboundedcloud.playpen.config.OperatorConfig;

/** Entry point: parses flags and starts the operator (or the --dev playground). */
public final class Main {
    private Main() {
    }

    public static void main(String[] args) throws Exception {
        OperatorConfig config;
        try {
            config = OperatorConfig.parse(args);
        } catch (ConfigException e) {
            System.err.println("playpen-operator: " + e.getMessage());
            System.exit(2);
            return;
        }
        System.out.println("configured: " + config.namespace());
    }
}
