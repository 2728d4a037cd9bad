//! geminicli-mcp: an MCP server that runs Google's headless Gemini CLI as a supervised tool.
//!
//! The binary (`src/main.rs`) parses flags and env into a [`config::Config`] and serves MCP over
//! stdio; this library holds everything else so tests can reach it. The arrows point one way,
//! down from the protocol to the process (CONTRIBUTING.md has the map):
//! `server` → `tools` → `run` → the backends `gemini` (one-shot) and `acp` (warm) → `progress`,
//! `deadline`, `error`, `approval`, `config`.

// `error::Failure` (about 280 bytes) is the error type of every call path. It is built at most
// once per tool call, next to a process spawn; boxing it would only add noise.
#![allow(clippy::result_large_err)]

pub mod acp;
pub mod answers;
pub mod approval;
pub mod ask;
pub mod config;
pub mod deadline;
pub mod doctor;
pub mod error;
pub mod fd_limit;
pub mod gemini;
pub mod held;
pub mod http;
pub mod logging;
pub mod policy;
pub mod progress;
pub mod render;
pub mod roots;
pub mod run;
pub mod save;
pub mod server;
pub mod setup;
pub mod structured;
pub mod tasks;
pub mod tools;
pub mod transport;
