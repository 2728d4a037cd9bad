//! geminicli-mcp library
