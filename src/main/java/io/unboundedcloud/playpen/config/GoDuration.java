package io.unboundedcloud.playpen.config;

import java.time.Duration;

/** Parses and prints Go's {@code time.Duration} syntax ("90s", "1h30m", "250ms", "0"). */
public final class GoDuration {
    private GoDuration() {
    }

    /**
     * Parses like Go's time.ParseDuration: a fraction is truncated to whole nanoseconds (never rounded up), and a
     * value beyond what a Go Duration holds (about 292 years) is refused, not capped. White space around the text is
     * refused too, as Go refuses " 5s": a caller that means to ignore it trims first.
     */
    public static Duration parse(String text) {
        String s = text == null ? "" : text;
        if (s.isEmpty()) {
            throw new IllegalArgumentException("empty duration");
        }
        boolean negative = false;
        if (s.startsWith("-") || s.startsWith("+")) {
            negative = s.startsWith("-");
            s = s.substring(1);
        }
        if (s.equals("0")) {
            return Duration.ZERO;
        }
        // a bare sign is not a duration (Go: invalid duration "-")
        if (s.isEmpty()) {
            throw invalid(text);
        }
        long total = 0; // unsigned, at most 1 << 63
        int pos = 0;
        while (pos < s.length()) {
            char c = s.charAt(pos);
            if (c != '.' && !isDigit(c)) {
                throw invalid(text);
            }
            // the integer part, exactly (unsigned, refused beyond 1 << 63)
            int intStart = pos;
            long v = 0;
            while (pos < s.length() && isDigit(s.charAt(pos))) {
                if (Long.compareUnsigned(v, Long.divideUnsigned(Long.MIN_VALUE, 10)) > 0) {
                    throw invalid(text);
                }
                v = v * 10 + (s.charAt(pos) - '0');
                if (Long.compareUnsigned(v, Long.MIN_VALUE) > 0) {
                    throw invalid(text);
                }
                pos++;
            }
            boolean pre = pos != intStart;
            // the fraction: digits past what 63 bits hold only stop adding precision
            long f = 0;
            double scale = 1;
            boolean post = false;
            if (pos < s.length() && s.charAt(pos) == '.') {
                pos++;
                int fracStart = pos;
                boolean overflow = false;
                while (pos < s.length() && isDigit(s.charAt(pos))) {
                    if (!overflow) {
                        if (Long.compareUnsigned(f, Long.MAX_VALUE / 10) > 0) {
                            overflow = true;
                        } else {
                            long y = f * 10 + (s.charAt(pos) - '0'); // unsigned, as Go's uint64
                            if (Long.compareUnsigned(y, Long.MIN_VALUE) > 0) {
                                overflow = true;
                            } else {
                                f = y;
                                scale *= 10;
                            }
                        }
                    }
                    pos++;
                }
                post = pos != fracStart;
            }
            if (!pre && !post) {
                throw invalid(text);
            }
            int unitStart = pos;
            while (pos < s.length() && s.charAt(pos) != '.' && !isDigit(s.charAt(pos))) {
                pos++;
            }
            if (pos == unitStart) {
                throw new IllegalArgumentException("missing unit in duration \"" + text + "\"");
            }
            long unit = unitNanos(s.substring(unitStart, pos), text);
            if (Long.compareUnsigned(v, Long.divideUnsigned(Long.MIN_VALUE, unit)) > 0) {
                throw invalid(text);
            }
            v *= unit;
            if (f > 0) {
                // as Go: in float64, truncated to whole nanoseconds
                double fraction = f < 0 ? 0x1p63 : (double) f;
                v += (long) (fraction * ((double) unit / scale));
                if (Long.compareUnsigned(v, Long.MIN_VALUE) > 0) {
                    throw invalid(text);
                }
            }
            total += v;
            if (Long.compareUnsigned(total, Long.MIN_VALUE) > 0 || Long.compareUnsigned(total, v) < 0) {
                throw invalid(text);
            }
        }
        if (negative) {
            return Duration.ofNanos(-total); // 1 << 63 negated is the smallest long, as in Go
        }
        if (total < 0) {
            throw invalid(text);
        }
        return Duration.ofNanos(total);
    }

    private static boolean isDigit(char c) {
        return c >= '0' && c <= '9';
    }

    private static IllegalArgumentException invalid(String text) {
        return new IllegalArgumentException("invalid duration \"" + text + "\"");
    }

    private static long unitNanos(String unit, String text) {
        switch (unit) {
            case "ns": return 1;
            case "us":
            case "\u00b5s": // micro sign
            case "\u03bcs": // Greek small letter mu
                return 1_000;
            case "ms": return 1_000_000;
            case "s": return 1_000_000_000L;
            case "m": return 60 * 1_000_000_000L;
            case "h": return 3600 * 1_000_000_000L;
            default:
                throw new IllegalArgumentException("unknown unit \"" + unit + "\" in duration \"" + text + "\"");
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
        if (h > 0) {
            sb.append(h).append('h');
        }
        if (h > 0 || m > 0) {
            sb.append(m).append('m');
        }
        sb.append(d.toSecondsPart());
        int nanos = d.toNanosPart();
        if (nanos != 0) {
            // the fraction's exact decimal digits, as Go prints them (a double would print 10.351 as 10.350999999999999)
            String digits = String.format("%09d", nanos);
            int end = digits.length();
            while (digits.charAt(end - 1) == '0') {
                end--;
            }
            sb.append('.').append(digits, 0, end);
        }
        return sb.append('s').toString();
    }
}
