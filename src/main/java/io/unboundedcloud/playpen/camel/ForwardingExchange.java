package io.unboundedcloud.playpen.camel;

import java.io.IOException;
import java.io.InputStream;
import java.io.OutputStream;
import java.net.InetSocketAddress;
import java.net.URI;

import com.sun.net.httpserver.Headers;
import com.sun.net.httpserver.HttpContext;
import com.sun.net.httpserver.HttpExchange;
import com.sun.net.httpserver.HttpPrincipal;

/** An exchange that passes every call on to another one; the management listener's wrappers change a few of them. */
abstract class ForwardingExchange extends HttpExchange {
    /** The exchange the calls go to. */
    final HttpExchange in;

    ForwardingExchange(HttpExchange in) {
        this.in = in;
    }

    @Override
    public Headers getRequestHeaders() {
        return in.getRequestHeaders();
    }

    @Override
    public Headers getResponseHeaders() {
        return in.getResponseHeaders();
    }

    @Override
    public URI getRequestURI() {
        return in.getRequestURI();
    }

    @Override
    public String getRequestMethod() {
        return in.getRequestMethod();
    }

    @Override
    public HttpContext getHttpContext() {
        return in.getHttpContext();
    }

    @Override
    public void close() {
        in.close();
    }

    @Override
    public InputStream getRequestBody() {
        return in.getRequestBody();
    }

    @Override
    public OutputStream getResponseBody() {
        return in.getResponseBody();
    }

    @Override
    public void sendResponseHeaders(int code, long length) throws IOException {
        in.sendResponseHeaders(code, length);
    }

    @Override
    public InetSocketAddress getRemoteAddress() {
        return in.getRemoteAddress();
    }

    @Override
    public int getResponseCode() {
        return in.getResponseCode();
    }

    @Override
    public InetSocketAddress getLocalAddress() {
        return in.getLocalAddress();
    }

    @Override
    public String getProtocol() {
        return in.getProtocol();
    }

    @Override
    public Object getAttribute(String name) {
        return in.getAttribute(name);
    }

    @Override
    public void setAttribute(String name, Object value) {
        in.setAttribute(name, value);
    }

    @Override
    public void setStreams(InputStream i, OutputStream o) {
        in.setStreams(i, o);
    }

    @Override
    public HttpPrincipal getPrincipal() {
        return in.getPrincipal();
    }
}
