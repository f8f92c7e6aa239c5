package io.unboundedcloud.playpen.bench;

import java.util.List;
import java.util.Locale;
import java.util.Map;

/**
 * A self-contained HTML page (inline SVG, no scripts, no external CSS): per panel the latency CDF of each
 * scenario on a log time axis, and under it a percentile ladder (p50 box to p90, whisker to p99, dot at max).
 */
final class LatencyChart {
    private static final Map<String, String> COLORS = Map.of(
            "baseline-patch", "#1f77b4",
            "reference-pattern", "#d62728",
            "alloc-https", "#2ca02c",
            "replay-https", "#9467bd");
    private static final int W = 460;
    private static final int H = 250;
    private static final int ML = 46;
    private static final int MR = 12;
    private static final int MT = 28;
    private static final int MB = 34;

    /** One panel: a title and the runs drawn in it. */
    record Panel(String title, List<Stats> runs) {
    }

    private LatencyChart() {
    }

    static String html(String title, List<Panel> panels, String preformattedSummary) {
        double lo = Double.MAX_VALUE;
        double hi = 0;
        for (Panel p : panels) {
            for (Stats s : p.runs()) {
                if (s.count() > 0) {
                    lo = Math.min(lo, s.sortedNanos[0] / 1e6);
                    hi = Math.max(hi, s.maxMs());
                }
            }
        }
        if (hi <= 0) {
            lo = 0.1;
            hi = 1;
        }
        double xmin = Math.pow(10, Math.floor(Math.log10(Math.max(lo, 0.01))));
        double xmax = Math.pow(10, Math.ceil(Math.log10(hi)));
        StringBuilder sb = new StringBuilder();
        sb.append("<!DOCTYPE html>\n<html><head><meta charset=\"utf-8\"><title>").append(esc(title))
                .append("</title>\n<style>body{font-family:sans-serif;margin:16px}"
                        + ".grid{display:flex;flex-wrap:wrap;gap:12px}svg{border:1px solid #ddd;background:#fff}"
                        + "pre{font-size:12px;background:#f6f6f6;padding:8px}</style></head><body>\n");
        sb.append("<h2>").append(esc(title)).append("</h2>\n");
        sb.append("<p>");
        for (Map.Entry<String, String> e : new java.util.TreeMap<>(COLORS).entrySet()) {
            sb.append("<span style=\"color:").append(e.getValue()).append("\">&#9632; ").append(esc(e.getKey()))
                    .append("</span> &nbsp; ");
        }
        sb.append("<br>Top: cumulative distribution of request latency (log time axis, same scale in every panel). "
                + "Bottom: box p50&#8211;p90, whisker to p99, dot at max.</p>\n<div class=\"grid\">\n");
        for (Panel p : panels) {
            sb.append(cdf(p, xmin, xmax)).append('\n');
        }
        sb.append("</div>\n<div class=\"grid\">\n");
        for (Panel p : panels) {
            sb.append(ladder(p, xmin, xmax)).append('\n');
        }
        sb.append("</div>\n<pre>").append(esc(preformattedSummary)).append("</pre>\n</body></html>\n");
        return sb.toString();
    }

    private static double x(double ms, double xmin, double xmax) {
        double v = Math.max(ms, xmin);
        return ML + (Math.log10(v) - Math.log10(xmin)) / (Math.log10(xmax) - Math.log10(xmin)) * (W - ML - MR);
    }

    private static void axes(StringBuilder sb, String title, double xmin, double xmax, int h) {
        sb.append(String.format(Locale.ROOT, "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"%d\" height=\"%d\">", W, h));
        sb.append(String.format(Locale.ROOT, "<text x=\"%d\" y=\"16\" font-size=\"13\" font-weight=\"bold\">%s</text>", ML,
                esc(title)));
        int bottom = h - MB;
        sb.append(String.format(Locale.ROOT, "<line x1=\"%d\" y1=\"%d\" x2=\"%d\" y2=\"%d\" stroke=\"#333\"/>", ML, bottom,
                W - MR, bottom));
        for (double d = xmin; d <= xmax * 1.0001; d *= 10) {
            double px = x(d, xmin, xmax);
            sb.append(String.format(Locale.ROOT, "<line x1=\"%.1f\" y1=\"%d\" x2=\"%.1f\" y2=\"%d\" stroke=\"#eee\"/>", px, MT,
                    px, bottom));
            sb.append(String.format(Locale.ROOT,
                    "<text x=\"%.1f\" y=\"%d\" font-size=\"10\" text-anchor=\"middle\">%s</text>", px, bottom + 13,
                    d >= 1 ? String.format(Locale.ROOT, "%.0f ms", d) : String.format(Locale.ROOT, "%.2g ms", d)));
        }
    }

