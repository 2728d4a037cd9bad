//! The MCP server: rmcp's `ServerHandler` — the server's info, its tools (listed and routed to
//! `tools`), the answers kept as resources, and the downgrade of results for older protocol
//! versions. Everything a call does happens below, in `tools` and `run`.

use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use rmcp::model::{
    CallToolRequestParams, CallToolResponse, CallToolResult, CancelTaskParams, CreateTaskResult,
    ElicitRequestParams, GetPromptRequestParams, GetPromptResponse, GetTaskParams, GetTaskResult,
    Implementation, InitializeRequestParams, InitializeResult, ListPromptsResult,
    ListResourcesResult, ListToolsResult, PaginatedRequestParams, ProtocolVersion,
    ReadResourceRequestParams, ReadResourceResponse, ReadResourceResult, ResourceContents,
    ServerCapabilities, ServerConfig, UpdateTaskParams,
};
use rmcp::service::{Peer, RequestContext, RoleServer};
use rmcp::{ErrorData as McpError, ServerHandler};
use serde_json::json;
use tokio_util::sync::CancellationToken;

use crate::answers::{Answers, MAX_STORED_ANSWERS};
use crate::ask::{Asked, Asker, Question, Reply, Why};
use crate::config::Config;
use crate::error::{ErrorKind, Failure};
use crate::forms;
use crate::held::{Event, Held, Round, RoundAsker};
use crate::progress::Sink;
use crate::render::Render;
use crate::roots::Roots;
use crate::run::Runner;
use crate::tasks::{Handle, Outcome, Tasks};
use crate::tools::{self, Decl, Route};
use crate::transport::INVALID_ARGUMENTS_META;

mod jobs;

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
    tasks: Tasks,
    held: Held,
}

/// What one call runs with: the client's protocol version, the peer its roots come from, where
/// its progress goes and its cancellation (the request's own, or its task's).
struct CallEnv {
    version: Option<ProtocolVersion>,
    peer: Peer<RoleServer>,
    sink: Option<Sink>,
    ct: CancellationToken,
    asker: Option<Arc<dyn Asker>>,
}

/// Asks with `elicitation/create`: a 2025 connection whose client declared elicitation.
struct ElicitAsker {
    peer: Peer<RoleServer>,
    timeout: Duration,
}

impl Asker for ElicitAsker {
    fn ask(&self, question: Question) -> Asked {
        let (peer, timeout) = (self.peer.clone(), self.timeout);
        Box::pin(async move {
            let Ok(params) = serde_json::from_value::<ElicitRequestParams>(forms::form(&question))
            else {
                return Reply::Reject(Why::CannotAsk);
            };
            match peer
                .create_elicitation_with_timeout(params, Some(timeout))
                .await
            {
                Ok(result) => {
                    forms::reply_of(&question, &serde_json::to_value(result).unwrap_or_default())
                }
                Err(rmcp::service::ServiceError::Timeout { .. }) => Reply::Reject(Why::TimedOut),
                Err(_) => Reply::Reject(Why::CannotAsk),
            }
        })
    }

    fn timeout(&self) -> Duration {
        // The request's own timeout answers first; this is the backstop.
        self.timeout + Duration::from_secs(1)
    }
}

/// Asks through the task a call runs as: the task reads `input_required` with the form as its
/// input request until `tasks/update` answers it (2026-07-28, the client declared elicitation).
struct TaskAsker {
    task: Arc<crate::tasks::Handle>,
    timeout: Duration,
}

impl Asker for TaskAsker {
    fn ask(&self, question: Question) -> Asked {
        let task = self.task.clone();
        Box::pin(async move {
            let Some(request) = forms::input_request(&question) else {
                return Reply::Reject(Why::CannotAsk);
            };
            match task.ask(request).await {
                Some(answer) => forms::reply_of(&question, &answer),
                None => Reply::Reject(Why::Gone),
            }
        })
    }

    fn timeout(&self) -> Duration {
        self.timeout
    }
}

