// Preloaded into the official MCP conformance suite (node --import): its client connects without
// credentials, while geminicli-mcp's HTTP transport refuses any request without the bearer token.
// Adding the header here keeps the server strict and lets the suite's scenarios reach it: to the
// requests made with `fetch` and to those made with `node:http` (the header-validation scenarios,
// which need headers `fetch` would not send). The suite's undici `request` (its DNS-rebinding
// scenario, which is for servers without authentication) is left alone.
import http from 'node:http';

const token = process.env.MCP_BEARER_TOKEN;

const originalFetch = globalThis.fetch;
globalThis.fetch = (input, init = {}) => {
  const headers = new Headers(init.headers ?? (input instanceof Request ? input.headers : undefined));
  if (token && !headers.has('authorization')) {
    headers.set('authorization', `Bearer ${token}`);
  }
  return originalFetch(input, { ...init, headers });
};

const originalRequest = http.request;
http.request = function request(options, ...rest) {
  if (token && options && typeof options === 'object' && !(options instanceof URL)) {
    const headers = { ...(options.headers ?? {}) };
    if (!Object.keys(headers).some((name) => name.toLowerCase() === 'authorization')) {
      headers.authorization = `Bearer ${token}`;
    }
    options = { ...options, headers };
  }
  return originalRequest.call(this, options, ...rest);
};
