//! The warm backend: Gemini over ACP (`gemini --acp`, Agent Client Protocol v1). Long-lived agent
//! processes per workspace hold reusable sessions (`pool`); `client` is one agent's JSON-RPC
//! connection; `wire` types the messages both ways with the ACP schema's types, and `departures`
//! says where the Gemini CLI leaves that schema. Nothing here knows about MCP tools or
//! results: `run` drives it, `tools` renders it.
//!
//! State is owned by tasks where it can be: a connection's by its reader, an agent's sessions by
//! its slot's task, both reached through commands. Four locks are left, each said where it is
//! declared: the tail of an agent's stderr (`client`), and the pool's registry, its server-wide
//! order of `session/new` and `session/load`, and each session's prompt lock (`pool`).

pub mod client;
pub(crate) mod departures;
pub mod pool;
pub(crate) mod wire;