impl ServerHandler for GeminiServer {
    fn get_info(&self) -> ServerConfig {
        ServerConfig::new(
            // Logging: the server's warnings reach the client as notifications/message.
            #[allow(deprecated)]
            {
                let capabilities = ServerCapabilities::builder()
                    .enable_tools()
                    .enable_prompts()
                    .enable_resources()
                    .enable_logging();
                if self.inner.tasks.enabled() {
                    capabilities.enable_tasks().build()
                } else {
                    capabilities.build()
                }
            },
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
        let Some(tool) = tools::find(&request.name, &self.inner.config) else {
            let names: Vec<String> = tools::list(&self.inner.config, false)
                .into_iter()
                .map(|t| t.name.to_string())
                .collect();
            return Err(McpError::invalid_params(
                format!("unknown tool: {}", request.name),
                Some(json!({ "tools": names })),
            ));
        };
        if let Some(kind) = context.meta.get(INVALID_ARGUMENTS_META) {
            return Ok(CallToolResponse::Complete(
                self.not_an_object(tool, kind.as_str()),
            ));
        }
        let decoded = tools::decode(tool, request.arguments.as_ref(), &self.inner.config.policy);
        if let Route::Job(_) = tool.route {
            let result = match &decoded {
                Ok(call) => self.job(call, &context).await,
                Err(f) => self.job_render().failure(f),
            };
            return Ok(CallToolResponse::Complete(result));
        }
        if let Some(state) = request.request_state.as_deref() {
            let responses = request.input_responses.clone().unwrap_or_default();
            return self.resume_held(state, responses, &context).await;
        }
        let call = match decoded {
            Ok(call) => call,
            Err(f) => {
                let failure = self.failure_for(tool, &f);
                return Ok(CallToolResponse::Complete(downgraded(failure, &context)));
            }
        };
        if let Some(task) = self.as_task(&call, &context) {
            return Ok(CallToolResponse::Task(task));
        }
        if self.holds(&call, &context) {
            return Ok(self.start_held(call, &context).await);
        }
        let env = CallEnv {
            version: context.protocol_version(),
            peer: context.peer.clone(),
            sink: context
                .meta
                .get_progress_token()
                .map(|token| progress_sink(context.peer.clone(), token)),
            ct: context.ct.clone(),
            asker: self.elicit_asker(&context),
        };
        // 2026-07-28 has no session to set a level on: a request names its own. (Older
        // connections have theirs from `logging/setLevel`; asking twice would send twice.)
        let level = context
            .meta
            .get("io.modelcontextprotocol/logLevel")
            .filter(|_| modern(&context))
            .and_then(|l| serde_json::from_value(l.clone()).ok());
        // A prompt call with an idempotency_key (or the client's own id of the call) runs as the
        // job of that key: the call made again attaches to it.
        let run = async {
            let key = tools::jobs::call_key(call.idempotency_key(), &context.meta);
            match key.filter(|_| tool.runs_long) {
                Some(key) => self.keyed_call(call, &request, &context, key, env).await,
                None => self.call(call, env).await,
            }
        };
        let result = crate::logging::for_request(&context.peer, level, run).await;
        Ok(CallToolResponse::Complete(downgraded(result, &context)))
    }

    async fn get_task(
        &self,
        request: GetTaskParams,
        context: RequestContext<RoleServer>,
    ) -> Result<GetTaskResult, McpError> {
        let task = self
            .inner
            .tasks
            .get(owner(&context).as_deref(), &request.task_id)?;
        Ok(GetTaskResult::new(task))
    }

    async fn update_task(
        &self,
        request: UpdateTaskParams,
        context: RequestContext<RoleServer>,
    ) -> Result<(), McpError> {
        self.inner.tasks.update(
            owner(&context).as_deref(),
            &request.task_id,
            request.input_responses,
        )
    }

    async fn cancel_task(
        &self,
        request: CancelTaskParams,
        context: RequestContext<RoleServer>,
    ) -> Result<(), McpError> {
        self.inner
            .tasks
            .cancel(owner(&context).as_deref(), &request.task_id)
    }

    /// The client gets log notifications from its `initialize` on, not from its `initialized`:
    /// rmcp handles that notification and the requests sent right after it concurrently, so a
    /// warning raised by the first call could otherwise come before the client was listening and
    /// be lost. The protocol lets a server send log messages before `initialized`.
    async fn initialize(
        &self,
        request: InitializeRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<InitializeResult, McpError> {
        context.peer.set_peer_info(request.clone());
        crate::logging::register(context.peer);
        self.negotiate_initialize(&request)
    }

    /// The session's log level, on the revisions that have one: 2026-07-28 removed the method (a
    /// request names its own level), so a request of that revision gets "method not found",
    /// whatever its params ([`crate::transport::removed_from_revision`], the transports' rule).
    #[allow(deprecated)]
    async fn set_level(
        &self,
        request: rmcp::model::SetLevelRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<(), McpError> {
        use rmcp::model::{ConstString, SetLevelRequestMethod};
        if crate::transport::removed_from_revision(
            SetLevelRequestMethod::VALUE,
            &context.meta,
            modern(&context),
        ) {
            return Err(McpError::method_not_found::<SetLevelRequestMethod>());
        }
        crate::logging::set_level(&context.peer, request.level);
        Ok(())
    }

    async fn list_prompts(
        &self,
        _request: Option<PaginatedRequestParams>,
        _context: RequestContext<RoleServer>,
    ) -> Result<ListPromptsResult, McpError> {
        Ok(ListPromptsResult::with_all_items(crate::prompts::list()))
    }

    /// A prompt's messages; its path arguments are checked against the roots as a tool call's are.
    async fn get_prompt(
        &self,
        request: GetPromptRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<GetPromptResponse, McpError> {
        let inner = &self.inner;
        let roots = Roots::new(&inner.config.policy, &inner.cwd, Some(context.peer.clone()));
        crate::prompts::get(&request.name, request.arguments.as_ref(), &roots)
            .await
            .map(GetPromptResponse::Complete)
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
                // The URI asked for, as the spec asks of a resource that is not there.
                Some(json!({ "uri": request.uri })),
            )),
        }
    }
}

impl GeminiServer {
    /// A server running the CLI in `cwd`. Cancelling `shutdown` kills every run.
    pub fn new(config: Config, cwd: PathBuf, shutdown: CancellationToken) -> Self {
        GeminiServer {
            inner: Arc::new(Inner {
                tasks: Tasks::new(config.tasks, &shutdown),
                held: Held::default(),
                runner: Runner::new(config.clone(), shutdown),
                config,
                cwd,
                answers: Answers::default(),
            }),
        }
    }

