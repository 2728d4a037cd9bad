//! gemini-mcp-conformance: a portable suite that drives a Gemini MCP server over stdio against
//! fake-gemini.
//!
//! A *target* is a command line speaking MCP over stdio plus a [`profile::Profile`]; a *case* is a
//! TOML file under `cases/` ([`case`]); [`runner::run_case`] runs one case against one target and
//! returns a [`report::CaseResult`]; [`report::Baseline`] judges results against a strict
//! expected-failures list. The binary `gemini-mcp-conformance` and the cargo harness
//! (`tests/cases.rs`) are thin fronts over this library.

#![warn(missing_docs)]

pub mod bins;
pub mod case;
pub mod checks;
pub mod client;
pub mod fakelog;
pub mod framing;
mod launcher;
pub mod matcher;
pub mod procs;
pub mod profile;
pub mod report;
pub mod runner;
pub mod select;
pub mod tracker;
pub mod values;

pub use case::{Case, Level};
pub use profile::Profile;
pub use report::{Baseline, CaseResult, Outcome, Verdict};
pub use runner::{run_case, RunConfig, Target};
