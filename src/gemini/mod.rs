//! The one-shot backend, and what both backends share about the Gemini CLI: finding and starting
//! it (`resolve`, `environment`, `launch`), its command line (`command`), supervising the process
//! tree (`process`), reading what it printed (`events`, `outcome`), one attempt of a prompt
//! (`oneshot`), and its sessions on disk (`session`).

pub mod auth;
pub mod command;
pub mod environment;
pub mod events;
pub mod inputs;
pub mod launch;
pub mod oneshot;
pub mod outcome;
pub mod process;
pub mod resolve;
pub mod retention;
pub mod session;
pub mod settings;
