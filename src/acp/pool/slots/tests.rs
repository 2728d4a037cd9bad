//! The slot's task kept to its rules, told commands as calls tell it: a reply is looked for after
//! a later command's answer, so the task has handled everything sent before (its mailbox is in
//! order). The task's I/O is the test's ([`Fake`]): each start and each spare waits for the
//! test's answer. The clock is paused: a reply that never comes fails the test at once, its hour
//! passed by the runtime. Where the task must hold an agent, a `sleep` process stands in for it.

use std::path::PathBuf;
use std::time::Duration;

use super::commands::START_RETRY_AFTER;
use super::*;
use crate::approval::ApprovalMode;
use crate::error::ErrorKind;

fn key(cwd: &str) -> Key {
    Key {
        cwd: PathBuf::from(cwd),
        servers: Vec::new(),
        dirs: Vec::new(),
    }
}

/// A start the slot's task spawned, waiting for the test's answer; `ct` is its cancellation.
struct Asked<T> {
    ct: CancellationToken,
    answer: oneshot::Sender<T>,
}

type Started = Result<(Arc<Connection>, Value), Failure>;

/// The slot's I/O as the test tells it. A `deaf` start does not heed its cancellation: a real
/// one may be past the point where it looks.
struct Fake {
    deaf: bool,
    starts: mpsc::UnboundedSender<Asked<Started>>,
    spares: mpsc::UnboundedSender<(ApprovalMode, oneshot::Sender<Option<Spared>>)>,
    opens: mpsc::UnboundedSender<Asked<Result<Ready, Failure>>>,
}

impl Work for Fake {
    fn start(&self, _key: Key, ct: CancellationToken) -> Io<Started> {
        let (answer, rx) = oneshot::channel();
        let _ = self.starts.send(Asked {
            ct: ct.clone(),
            answer,
        });
        let deaf = self.deaf;
        Box::pin(async move {
            tokio::select! {
                r = rx => r.unwrap_or_else(|_| Err(Failure::cancelled("the test dropped the start"))),
                _ = ct.cancelled(), if !deaf => Err(Failure::cancelled("the start was cancelled")),
            }
        })
    }

    fn spare(&self, _key: Key, _agent: Arc<Connection>, mode: ApprovalMode) -> Io<Option<Spared>> {
        let (answer, rx) = oneshot::channel();
        let _ = self.spares.send((mode, answer));
        Box::pin(async move { rx.await.ok().flatten() })
    }

    fn open(
        &self,
        _mailbox: Mailbox,
        _agent: Arc<Connection>,
        opening: Opening,
    ) -> Io<Result<Ready, Failure>> {
        let (answer, rx) = oneshot::channel();
        let _ = self.opens.send(Asked {
            ct: opening.ct,
            answer,
        });
        Box::pin(async move {
            rx.await
                .unwrap_or_else(|_| Err(Failure::cancelled("the test dropped the opening")))
        })
    }

    fn describe(
        &self,
        _mailbox: Mailbox,
        _agent: Arc<Connection>,
    ) -> Io<Result<(Value, Value), Failure>> {
        Box::pin(async { Ok((Value::Null, Value::Null)) })
    }
}

/// A slot and the I/O its task asks of the test.
struct Tested {
    slot: Arc<Slot>,
    starts: mpsc::UnboundedReceiver<Asked<Started>>,
    spares: mpsc::UnboundedReceiver<(ApprovalMode, oneshot::Sender<Option<Spared>>)>,
    opens: mpsc::UnboundedReceiver<Asked<Result<Ready, Failure>>>,
}

/// A slot of `cwd` whose agent is stopped after 600 s unused and keeps 2 spares.
fn slot_of(cwd: &str) -> Tested {
    slot_with(cwd, false)
}

