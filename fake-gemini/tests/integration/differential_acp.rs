//! The ACP part of the differential suite: the real `gemini --acp`, run against the scripted API,
//! and `fake-gemini --acp` get the same JSON-RPC conversation and must send the same messages
//! after masking.