    /// Starts the call as a task when it may be one: a prompt tool (or the `acp` set's
    /// `gemini`), called on the 2026-07-28 protocol by a client that declares the tasks
    /// extension, with tasks on and room for one more. The run keeps the call's own deadlines;
    /// its progress becomes the task's status message.
    fn as_task(
        &self,
        call: &tools::Call,
        context: &RequestContext<RoleServer>,
    ) -> Option<CreateTaskResult> {
        let long = call.tool.runs_long;
        let version = context.protocol_version();
        let declared = context
            .client_capabilities()
            .is_some_and(|c| c.supports_tasks());
        if !long || !declared || !self.inner.tasks.enabled() || !modern(context) {
            return None;
        }
        let server = self.clone();
        let call = call.clone();
        let peer = context.peer.clone();
        let elicits = elicits(context);
        let timeout = self.inner.config.ask_timeout;
        let asker = move |handle: &Arc<Handle>| {
            elicits.then(|| {
                Arc::new(TaskAsker {
                    task: handle.clone(),
                    timeout,
                }) as Arc<dyn Asker>
            })
        };
        let task = self.inner.tasks.start(owner(context), move |handle| {
            run_as_task(server, call, (version, peer), asker, handle)
        })?;
        Some(CreateTaskResult::new(task))
    }

    /// Whether the call is held across rounds: an `ask` call (a prompt tool or the `acp` set's
    /// `gemini`) on the 2026-07-28 protocol, from a client that declared elicitation (and did not
    /// get a task).
    fn holds(&self, call: &tools::Call, context: &RequestContext<RoleServer>) -> bool {
        call.tool.runs_long && call.asks() && modern(context) && elicits(context)
    }

    /// Runs a held call: its questions come back as rounds of this request and its retries.
    async fn start_held(
        &self,
        call: tools::Call,
        context: &RequestContext<RoleServer>,
    ) -> CallToolResponse {
        let (tx, events) = tokio::sync::mpsc::unbounded_channel();
        let cancel = CancellationToken::new();
        let env = CallEnv {
            version: context.protocol_version(),
            peer: context.peer.clone(),
            // Progress of a request answered by its first round would follow its answer.
            sink: None,
            ct: cancel.clone(),
            asker: Some(Arc::new(RoundAsker::new(
                tx.clone(),
                self.inner.config.ask_timeout,
            ))),
        };
        let server = self.clone();
        tokio::spawn(async move {
            let result = server.call(call, env).await;
            let _ = tx.send(Event::Done(result));
        });
        let round = Round {
            events,
            pending: None,
            cancel,
            asked: 0,
        };
        self.next_round(round, context).await
    }

