//! The one-shot backend, and what both backends share about the Gemini CLI: finding and starting
//! it (`resolve`, `environment`, `launch`), its command line (`command`), supervising the process
//! tree (`process`), reading what it printed (`events`, `outcome`), one attempt of a prompt
//! (`oneshot`), and its sessions on disk (`session`).

pub(crate) mod auth;
pub(crate) mod command;
pub(crate) mod environment;
pub mod events;
pub mod inputs;
pub(crate) mod launch;
pub(crate) mod oneshot;
pub(crate) mod outcome;
pub mod process;
pub(crate) mod resolve;
pub(crate) mod retention;
pub(crate) mod session;
pub(crate) mod settings;
