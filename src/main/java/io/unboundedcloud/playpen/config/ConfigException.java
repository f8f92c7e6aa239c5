package io.unboundedcloud.playpen.config;

/** A flag or configuration value that stops startup; the message is one line naming the flag. */
public class ConfigException extends RuntimeException {
    public ConfigException(String message) {
        super(message);
    }
}
