//! The slot's task kept to its rules, told commands as calls tell it: a reply is looked for after
//! a later command's answer, so the task has handled everything sent before (its mailbox is in
//! order). The clock is paused: a reply that never comes fails the test at once, its hour passed
//! by the runtime. Where the task must hold an agent, a `sleep` process stands in for it.

use super::*;
use crate::error::ErrorKind;

fn key(cwd: &str) -> Key {
    Key {
        cwd: PathBuf::from(cwd),
        servers: Vec::new(),
        dirs: Vec::new(),
    }
}

/// A slot of `cwd` whose agent is stopped after 600 s unused.
fn slot_of(cwd: &str) -> Arc<Slot> {
    let wear = Wear {
        max_sessions: 32,
        max_agent_mb: 1024,
        idle: Duration::from_secs(600),
    };
    Slot::start(key(cwd), wear, CancellationToken::new())
}

fn slot() -> Arc<Slot> {
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

fn ticket(start: Start) -> StartTicket {
    match start {
        Start::Yours(t) => t,
        Start::Running(_) => panic!("an agent runs"),
        Start::Failed(f) => panic!("the start failed: {}", f.message),
    }
}

#[tokio::test(start_paused = true)]
async fn one_call_starts_the_agent_and_a_start_given_up_passes_to_the_next_call_waiting() {
    let slot = slot();
    let first = ticket(within(slot.agent()).await.expect("first"));
    let mut second = told(&slot, Command::Agent);
    settled(&slot).await;
    assert!(
        second.try_recv().is_err(),
        "one start at a time: the second call waits"
    );
    drop(first);
    let second = ticket(within(second).await.expect("the duty passed on"));
    drop(second);
    assert!(
        matches!(within(slot.agent()).await, Ok(Start::Yours(_))),
        "and on again"
    );
}

#[tokio::test(start_paused = true)]
async fn a_call_that_gave_up_waiting_is_passed_over() {
    let slot = slot();
    let first = ticket(within(slot.agent()).await.expect("first"));
    drop(told(&slot, Command::Agent));
    let third = told(&slot, Command::Agent);
    drop(first);
    ticket(within(third).await.expect("the third call starts it"));
}

#[tokio::test(start_paused = true)]
async fn a_failed_start_reaches_every_call_waiting_and_is_remembered_when_asked() {
    let slot = slot();
    let first = ticket(within(slot.agent()).await.expect("first"));
    let waiting = [told(&slot, Command::Agent), told(&slot, Command::Agent)];
    assert!(within(slot.failed_lately()).await.is_none());
    first.done(Err(Failure::new(ErrorKind::Error, "no ACP")), true);
    for w in waiting {
        match within(w).await.expect("an answer") {
            Start::Failed(f) => assert_eq!(f.message, "no ACP"),
            _ => panic!("the waiting call did not get the start's failure"),
        }
    }
    let lately = within(slot.failed_lately()).await.expect("remembered");
    assert_eq!(lately.message, "no ACP");
    // A failure not to remember leaves the prompt tools free to try again.
    let slot = self::slot();
    let first = ticket(within(slot.agent()).await.expect("first"));
    first.done(
        Err(Failure::new(ErrorKind::AuthRequired, "no login")),
        false,
    );
    assert!(within(slot.failed_lately()).await.is_none());
}

#[tokio::test(start_paused = true)]
async fn the_workspace_session_is_leased_to_one_call_at_a_time_in_order() {
    let slot = slot();
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
async fn spares_are_made_by_one_call_and_a_call_waiting_for_one_hears_when_none_comes() {
    let slot = slot();
    assert!(
        within(slot.take_spare(true))
            .await
            .expect("answer")
            .is_none(),
        "none made, none coming"
    );
    assert!(!within(slot.begin_spares(0)).await, "none wanted");
    assert!(within(slot.begin_spares(2)).await);
    assert!(!within(slot.begin_spares(2)).await, "one call makes them");
    let mut waiting = told(&slot, |r| SpareCommand::TakeSpare(true, r).into());
    let now = within(slot.take_spare(false)).await.expect("answer");
    assert!(now.is_none(), "a call that does not wait gets none at once");
    assert!(
        waiting.try_recv().is_err(),
        "the waiting call waits for the spare being made"
    );
    slot.end_spares();
    assert!(within(waiting).await.expect("told").is_none());
    assert!(
        within(slot.begin_spares(2)).await,
        "making spares may begin again"
    );
}

#[tokio::test(start_paused = true)]
async fn the_workspace_session_is_listed_counted_retired_and_reset() {
    let slot = slot();
    assert!(within(slot.listing()).await.is_none());
    slot.record(session("a"), true);
    slot.record(session("b"), false);
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
/// never talks to its agent, it only holds it and kills it).
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

/// The slot's agent, started as a call would: the ticket reported with `agent`.
#[cfg(unix)]
async fn running(slot: &Slot, agent: &Arc<Connection>) {
    let first = ticket(within(slot.agent()).await.expect("first"));
    first.done(Ok((agent.clone(), Value::Null)), false);
    match within(slot.agent()).await.expect("answer") {
        Start::Running(a) => assert!(Arc::ptr_eq(&a, agent)),
        _ => panic!("the started agent is not the slot's"),
    }
}

/// A new slot whose agent (an idle one) has started.
#[cfg(unix)]
async fn slot_with_agent() -> (Arc<Slot>, Arc<Connection>) {
    let slot = slot();
    let agent = idle_agent();
    running(&slot, &agent).await;
    (slot, agent)
}

#[cfg(unix)]
fn spare(id: &str) -> Spare {
    Spare {
        session: session(id),
        file: false,
    }
}

#[cfg(unix)]
#[tokio::test(start_paused = true)]
async fn a_spare_goes_to_the_call_waiting_for_it_else_onto_the_shelf() {
    let (slot, agent) = slot_with_agent().await;
    assert!(within(slot.begin_spares(2)).await);
    drop(told(&slot, |r| SpareCommand::TakeSpare(true, r).into()));
    let waiting = told(&slot, |r| SpareCommand::TakeSpare(true, r).into());
    slot.spare_made(&agent, spare("a"));
    let got = within(waiting).await.expect("told").expect("a spare");
    assert_eq!(got.session.id, "a", "the call still waiting gets it");
    slot.spare_made(&agent, spare("b"));
    let shelf = within(slot.take_spare(false)).await.expect("answer");
    assert_eq!(
        shelf.expect("kept").session.id,
        "b",
        "made with no call waiting: kept"
    );
    assert!(within(slot.take_spare(false))
        .await
        .expect("answer")
        .is_none());
    assert!(
        within(slot.sessions(Some("b")))
            .await
            .expect("answer")
            .1
            .is_some(),
        "the agent holds it"
    );
    agent.kill();
}

#[cfg(unix)]
#[tokio::test(start_paused = true)]
async fn a_spare_of_an_agent_no_longer_the_slots_is_dropped() {
    let slot = slot();
    let (old, new) = (idle_agent(), idle_agent());
    running(&slot, &old).await;
    assert!(within(slot.wants_spare(&old, 2)).await);
    slot.died(&old);
    assert!(
        !within(slot.wants_spare(&old, 2)).await,
        "no more spares for it"
    );
    running(&slot, &new).await;
    slot.spare_made(&old, spare("stale"));
    assert!(
        within(slot.take_spare(false))
            .await
            .expect("answer")
            .is_none(),
        "a session of another process is no spare of this agent"
    );
    assert!(within(slot.wants_spare(&new, 2)).await);
    new.kill();
}

#[tokio::test(start_paused = true)]
async fn a_slot_is_vacant_only_while_it_keeps_nothing() {
    let slot = slot();
    settled(&slot).await;
    assert!(slot.vacant(), "a new slot keeps nothing");
    let first = ticket(within(slot.agent()).await.expect("first"));
    settled(&slot).await;
    assert!(!slot.vacant(), "a start under way");
    first.done(Err(Failure::new(ErrorKind::Error, "no ACP")), true);
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
    let (slot, agent) = slot_with_agent().await;
    {
        let _using = Using::new(&slot);
    }
    settled(&slot).await;
    assert!(!slot.vacant(), "its agent is warm");
    tokio::time::sleep(Duration::from_secs(600 + 200)).await;
    assert!(agent.is_dead(), "stopped once idle");
    assert!(slot.vacant(), "and then the slot keeps nothing");
}

#[tokio::test(start_paused = true)]
async fn only_vacant_slots_no_call_holds_are_let_go_of() {
    let mut slots: HashMap<Key, Arc<Slot>> = ["/a", "/b", "/c"]
        .into_iter()
        .map(|cwd| (key(cwd), slot_of(cwd)))
        .collect();
    let held = slots[&key("/b")].clone();
    let starting = slots[&key("/c")].clone();
    let _ticket = ticket(within(starting.agent()).await.expect("first"));
    settled(&starting).await;
    drop(starting);
    let_go_of_vacant(&mut slots);
    let mut kept: Vec<_> = slots.keys().map(|k| k.cwd.clone()).collect();
    kept.sort();
    assert_eq!(
        kept,
        [PathBuf::from("/b"), PathBuf::from("/c")],
        "/a keeps nothing and no call holds it; a call holds /b; /c is starting its agent"
    );
    drop(held);
}

#[cfg(unix)]
#[tokio::test(start_paused = true)]
async fn a_slot_dropped_ends_its_task_and_stops_its_agent() {
    let (slot, agent) = slot_with_agent().await;
    drop(slot);
    // The clock moves only once the task, woken by the drop, has run.
    tokio::time::sleep(Duration::from_secs(1)).await;
    assert!(agent.is_dead(), "the task stopped its agent as it ended");
}