    private static String cdf(Panel p, double xmin, double xmax) {
        StringBuilder sb = new StringBuilder();
        axes(sb, p.title(), xmin, xmax, H);
        int bottom = H - MB;
        for (double q = 0; q <= 1.0001; q += 0.25) {
            double py = bottom - q * (bottom - MT);
            sb.append(String.format(Locale.ROOT, "<line x1=\"%d\" y1=\"%.1f\" x2=\"%d\" y2=\"%.1f\" stroke=\"#eee\"/>", ML, py,
                    W - MR, py));
            sb.append(String.format(Locale.ROOT, "<text x=\"%d\" y=\"%.1f\" font-size=\"10\" text-anchor=\"end\">%.2f</text>",
                    ML - 4, py + 3, q));
        }
        for (Stats s : p.runs()) {
            int n = s.count();
            if (n == 0) {
                continue;
            }
            StringBuilder pts = new StringBuilder();
            int step = Math.max(1, n / 400);
            for (int i = 0; i < n; i += step) {
                appendPoint(pts, s, i, n, xmin, xmax, bottom);
            }
            appendPoint(pts, s, n - 1, n, xmin, xmax, bottom);
            sb.append("<polyline fill=\"none\" stroke-width=\"1.6\" stroke=\"").append(color(s.scenario))
                    .append("\" points=\"").append(pts).append("\"><title>").append(esc(s.scenario)).append("</title></polyline>");
        }
        sb.append(String.format(Locale.ROOT, "<text x=\"%d\" y=\"%d\" font-size=\"10\">fraction of requests &#8804; latency</text>",
                ML + 4, MT + 10));
        sb.append("</svg>");
        return sb.toString();
    }

    private static void appendPoint(StringBuilder pts, Stats s, int i, int n, double xmin, double xmax, int bottom) {
        double ms = s.sortedNanos[i] / 1e6;
        double frac = (i + 1) / (double) n;
        pts.append(String.format(Locale.ROOT, "%.1f,%.1f ", x(ms, xmin, xmax), bottom - frac * (bottom - MT)));
    }

    private static String ladder(Panel p, double xmin, double xmax) {
        int rowH = 26;
        int h = MT + MB + rowH * Math.max(1, p.runs().size());
        StringBuilder sb = new StringBuilder();
        axes(sb, p.title() + " — percentiles", xmin, xmax, h);
        int row = 0;
        for (Stats s : p.runs()) {
            if (s.count() == 0) {
                row++;
                continue;
            }
            double cy = MT + rowH * row + rowH / 2.0;
            String c = color(s.scenario);
            double x50 = x(s.pMs(50), xmin, xmax);
            double x90 = x(s.pMs(90), xmin, xmax);
            double x99 = x(s.pMs(99), xmin, xmax);
            double xmx = x(s.maxMs(), xmin, xmax);
            sb.append(String.format(Locale.ROOT,
                    "<line x1=\"%.1f\" y1=\"%.1f\" x2=\"%.1f\" y2=\"%.1f\" stroke=\"%s\"/>", x90, cy, x99, cy, c));
            sb.append(String.format(Locale.ROOT,
                    "<rect x=\"%.1f\" y=\"%.1f\" width=\"%.1f\" height=\"12\" fill=\"%s\" fill-opacity=\"0.35\" stroke=\"%s\"/>",
                    x50, cy - 6, Math.max(1.5, x90 - x50), c, c));
            sb.append(String.format(Locale.ROOT, "<line x1=\"%.1f\" y1=\"%.1f\" x2=\"%.1f\" y2=\"%.1f\" stroke=\"%s\" stroke-width=\"2\"/>",
                    x50, cy - 7, x50, cy + 7, c));
            sb.append(String.format(Locale.ROOT, "<circle cx=\"%.1f\" cy=\"%.1f\" r=\"3\" fill=\"%s\"/>", xmx, cy, c));
            sb.append(String.format(Locale.ROOT, "<title>%s p50 %.2f p90 %.2f p99 %.2f max %.2f ms</title>", esc(s.scenario),
                    s.pMs(50), s.pMs(90), s.pMs(99), s.maxMs()));
            row++;
        }
        sb.append("</svg>");
        return sb.toString();
    }

    private static String color(String scenario) {
        return COLORS.getOrDefault(scenario, "#555");
    }

    static String esc(String s) {
        return s.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;").replace("\"", "&quot;");
    }
}
