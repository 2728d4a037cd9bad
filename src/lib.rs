//! geminicli-mcp: an MCP server that runs Google's headless Gemini CLI as a supervised tool.
//!
//! The binary (`src/main.rs`) parses flags and env into a [`config::Config`] and serves MCP over
//! stdio; this library holds everything else so tests can reach it.

// `error::Failure` (about 280 bytes) is the error type of every call path. It is built at most
// once per tool call, next to a process spawn; boxing it would only add noise.
#![allow(clippy::result_large_err)]

pub mod acp;
pub mod config;
pub mod doctor;
pub mod error;
pub mod gemini;
pub mod http;
pub mod logging;
pub mod policy;
pub mod server;
pub mod structured;
pub mod tools;
pub mod toolsets;
pub mod transport;
