//! Everything about running the Gemini CLI: finding it, building its command line, supervising the
//! process tree, and reading what it printed.

pub mod command;
pub mod environment;
pub mod events;
pub mod outcome;
pub mod process;
pub mod resolve;
pub mod session;