fn slot_with(cwd: &str, deaf: bool) -> Tested {
    let wear = Wear {
        max_sessions: 32,
        max_agent_mb: 1024,
        idle: Duration::from_secs(600),
        spares: 2,
    };
    let (starts, started) = mpsc::unbounded_channel();
    let (spares, spared) = mpsc::unbounded_channel();
    let (opens, opened) = mpsc::unbounded_channel();
    let work = Arc::new(Fake {
        deaf,
        starts,
        spares,
        opens,
    });
    Tested {
        slot: Slot::start(key(cwd), wear, CancellationToken::new(), work),
        starts: started,
        spares: spared,
        opens: opened,
    }
}

fn slot() -> Tested {
    slot_of("/w")
}

fn session(id: &str) -> Session {
    Session {
        id: id.into(),
        turns: 0,
        model: "m".into(),
        mode: ApprovalMode::Default,
    }
}

/// Sends `command` as a call would, and the reply's receiver.
fn told<T>(slot: &Slot, command: impl FnOnce(Reply<T>) -> Command) -> oneshot::Receiver<T> {
    let (tx, rx) = oneshot::channel();
    slot.send(command(tx));
    rx
}

/// What `f` gives, or a failure when it never does.
async fn within<T>(f: impl std::future::Future<Output = T>) -> T {
    tokio::time::timeout(Duration::from_secs(3600), f)
        .await
        .expect("the slot's task never answered")
}

/// Everything sent before has been handled.
async fn settled(slot: &Slot) {
    within(slot.failed_lately()).await;
}

/// A call waiting for the slot's agent as a prompt does, in a task of its own (aborted: the
/// call cancelled).
fn waiting(slot: &Arc<Slot>) -> tokio::task::JoinHandle<Result<Arc<Connection>, Failure>> {
    let slot = slot.clone();
    tokio::spawn(async move { slot.agent().await })
}

/// The failure a call waiting for the agent got.
fn failure(answer: Result<Arc<Connection>, Failure>) -> Failure {
    match answer {
        Ok(_) => panic!("an agent came"),
        Err(f) => f,
    }
}

#[tokio::test(start_paused = true)]
async fn one_start_serves_every_call_waiting_and_its_failure_is_remembered_when_a_one_shot_run_may_answer(
) {
    let mut t = slot();
    let calls = [told(&t.slot, Command::Agent), told(&t.slot, Command::Agent)];
    let start = within(t.starts.recv()).await.expect("a start");
    settled(&t.slot).await;
    assert!(t.starts.try_recv().is_err(), "one start for both calls");
    assert!(within(t.slot.failed_lately()).await.is_none());
    let _ = start
        .answer
        .send(Err(Failure::new(ErrorKind::Error, "no ACP")));
    for call in calls {
        assert_eq!(failure(within(call).await.expect("told")).message, "no ACP");
    }
    let lately = within(t.slot.failed_lately()).await.expect("remembered");
    assert_eq!(lately.message, "no ACP");
    // A failure a one-shot run would share leaves the prompt tools free to try again.
    let mut t = slot();
    let call = told(&t.slot, Command::Agent);
    let start = within(t.starts.recv()).await.expect("a start");
    let _ = start
        .answer
        .send(Err(Failure::new(ErrorKind::AuthRequired, "no login")));
    assert_eq!(
        failure(within(call).await.expect("told")).message,
        "no login"
    );
    assert!(within(t.slot.failed_lately()).await.is_none());
}

#[tokio::test(start_paused = true)]
async fn a_start_is_cancelled_once_every_call_waiting_for_it_has_gone_and_a_later_call_starts_another(
) {
    let mut t = slot();
    let (first, second) = (waiting(&t.slot), waiting(&t.slot));
    let start = within(t.starts.recv()).await.expect("a start");
    first.abort();
    let _ = first.await;
    settled(&t.slot).await;
    assert!(!start.ct.is_cancelled(), "a call still waits for it");
    second.abort();
    let _ = second.await;
    settled(&t.slot).await;
    assert!(start.ct.is_cancelled(), "no call waits for it any more");
    let third = told(&t.slot, Command::Agent);
    let again = within(t.starts.recv()).await.expect("another start");
    assert!(!again.ct.is_cancelled());
    let _ = again
        .answer
        .send(Err(Failure::new(ErrorKind::Error, "no ACP")));
    assert_eq!(
        failure(within(third).await.expect("told")).message,
        "no ACP"
    );
}

