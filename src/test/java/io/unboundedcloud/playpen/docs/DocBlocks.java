package io.unboundedcloud.playpen.docs;

import java.util.ArrayList;
import java.util.List;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

/**
 * The shell blocks of a Markdown document, as {@link DocsIT} runs them.
 *
 * <ul>
 * <li>A fenced block tagged {@code sh}, {@code bash} or {@code shell} is a script: it runs as one bash script that
 * stops at the first failing command, and must exit 0.</li>
 * <li>A block tagged {@code console} is a session: lines starting with {@code $ } are commands (backslash
 * continuation again), the lines after each one are its output as kubectl or the shell printed it, compared with
 * what the command prints now after {@link OutputMatch} has taken out what changes from run to run.</li>
 * <li>An HTML comment right before a block (a blank line between is fine) changes that: {@code <!-- test: skip
 * (why) -->} leaves it out (the reason is required), {@code <!-- test: playground -->} starts the script's last
 * command in the background as the playground the rest of the document talks to, and waits until it is ready.</li>
 * <li>{@code <!-- test: stop -->} anywhere stops the playgrounds started so far in the document.</li>
 * </ul>
 * Other blocks (yaml, json, text, none) are not run.
 */
final class DocBlocks {
    enum Kind { SCRIPT, SESSION, STOP }

    /** One command of a session and the output the document shows for it. */
    record Step(String command, List<String> expected, int line) {
    }

    /**
     * A runnable block (or a stop marker). {@code skip} holds the reason when the block is left out;
     * {@code playground} when it starts one. {@code line} is the opening fence's line (1-based).
     */
    record Block(Kind kind, List<Step> steps, String script, String skip, boolean playground, int line, int fenceStart,
            int fenceEnd) {
    }

    /** A fence, also indented (a block inside a list item). */
    private static final Pattern FENCE = Pattern.compile("^( {0,6})(```+)\\s*([A-Za-z0-9_-]*)\\s*.*$");
    private static final Pattern MARKER = Pattern.compile("^<!--\\s*test:\\s*([a-z-]+)\\s*(.*?)\\s*-->\\s*$");

    private DocBlocks() {
    }

    static List<Block> parse(String markdown) {
        List<String> lines = markdown.lines().toList();
        List<Block> blocks = new ArrayList<>();
        String pendingSkip = null;
        boolean pendingPlayground = false;
        int pendingLine = -1;
        for (int i = 0; i < lines.size(); i++) {
            String line = lines.get(i);
            Matcher marker = MARKER.matcher(line.trim());
            if (marker.matches()) {
                String what = marker.group(1);
                switch (what) {
                    case "skip" -> {
                        String why = marker.group(2).replaceAll("^\\(|\\)$", "").trim();
                        if (why.isEmpty()) {
                            throw new IllegalArgumentException("line " + (i + 1) + ": <!-- test: skip --> needs a reason,"
                                    + " e.g. <!-- test: skip (needs a cluster) -->");
                        }
                        pendingSkip = why;
                        pendingLine = i;
                    }
                    case "playground" -> {
                        pendingPlayground = true;
                        pendingLine = i;
                    }
                    case "stop" -> blocks.add(new Block(Kind.STOP, List.of(), "", null, false, i + 1, i, i));
                    default -> throw new IllegalArgumentException("line " + (i + 1) + ": unknown test marker \"" + what
                            + "\" (skip, playground or stop)");
                }
                continue;
            }
            Matcher fence = FENCE.matcher(line);
            if (!fence.matches()) {
                if (!line.isBlank() && pendingLine >= 0) {
                    throw new IllegalArgumentException("line " + (pendingLine + 1) + ": a test marker must come right"
                            + " before a code block");
                }
                continue;
            }
            String tag = fence.group(3).toLowerCase(java.util.Locale.ROOT);
            String indent = fence.group(1);
            int end = i + 1;
            while (end < lines.size() && !lines.get(end).trim().startsWith(fence.group(2))) {
                end++;
            }
            List<String> body = lines.subList(i + 1, Math.min(end, lines.size())).stream()
                    .map(l -> l.startsWith(indent) ? l.substring(indent.length()) : l.stripLeading()).toList();
            boolean script = List.of("sh", "bash", "shell").contains(tag);
            boolean session = tag.equals("console");
            if (script || session) {
                List<Step> steps = script ? scriptSteps(body, i + 2) : sessionSteps(body, i + 2);
                if (pendingPlayground && !script) {
                    throw new IllegalArgumentException("line " + (i + 1) + ": a playground must be started from an sh block");
                }
                blocks.add(new Block(script ? Kind.SCRIPT : Kind.SESSION, steps, String.join("\n", body) + "\n",
                        pendingSkip, pendingPlayground, i + 1, i, Math.min(end, lines.size())));
            } else if (pendingLine >= 0) {
                throw new IllegalArgumentException("line " + (pendingLine + 1) + ": a test marker before a "
                        + (tag.isEmpty() ? "plain" : tag) + " block, which is never run");
            }
            pendingSkip = null;
            pendingPlayground = false;
            pendingLine = -1;
            i = end;
        }
        return blocks;
    }

    /** A script's commands: one per line, joined across trailing backslashes; blank lines and comments dropped. */
    static List<Step> scriptSteps(List<String> body, int firstLine) {
        List<Step> steps = new ArrayList<>();
        StringBuilder cmd = new StringBuilder();
        int start = -1;
        for (int j = 0; j < body.size(); j++) {
            String l = body.get(j);
            if (cmd.length() == 0 && (l.isBlank() || l.trim().startsWith("#"))) {
                continue;
            }
            if (cmd.length() == 0) {
                start = firstLine + j;
            }
            if (l.endsWith("\\")) {
                cmd.append(l, 0, l.length() - 1).append(' ');
                continue;
            }
            cmd.append(l);
            steps.add(new Step(cmd.toString().trim(), List.of(), start));
            cmd.setLength(0);
        }
        if (cmd.length() > 0) {
            steps.add(new Step(cmd.toString().trim(), List.of(), start));
        }
        return steps;
    }

    /** A session's commands ({@code $ } lines, with continuations) and the output lines after each. */
    static List<Step> sessionSteps(List<String> body, int firstLine) {
        List<Step> steps = new ArrayList<>();
        for (int j = 0; j < body.size(); j++) {
            String l = body.get(j);
            if (!l.startsWith("$ ")) {
                if (!l.isBlank()) {
                    throw new IllegalArgumentException("line " + (firstLine + j) + ": output before the first \"$ \""
                            + " command of a console block");
                }
                continue;
            }
            int start = firstLine + j;
            StringBuilder cmd = new StringBuilder(l.substring(2));
            while (cmd.toString().endsWith("\\") && j + 1 < body.size()) {
                cmd.setLength(cmd.length() - 1);
                cmd.append(' ').append(body.get(++j).trim());
            }
            List<String> out = new ArrayList<>();
            while (j + 1 < body.size() && !body.get(j + 1).startsWith("$ ")) {
                out.add(body.get(++j));
            }
            while (!out.isEmpty() && out.get(out.size() - 1).isBlank()) {
                out.remove(out.size() - 1);
            }
            steps.add(new Step(cmd.toString().trim(), out, start));
        }
        return steps;
    }
}
