// Preloaded into the official MCP conformance suite (node --import): its client connects without
// credentials, while geminicli-mcp's HTTP transport refuses any request without the bearer token.
// Adding the header here keeps the server strict and lets the suite's scenarios reach it.
const token = process.env.MCP_BEARER_TOKEN;
const originalFetch = globalThis.fetch;
globalThis.fetch = (input, init = {}) => {
  const headers = new Headers(init.headers ?? (input instanceof Request ? input.headers : undefined));
  if (token && !headers.has('authorization')) {
    headers.set('authorization', `Bearer ${token}`);
  }
  return originalFetch(input, { ...init, headers });
};