#[tokio::test(start_paused = true)]
async fn the_workspace_session_is_leased_to_one_call_at_a_time_in_order() {
    let slot = slot().slot;
    let first = within(slot.lease()).await.expect("first");
    let mut second = told(&slot, Command::Lease);
    drop(told(&slot, Command::Lease));
    let mut fourth = told(&slot, Command::Lease);
    settled(&slot).await;
    assert!(second.try_recv().is_err(), "the second call waits");
    drop(first);
    let second = within(second).await.expect("the second call's turn");
    settled(&slot).await;
    assert!(
        fourth.try_recv().is_err(),
        "the fourth waits for the second"
    );
    drop(second);
    let fourth = within(fourth)
        .await
        .expect("the third gave up: the fourth's turn");
    drop(fourth);
    drop(within(slot.lease()).await.expect("the lease came back"));
}

#[tokio::test(start_paused = true)]
async fn no_spare_is_made_without_an_agent_and_a_call_waiting_for_none_hears_so() {
    let mut t = slot();
    t.slot.record(session("a"), Whose::Warm(ApprovalMode::Plan));
    assert!(
        within(t.slot.take_spare(true))
            .await
            .expect("answer")
            .is_none(),
        "none made, none coming"
    );
    assert!(t.spares.try_recv().is_err(), "no agent, no spare");
}

#[tokio::test(start_paused = true)]
async fn the_workspace_session_is_listed_counted_retired_and_reset() {
    let slot = slot().slot;
    assert!(within(slot.listing()).await.is_none());
    slot.record(session("a"), Whose::Workspace);
    slot.record(session("b"), Whose::Warm(ApprovalMode::Default));
    slot.prompted("a", true);
    slot.prompted("b", false);
    let listing = within(slot.listing())
        .await
        .expect("the workspace's session");
    assert_eq!(listing["session_id"], "a");
    assert_eq!(listing["turn_count"], 1);
    let (workspace, held) = within(slot.sessions(Some("b"))).await.expect("answer");
    assert_eq!(workspace.expect("a").id, "a");
    assert_eq!(held.expect("b held").turns, 1);
    slot.retire("b");
    assert!(within(slot.sessions(Some("b")))
        .await
        .expect("answer")
        .1
        .is_none());
    assert_eq!(within(slot.reset()).await.as_deref(), Some("a"));
    assert!(
        within(slot.reset()).await.is_none(),
        "nothing left to reset"
    );
    assert!(
        within(slot.sessions(Some("a")))
            .await
            .expect("answer")
            .1
            .is_some(),
        "a reset keeps the session loadable on the agent"
    );
}

/// A stand-in agent: a process that lives until it is killed and says nothing (the slot's task
/// only holds it, asks its reader whether a cancel is unanswered, and kills it).
#[cfg(unix)]
fn idle_agent() -> Arc<Connection> {
    let spec = crate::gemini::process::RunSpec {
        program: PathBuf::from("sleep"),
        args: vec!["600".into()],
        env_clear: false,
        env: Vec::new(),
        env_remove: Vec::new(),
        cwd: std::env::temp_dir(),
        stdin: Vec::new(),
        max_output_bytes: 1 << 20,
        kill_grace: Duration::from_millis(100),
        private_tmp: false,
    };
    Connection::start(&spec, Duration::from_millis(100)).expect("sleep starts")
}