    /// The client's retry of a held call, with its answer to the pending question.
    async fn resume_held(
        &self,
        state: &str,
        responses: rmcp::model::InputResponses,
        context: &RequestContext<RoleServer>,
    ) -> Result<CallToolResponse, McpError> {
        let Some(mut round) = self.inner.held.resume(owner(context).as_deref(), state) else {
            return Err(McpError::invalid_params(
                format!("unknown or expired requestState: a held call waits {} for its retry, then it is cancelled", crate::config::settings::ASK_TIMEOUT_MS.name),
                None,
            ));
        };
        if let Some((key, question, reply)) = round.pending.take() {
            let answer = responses
                .get(&key)
                .map_or(Reply::Reject(Why::Cancelled), |v| {
                    forms::reply_of(&question, v)
                });
            let _ = reply.send(answer);
        }
        Ok(self.next_round(round, context).await)
    }

    /// Waits for the held call's next question (answered as an `InputRequiredResult` and held
    /// again) or its result; a cancelled request cancels the call.
    async fn next_round(
        &self,
        mut round: Round,
        context: &RequestContext<RoleServer>,
    ) -> CallToolResponse {
        let (question, reply, input) = loop {
            let event = tokio::select! {
                e = round.events.recv() => e,
                _ = context.ct.cancelled() => {
                    round.cancel.cancel();
                    None
                }
            };
            match event {
                Some(Event::Done(result)) => return CallToolResponse::Complete(result),
                Some(Event::Question(q, reply)) => match forms::input_request(&q) {
                    Some(input) => break (q, reply, input),
                    None => {
                        let _ = reply.send(Reply::Reject(Why::CannotAsk));
                    }
                },
                None => {
                    let f = Failure::new(ErrorKind::Error, "the call ended without a result");
                    return CallToolResponse::Complete(self.plain_failure(&f));
                }
            }
        };
        round.asked += 1;
        let key = forms::request_key(round.asked);
        round.pending = Some((key.clone(), question, reply));
        let wait = self.inner.config.ask_timeout;
        match self.inner.held.hold(owner(context), round, wait) {
            Some(id) => CallToolResponse::InputRequired(rmcp::model::InputRequiredResult::new(
                Some([(key, input)].into()),
                Some(id),
            )),
            None => CallToolResponse::Complete(self.plain_failure(&Failure::cancelled(format!(
                "too many calls wait for an answer ({} at most); this one was cancelled",
                crate::held::MAX_HELD
            )))),
        }
    }

    /// Cancels every running task and job (stdin reached EOF: nobody can read their results).
    pub fn cancel_tasks(&self) {
        let n = self.inner.tasks.cancel_all();
        if n > 0 {
            tracing::info!(tasks = n, "stdin closed: cancelling the running tasks");
        }
    }

    /// Waits until no call is in progress.
    pub async fn idle(&self) {
        self.inner.runner.idle().await;
    }

    async fn call(&self, call: tools::Call, env: CallEnv) -> CallToolResult {
        let inner = &self.inner;
        let ctx = tools::Ctx {
            config: &inner.config,
            runner: &inner.runner,
            render: Render {
                answers: &inner.answers,
                budget: inner.config.result_budget,
                structured: !is_legacy(env.version.as_ref()),
                debug: false,
            },
            roots: Roots::new(&inner.config.policy, &inner.cwd, Some(env.peer)),
            sink: env.sink,
            ct: env.ct,
            asker: env.asker,
        };
        tools::call(call, ctx).await
    }

    /// The asker of a plain call: `elicitation/create`, when the connection predates 2026-07-28
    /// (which forbids server requests) and its client declared elicitation at `initialize`.
    fn elicit_asker(&self, context: &RequestContext<RoleServer>) -> Option<Arc<dyn Asker>> {
        let modern = modern(context);
        let declared = context
            .peer
            .peer_info()
            .is_some_and(|info| info.capabilities.elicitation.is_some());
        (declared && !modern).then(|| {
            Arc::new(ElicitAsker {
                peer: context.peer.clone(),
                timeout: self.inner.config.ask_timeout,
            }) as Arc<dyn Asker>
        })
    }

    /// `f` as a prompt tool's failure result.
    fn plain_failure(&self, f: &Failure) -> CallToolResult {
        Render {
            answers: &self.inner.answers,
            budget: self.inner.config.result_budget,
            structured: true,
            debug: false,
        }
        .failure(f)
    }

