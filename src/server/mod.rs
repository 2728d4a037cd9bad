//! The MCP server: rmcp's `ServerHandler` — the server's info, its tools (listed and routed to
//! `tools`), the answers kept as resources, and the downgrade of results for older protocol
//! versions. Everything a call does happens below, in `tools` and `run`.

use std::path::PathBuf;
use std::sync::Arc;

use rmcp::model::{
    CallToolRequestParams, CallToolResponse, CallToolResult, Implementation, ListResourcesResult,
    ListToolsResult, PaginatedRequestParams, ProtocolVersion, ReadResourceRequestParams,
    ReadResourceResponse, ReadResourceResult, ResourceContents, ServerCapabilities, ServerConfig,
};
use rmcp::service::{RequestContext, RoleServer};
use rmcp::{ErrorData as McpError, ServerHandler};
use serde_json::json;
use tokio_util::sync::CancellationToken;

use crate::answers::{Answers, MAX_STORED_ANSWERS};
use crate::config::Config;
use crate::error::Failure;
use crate::progress::Sink;
use crate::render::Render;
use crate::roots::Roots;
use crate::run::Runner;
use crate::tools::{self, Route};
use crate::transport::INVALID_ARGUMENTS_META;

/// What the server tells a client about itself (`instructions`).
const INSTRUCTIONS: &str =
    "Tools that run Google's Gemini CLI headlessly: gemini_prompt (a prompt), \
gemini_prompt_with_context (a prompt with a <context> block) and gemini_prompt_structured (JSON \
validated against a JSON Schema). Pass an answer's sessionId as session_id to continue the \
conversation. A failure's first line is `[error exit=N] KIND: message`, followed by a fix. An \
answer longer than one result keeps its beginning and says how to read on: call \
gemini_read_answer with the answer_id and offset it names, until next_offset is absent.";

/// The server. Cheap to clone: everything is shared.
#[derive(Clone)]
pub struct GeminiServer {
    inner: Arc<Inner>,
}

struct Inner {
    config: Config,
    /// The server's working directory: the default workspace and root.
    cwd: PathBuf,
    runner: Runner,
    answers: Answers,
}

impl ServerHandler for GeminiServer {
    fn get_info(&self) -> ServerConfig {
        ServerConfig::new(
            // Logging: the server's warnings reach the client as notifications/message.
            #[allow(deprecated)]
            ServerCapabilities::builder()
                .enable_tools()
                .enable_resources()
                .enable_logging()
                .build(),
        )
        .with_server_info(
            Implementation::new(env!("CARGO_PKG_NAME"), env!("CARGO_PKG_VERSION"))
                .with_title("Gemini CLI MCP server"),
        )
        .with_instructions(INSTRUCTIONS)
    }

    async fn list_tools(
        &self,
        _request: Option<PaginatedRequestParams>,
        context: RequestContext<RoleServer>,
    ) -> Result<ListToolsResult, McpError> {
        let version = context.protocol_version();
        let mut tools = tools::list(&self.inner.config, !is_legacy(version.as_ref()));
        // Tool annotations arrived with 2025-03-26.
        if version.is_some_and(|v| v.as_str() < ProtocolVersion::V_2025_03_26.as_str()) {
            for tool in &mut tools {
                tool.annotations = None;
            }
        }
        Ok(ListToolsResult::with_all_items(tools))
    }

