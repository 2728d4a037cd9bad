//! geminicli-mcp: an MCP server that runs Google's headless Gemini CLI as a supervised tool.
//!
//! The binary (`src/main.rs`) parses flags and env into a [`config::Config`] and hands it to
//! [`serving`], which serves MCP over stdio or HTTP; this library holds everything but the
//! command line's dispatch, so tests can reach it and the server's code is compiled once. The arrows point one way,
//! down from the protocol to the process (CONTRIBUTING.md has the map):
//! `server` → `tools` → `run` → the backends `oneshot` and `acp` (warm) → `gemini` (what both
//! share of the CLI) → `progress`, `deadline`, `error`, `approval`, `config`.

// `error::Failure` (about 280 bytes) is the error type of every call path. It is built at most
// once per tool call, next to a process spawn; boxing it would only add noise.
#![allow(clippy::result_large_err)]
// An item a private module declares `pub` says `pub(crate)`: the surface is what the binary, the
// tests and the fuzz targets use.
#![warn(unreachable_pub)]

pub mod acp;
mod answers;
pub mod approval;
mod ask;
pub mod config;
mod deadline;
pub mod doctor;
mod error;
pub mod fd_limit;
mod forms;
pub mod gemini;
mod held;
pub mod http;
pub mod logging;
mod names;
pub mod oneshot;
mod policy;
mod progress;
mod prompts;
mod render;
mod roots;
mod run;
mod save;
pub mod server;
pub mod serving;
pub mod setup;
pub mod structured;
mod sync;
mod tasks;
mod tools;
pub mod transport;
