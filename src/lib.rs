//! geminicli-mcp: an MCP server that runs Google's headless Gemini CLI as a supervised tool.
//!
//! The binary (`src/main.rs`) parses flags and env into a [`config::Config`] and serves MCP over
//! stdio; this library holds everything else so tests can reach it.

pub mod config;
pub mod server;
pub mod error;
pub mod gemini;
pub mod structured;
pub mod tools;
pub mod transport;