    async fn call_tool(
        &self,
        request: CallToolRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<CallToolResponse, McpError> {
        let Some(route) = tools::route(&request.name, &self.inner.config) else {
            let names: Vec<String> = tools::list(&self.inner.config, false)
                .into_iter()
                .map(|t| t.name.to_string())
                .collect();
            return Err(McpError::invalid_params(
                format!("unknown tool: {}", request.name),
                Some(json!({ "tools": names })),
            ));
        };
        let mut result = match context.meta.get(INVALID_ARGUMENTS_META) {
            Some(kind) => self.not_an_object(route, &request.name, kind.as_str()),
            None => self.call(route, &request, &context).await,
        };
        if is_legacy(context.protocol_version().as_ref()) {
            result.structured_content = None;
            result.content.retain(|c| c.as_resource_link().is_none());
        }
        Ok(CallToolResponse::Complete(result))
    }

    async fn on_initialized(&self, context: rmcp::service::NotificationContext<RoleServer>) {
        crate::logging::register(context.peer);
    }

    #[allow(deprecated)]
    async fn set_level(
        &self,
        request: rmcp::model::SetLevelRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<(), McpError> {
        crate::logging::set_level(&context.peer, request.level);
        Ok(())
    }

    async fn list_resources(
        &self,
        _request: Option<PaginatedRequestParams>,
        _context: RequestContext<RoleServer>,
    ) -> Result<ListResourcesResult, McpError> {
        Ok(ListResourcesResult::with_all_items(
            self.inner.answers.list(),
        ))
    }

    async fn read_resource(
        &self,
        request: ReadResourceRequestParams,
        _context: RequestContext<RoleServer>,
    ) -> Result<ReadResourceResponse, McpError> {
        match self.inner.answers.get_uri(&request.uri) {
            Some(text) => Ok(ReadResourceResponse::Complete(ReadResourceResult::new(vec![
                ResourceContents::text(text.as_str(), request.uri.clone())
                    .with_mime_type("text/plain"),
            ]))),
            None => Err(McpError::resource_not_found(
                format!(
                    "no stored answer at {} (answers are kept in memory, at most {MAX_STORED_ANSWERS}, oldest evicted first)",
                    request.uri
                ),
                None,
            )),
        }
    }
}

impl GeminiServer {
    /// A server running the CLI in `cwd`. Cancelling `shutdown` kills every run.
    pub fn new(config: Config, cwd: PathBuf, shutdown: CancellationToken) -> Self {
        GeminiServer {
            inner: Arc::new(Inner {
                runner: Runner::new(config.clone(), shutdown),
                config,
                cwd,
                answers: Answers::default(),
            }),
        }
    }

    /// Waits until no call is in progress.
    pub async fn idle(&self) {
        self.inner.runner.idle().await;
    }

    async fn call(
        &self,
        route: Route,
        request: &CallToolRequestParams,
        context: &RequestContext<RoleServer>,
    ) -> CallToolResult {
        let inner = &self.inner;
        let ctx = tools::Ctx {
            config: &inner.config,
            runner: &inner.runner,
            render: Render {
                answers: &inner.answers,
                budget: inner.config.result_budget,
                structured: !is_legacy(context.protocol_version().as_ref()),
                debug: false,
            },
            roots: Roots::new(&inner.config.policy, &inner.cwd, Some(context.peer.clone())),
            sink: context
                .meta
                .get_progress_token()
                .map(|token| Sink::new(context.peer.clone(), token)),
            ct: context.ct.clone(),
        };
        tools::call(route, &request.name, request.arguments.as_ref(), ctx).await
    }

    /// A call whose `arguments` is not a JSON object (see [`INVALID_ARGUMENTS_META`]): an
    /// `input_validation` failure in the tool's own result shape.
    fn not_an_object(&self, route: Route, name: &str, kind: Option<&str>) -> CallToolResult {
        let f = Failure::invalid_input(format!(
            "`arguments` must be a JSON object, got {}",
            kind.unwrap_or("something else")
        ));
        let render = Render {
            answers: &self.inner.answers,
            budget: self.inner.config.result_budget,
            structured: true,
            debug: false,
        };
        match route {
            Route::Agent if name == tools::agent::GEMINI => {
                render.agent_failure(&f, &Default::default())
            }
            _ => render.failure(&f),
        }
    }
}

/// Protocol versions before 2025-06-18 know neither `outputSchema`, `structuredContent` nor
/// `resource_link` content.
fn is_legacy(version: Option<&ProtocolVersion>) -> bool {
    version.is_some_and(|v| v.as_str() < ProtocolVersion::V_2025_06_18.as_str())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn legacy_versions() {
        assert!(is_legacy(Some(&ProtocolVersion::V_2025_03_26)));
        assert!(!is_legacy(Some(&ProtocolVersion::V_2025_06_18)));
        assert!(!is_legacy(None));
    }
}