/// The slot's agent, started by its task for a call: the start answered with `agent`.
#[cfg(unix)]
async fn running(t: &mut Tested, agent: &Arc<Connection>) {
    let call = told(&t.slot, Command::Agent);
    let start = within(t.starts.recv()).await.expect("a start");
    let _ = start.answer.send(Ok((agent.clone(), Value::Null)));
    let got = within(call).await.expect("told").expect("the agent");
    assert!(Arc::ptr_eq(&got, agent), "the started agent is the call's");
    let got = within(t.slot.agent()).await.expect("the agent");
    assert!(Arc::ptr_eq(&got, agent), "and the next call's, unstarted");
    assert!(t.starts.try_recv().is_err(), "one start");
}

/// A new slot whose agent (an idle one) has started.
#[cfg(unix)]
async fn slot_with_agent() -> (Tested, Arc<Connection>) {
    let mut t = slot();
    let agent = idle_agent();
    running(&mut t, &agent).await;
    (t, agent)
}

#[cfg(unix)]
fn spared(id: &str, ready: bool) -> Option<Spared> {
    Some(Spared {
        spare: Spare {
            session: session(id),
            file: false,
        },
        models: Value::Null,
        ready,
    })
}

#[cfg(unix)]
#[tokio::test(start_paused = true)]
async fn spares_are_made_one_at_a_time_once_a_prompt_tool_came_and_go_to_the_calls_waiting() {
    let (mut t, agent) = slot_with_agent().await;
    t.slot.record(session("w"), Whose::Workspace);
    settled(&t.slot).await;
    assert!(
        t.spares.try_recv().is_err(),
        "the acp set's call wants none"
    );
    t.slot.record(session("a"), Whose::Warm(ApprovalMode::Plan));
    t.slot.record(session("b"), Whose::Warm(ApprovalMode::Plan));
    let (mode, first) = within(t.spares.recv()).await.expect("a spare wanted");
    assert_eq!(mode, ApprovalMode::Plan, "in the call's mode");
    settled(&t.slot).await;
    assert!(t.spares.try_recv().is_err(), "one at a time");
    drop(told(&t.slot, |r| SpareCommand::TakeSpare(true, r).into()));
    let waiting = told(&t.slot, |r| SpareCommand::TakeSpare(true, r).into());
    let _ = first.send(spared("s1", true));
    let got = within(waiting).await.expect("told").expect("a spare");
    assert_eq!(got.session.id, "s1", "the call still waiting gets it");
    let (_, second) = within(t.spares.recv()).await.expect("the next wanted");
    let _ = second.send(spared("s2", true));
    let (_, third) = within(t.spares.recv()).await.expect("and the next");
    let _ = third.send(spared("s3", false));
    settled(&t.slot).await;
    assert!(
        t.spares.try_recv().is_err(),
        "one not put in its mode: no more until the next call"
    );
    let shelf = within(t.slot.take_spare(false)).await.expect("answer");
    assert_eq!(
        shelf.expect("kept").session.id,
        "s2",
        "made with no call waiting: kept"
    );
    assert!(within(t.slot.take_spare(false))
        .await
        .expect("answer")
        .is_none());
    assert!(
        within(t.slot.sessions(Some("s3")))
            .await
            .expect("answer")
            .1
            .is_some(),
        "the agent holds the one not used"
    );
    agent.kill();
}

#[cfg(unix)]
#[tokio::test(start_paused = true)]
async fn a_call_waiting_for_a_spare_hears_when_none_comes() {
    let (mut t, agent) = slot_with_agent().await;
    t.slot
        .record(session("a"), Whose::Warm(ApprovalMode::Default));
    let (_, making) = within(t.spares.recv()).await.expect("a spare wanted");
    let waiting = told(&t.slot, |r| SpareCommand::TakeSpare(true, r).into());
    drop(making);
    assert!(within(waiting).await.expect("told").is_none());
    settled(&t.slot).await;
    assert!(
        t.spares.try_recv().is_err(),
        "a failed spare is not tried again at once"
    );
    agent.kill();
}

