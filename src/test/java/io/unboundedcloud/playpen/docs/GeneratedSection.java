package io.unboundedcloud.playpen.docs;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;

/**
 * A part of a document that a test generates: the lines between {@code <!-- BEGIN GENERATED: name -->} and
 * {@code <!-- END GENERATED: name -->}. Tests compare it with what the code says now; with {@code -Ddocs.write=true}
 * they write it instead (then review the diff).
 */
final class GeneratedSection {
    private GeneratedSection() {
    }

    static String begin(String name) {
        return "<!-- BEGIN GENERATED: " + name + " -->";
    }

    static String end(String name) {
        return "<!-- END GENERATED: " + name + " -->";
    }

    /** The section's current text (without the marker lines). */
    static String read(Path doc, String name) throws IOException {
        String text = Files.readString(doc);
        int b = text.indexOf(begin(name));
        int e = text.indexOf(end(name));
        if (b < 0 || e < b) {
            throw new IllegalStateException(doc + " has no generated section \"" + name + "\" (" + begin(name) + " ... "
                    + end(name) + ")");
        }
        return text.substring(text.indexOf('\n', b) + 1, e);
    }

    /** Replaces the section's text. */
    static void write(Path doc, String name, String content) throws IOException {
        String text = Files.readString(doc);
        int b = text.indexOf(begin(name));
        int e = text.indexOf(end(name));
        if (b < 0 || e < b) {
            throw new IllegalStateException(doc + " has no generated section \"" + name + "\"");
        }
        String body = content.endsWith("\n") ? content : content + "\n";
        Files.writeString(doc, text.substring(0, text.indexOf('\n', b) + 1) + body + text.substring(e));
    }

    /** Writes the section with -Ddocs.write=true; otherwise returns what it holds, for the caller to compare. */
    static String checkOrWrite(Path doc, String name, String generated) throws IOException {
        if (Boolean.getBoolean("docs.write")) {
            write(doc, name, generated);
        }
        return read(doc, name);
    }
}
