//! gemini-mcp-conformance: a portable suite that drives a Gemini MCP server over stdio against
//! fake-gemini.

pub mod bins;
