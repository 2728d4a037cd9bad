//! The warm backend: Gemini over ACP (`gemini --acp`, Agent Client Protocol v1). Long-lived agent
//! processes per workspace hold reusable sessions (`pool`); `client` is one agent's JSON-RPC
//! connection; `wire` types the messages both ways with the ACP schema's types, and `departures`
//! says where the Gemini CLI leaves that schema. Nothing here knows about MCP tools or
//! results: `run` drives it, `tools` renders it.

pub mod client;
pub(crate) mod departures;
pub mod pool;
pub(crate) mod wire;