    /// A call whose `arguments` is not a JSON object (see [`INVALID_ARGUMENTS_META`]): an
    /// `input_validation` failure in the tool's own result shape.
    fn not_an_object(&self, tool: &Decl, kind: Option<&str>) -> CallToolResult {
        let f = Failure::invalid_input(format!(
            "`arguments` must be a JSON object, got {}",
            kind.unwrap_or("something else")
        ));
        self.failure_for(tool, &f)
    }

    /// `f` in the result shape of `tool`.
    fn failure_for(&self, tool: &Decl, f: &Failure) -> CallToolResult {
        let render = Render {
            answers: &self.inner.answers,
            budget: self.inner.config.result_budget,
            structured: true,
            debug: false,
        };
        tool.failure(&render, f)
    }
}

/// A call run as a task (or job): its progress messages become the task's status message, its
/// cancellation is the task's, and its result is the task's outcome; `asker` makes the way its
/// questions are asked from the task's handle.
async fn run_as_task(
    server: GeminiServer,
    call: tools::Call,
    (version, peer): (Option<ProtocolVersion>, Peer<RoleServer>),
    asker: impl FnOnce(&Arc<Handle>) -> Option<Arc<dyn Asker>>,
    handle: Handle,
) -> Outcome {
    let handle = Arc::new(handle);
    let status = handle.clone();
    let env = CallEnv {
        version,
        peer,
        sink: Some(Sink::status(
            move |m| status.status(m),
            Duration::from_millis(crate::tasks::POLL_INTERVAL_MS),
        )),
        ct: handle.cancel.clone(),
        asker: asker(&handle),
    };
    let result = server.call(call, env).await;
    match serde_json::to_value(result) {
        Ok(serde_json::Value::Object(map)) => Outcome::Completed(map),
        _ => Outcome::Failed(crate::tasks::internal_error(
            "the result could not be serialised",
        )),
    }
}

/// Every tool the server declares, as `geminicli-mcp tools --json` prints it:
/// `{"tools": [{"name", "description", "toolset"}]}` in the order `tools/list` lists them.
pub fn tool_catalogue() -> serde_json::Value {
    tools::catalogue()
}

/// Who a task belongs to: over HTTP the session that made it (its `Mcp-Session-Id`), when there
/// is one; on stdio, and on the sessionless 2026-07-28 HTTP requests, the one client the server's
/// token admits — the task id, which nobody can guess, is what a client needs.
fn owner(context: &RequestContext<RoleServer>) -> Option<String> {
    let parts = context.extensions.get::<hyper::http::request::Parts>()?;
    let session = parts.headers.get("mcp-session-id")?;
    session.to_str().ok().map(str::to_owned)
}

/// `result` as a client of the request's protocol version reads it: before 2025-06-18 without
/// `structuredContent` and `resource_link` blocks.
fn downgraded(mut result: CallToolResult, context: &RequestContext<RoleServer>) -> CallToolResult {
    if is_legacy(context.protocol_version().as_ref()) {
        result.structured_content = None;
        result.content.retain(|c| c.as_resource_link().is_none());
    }
    result
}

/// Whether the request's client capabilities (its `_meta` on 2026-07-28) declare elicitation.
fn elicits(context: &RequestContext<RoleServer>) -> bool {
    context
        .client_capabilities()
        .is_some_and(|c| c.elicitation.is_some())
}

/// Whether the request is on the 2026-07-28 protocol or later.
fn modern(context: &RequestContext<RoleServer>) -> bool {
    context
        .protocol_version()
        .is_some_and(|v| v.as_str() >= ProtocolVersion::V_2026_07_28.as_str())
}

/// Protocol versions before 2025-06-18 know neither `outputSchema`, `structuredContent` nor
/// `resource_link` content.
fn is_legacy(version: Option<&ProtocolVersion>) -> bool {
    version.is_some_and(|v| v.as_str() < ProtocolVersion::V_2025_06_18.as_str())
}

/// A call's progress as MCP `notifications/progress` for `token`, numbered as the run reports.
fn progress_sink(peer: Peer<RoleServer>, token: rmcp::model::ProgressToken) -> Sink {
    Sink::notify(move |n, message| {
        let (peer, token) = (peer.clone(), token.clone());
        async move {
            let param = rmcp::model::ProgressNotificationParam::new(token, f64::from(n))
                .with_message(message);
            peer.notify_progress(param).await.is_ok()
        }
    })
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