#[cfg(unix)]
#[tokio::test(start_paused = true)]
async fn a_spare_of_an_agent_no_longer_the_slots_is_dropped() {
    let mut t = slot();
    let (old, new) = (idle_agent(), idle_agent());
    running(&mut t, &old).await;
    t.slot
        .record(session("a"), Whose::Warm(ApprovalMode::Default));
    let (_, making) = within(t.spares.recv()).await.expect("a spare wanted");
    t.slot.died(&old);
    running(&mut t, &new).await;
    let _ = making.send(spared("stale", true));
    settled(&t.slot).await;
    assert!(
        within(t.slot.take_spare(false))
            .await
            .expect("answer")
            .is_none(),
        "a session of another process is no spare of this agent"
    );
    assert!(within(t.slot.sessions(Some("stale")))
        .await
        .expect("answer")
        .1
        .is_none());
    new.kill();
}

#[cfg(unix)]
#[tokio::test(start_paused = true)]
async fn an_agent_started_for_no_call_is_killed() {
    let mut t = slot_with("/w", true);
    let call = waiting(&t.slot);
    let start = within(t.starts.recv()).await.expect("a start");
    call.abort();
    let _ = call.await;
    settled(&t.slot).await;
    assert!(start.ct.is_cancelled());
    // The agent came up as the call left.
    let agent = idle_agent();
    assert!(start.answer.send(Ok((agent.clone(), Value::Null))).is_ok());
    // The start's task, woken, tells the slot's: a few rounds of the mailbox at most.
    for _ in 0..10 {
        if agent.is_dead() {
            break;
        }
        settled(&t.slot).await;
    }
    assert!(agent.is_dead(), "nobody waited for it");
    let next = waiting(&t.slot);
    let again = within(t.starts.recv())
        .await
        .expect("the next call's own start");
    drop(again);
    let _ = next.await;
}

#[tokio::test(start_paused = true)]
async fn a_slot_is_vacant_only_while_it_keeps_nothing() {
    let mut t = slot();
    let slot = t.slot.clone();
    settled(&slot).await;
    assert!(slot.vacant(), "a new slot keeps nothing");
    let call = told(&slot, Command::Agent);
    let start = within(t.starts.recv()).await.expect("a start");
    settled(&slot).await;
    assert!(!slot.vacant(), "a start under way");
    let _ = start
        .answer
        .send(Err(Failure::new(ErrorKind::Error, "no ACP")));
    within(call).await.expect("told").err().expect("failed");
    settled(&slot).await;
    assert!(!slot.vacant(), "a failed start to remember");
    tokio::time::sleep(START_RETRY_AFTER + Duration::from_secs(1)).await;
    // The next tick forgets the failure: nothing asks the task in between.
    tokio::time::sleep(Duration::from_secs(200)).await;
    assert!(slot.vacant(), "the failure forgotten");
    assert!(within(slot.failed_lately()).await.is_none());
    let using = Using::new(&slot);
    settled(&slot).await;
    assert!(!slot.vacant(), "a call uses it");
    drop(using);
    settled(&slot).await;
    assert!(slot.vacant());
}

#[cfg(unix)]
#[tokio::test(start_paused = true)]
async fn a_slot_with_an_agent_is_kept_until_the_agent_is_stopped_for_idleness() {
    let (t, agent) = slot_with_agent().await;
    {
        let _using = Using::new(&t.slot);
    }
    settled(&t.slot).await;
    assert!(!t.slot.vacant(), "its agent is warm");
    tokio::time::sleep(Duration::from_secs(600 + 200)).await;
    assert!(agent.is_dead(), "stopped once idle");
    assert!(t.slot.vacant(), "and then the slot keeps nothing");
}

