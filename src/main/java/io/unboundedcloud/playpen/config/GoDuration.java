package io.unboundedcloud.playpen.config;

import java.time.Duration;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

/** Parses and prints Go's {@code time.Duration} syntax ("90s", "1h30m", "250ms", "0"). */
public final class GoDuration {
    private static final Pattern PART = Pattern.compile("(\\d+(?:\\.\\d*)?|\\.\\d+)(ns|us|µs|ms|s|m|h)");

    private GoDuration() {
    }

    public static Duration parse(String text) {
        String s = text == null ? "" : text.trim();
        if (s.isEmpty()) {
            throw new IllegalArgumentException("empty duration");
        }
        boolean negative = false;
        if (s.startsWith("-") || s.startsWith("+")) {
            negative = s.startsWith("-");
            s = s.substring(1);
        }
        // a bare sign is not a duration (Go: invalid duration "-"); without this check it parsed as zero
        if (s.isEmpty()) {
            throw new IllegalArgumentException("invalid duration \"" + text + "\"");
        }
        if (s.equals("0")) {
            return Duration.ZERO;
        }
        Matcher m = PART.matcher(s);
        int pos = 0;
        double nanos = 0;
        while (pos < s.length()) {
            if (!m.find(pos) || m.start() != pos) {
                throw new IllegalArgumentException("invalid duration \"" + text + "\"");
            }
            double value = Double.parseDouble(m.group(1));
            nanos += value * unitNanos(m.group(2));
            pos = m.end();
        }
        Duration d = Duration.ofNanos(Math.round(nanos));
        return negative ? d.negated() : d;
    }

    private static double unitNanos(String unit) {
        switch (unit) {
            case "ns": return 1;
            case "us":
            case "µs": return 1_000;
            case "ms": return 1_000_000;
            case "s": return 1_000_000_000d;
            case "m": return 60 * 1_000_000_000d;
            default: return 3600 * 1_000_000_000d;
        }
    }

    /** Formats like Go: 1h30m0s, 30s, 250ms, 0s. */
    public static String format(Duration d) {
        if (d.isZero()) {
            return "0s";
        }
        StringBuilder sb = new StringBuilder();
        if (d.isNegative()) {
            sb.append('-');
            d = d.negated();
        }
        if (d.compareTo(Duration.ofSeconds(1)) < 0) {
            long ns = d.toNanos();
            if (ns % 1_000_000 == 0) {
                return sb.append(ns / 1_000_000).append("ms").toString();
            }
            return sb.append(ns).append("ns").toString();
        }
        long h = d.toHours();
        long m = d.toMinutesPart();
        double sec = d.toSecondsPart() + d.toNanosPart() / 1e9;
        if (h > 0) {
            sb.append(h).append('h');
        }
        if (h > 0 || m > 0) {
            sb.append(m).append('m');
        }
        String secText = sec == Math.floor(sec) ? String.valueOf((long) sec) : String.valueOf(sec);
        return sb.append(secText).append('s').toString();
    }
}