#[tokio::test(start_paused = true)]
async fn only_vacant_slots_no_call_holds_are_let_go_of() {
    let mut tested: Vec<Tested> = ["/a", "/b", "/c"].into_iter().map(slot_of).collect();
    let mut slots: HashMap<Key, Arc<Slot>> = tested
        .iter()
        .map(|t| (t.slot.key.clone(), t.slot.clone()))
        .collect();
    let held = slots[&key("/b")].clone();
    let starting = slots[&key("/c")].clone();
    let _call = told(&starting, Command::Agent);
    let _start = within(tested[2].starts.recv()).await.expect("a start");
    settled(&starting).await;
    drop(starting);
    // The tests' own handles go: only the registry's and the calls' hold the slots.
    let work: Vec<_> = tested
        .drain(..)
        .map(|t| (t.starts, t.spares, t.opens))
        .collect();
    let_go_of_vacant(&mut slots);
    let mut kept: Vec<_> = slots.keys().map(|k| k.cwd.clone()).collect();
    kept.sort();
    assert_eq!(
        kept,
        [PathBuf::from("/b"), PathBuf::from("/c")],
        "/a keeps nothing and no call holds it; a call holds /b; /c is starting its agent"
    );
    drop((held, work));
}

#[cfg(unix)]
#[tokio::test(start_paused = true)]
async fn a_slot_dropped_ends_its_task_and_stops_its_agent() {
    let (t, agent) = slot_with_agent().await;
    drop(t);
    // The clock moves only once the task, woken by the drop, has run.
    tokio::time::sleep(Duration::from_secs(1)).await;
    assert!(agent.is_dead(), "the task stopped its agent as it ended");
}

/// A call opening its session as a prompt tool's does, in a task of its own (aborted: the call
/// dropped).
#[cfg(unix)]
fn opening(
    slot: &Arc<Slot>,
    agent: &Arc<Connection>,
    ct: &CancellationToken,
) -> tokio::task::JoinHandle<Result<Ready, Failure>> {
    let (slot, agent) = (slot.clone(), agent.clone());
    let opening = Opening {
        workspace: false,
        asked: Some("s".into()),
        mode: ApprovalMode::Default,
        model: None,
        limits: Default::default(),
        progress: crate::progress::Progress::new(None, crate::progress::Style::Summary, None),
        ct: ct.clone(),
    };
    tokio::spawn(async move { slot.open(agent, opening).await })
}

#[cfg(unix)]
#[tokio::test(start_paused = true)]
async fn a_call_opens_its_session_with_one_command_and_a_call_that_stops_waiting_stops_the_opening()
{
    let agent = idle_agent();
    let mut t = slot();
    let ct = CancellationToken::new();
    // The task runs the opening as a child: it answers other calls meanwhile.
    let call = opening(&t.slot, &agent, &ct);
    let open = within(t.opens.recv()).await.expect("an opening");
    settled(&t.slot).await;
    assert!(!call.is_finished(), "the call awaits its one reply");
    let lock = Arc::new(tokio::sync::Mutex::new(())).lock_owned().await;
    let _ = open.answer.send(Ok(Ready {
        session: session("s"),
        origin: Origin::Held,
        lock,
        gate: None,
    }));
    let ready = within(call).await.expect("told").expect("ready");
    assert_eq!(ready.session.id, "s");
    // The call's cancellation reaches the opening, which ends with what it waited for.
    let call = opening(&t.slot, &agent, &ct);
    let open = within(t.opens.recv()).await.expect("an opening");
    ct.cancel();
    assert!(
        open.ct.is_cancelled(),
        "the opening has the call's cancellation"
    );
    let _ = open.answer.send(Err(Failure::cancelled("while waiting")));
    match within(call).await.expect("told") {
        Ok(_) => panic!("a session came"),
        Err(f) => assert_eq!(f.message, "while waiting"),
    }
    // A call dropped while its session opens stops the opening.
    let call = opening(&t.slot, &agent, &CancellationToken::new());
    let mut open = within(t.opens.recv()).await.expect("an opening");
    call.abort();
    let _ = call.await;
    within(open.answer.closed()).await;
    agent.kill();
}
