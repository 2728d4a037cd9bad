use super::*;

fn gates(ms: u64) -> StartGates {
    StartGates::new(Duration::from_millis(ms))
}

fn key() -> PathBuf {
    PathBuf::from("/w/project")
}

#[tokio::test(start_paused = true)]
async fn a_hold_that_outlives_its_lease_lets_the_next_start_go_ahead() {
    let gates = gates(1_500);
    let never = CancellationToken::new();
    let stuck = gates
        .lock_key(key(), &never, Waiter::default())
        .await
        .unwrap();
    let began = Instant::now();
    let next = gates
        .lock_key(key(), &never, Waiter::default())
        .await
        .unwrap();
    assert_eq!(Instant::now() - began, Duration::from_millis(1_500));
    // The stuck run ending later does not open the gate its successor holds.
    drop(stuck);
    let third = tokio::time::timeout(
        Duration::from_millis(500),
        gates.lock_key(key(), &never, Waiter::default()),
    )
    .await;
    assert!(third.is_err(), "the successor's lease still holds");
    drop(next);
    gates
        .lock_key(key(), &never, Waiter::default())
        .await
        .unwrap();
}

#[tokio::test(start_paused = true)]
async fn a_released_gate_opens_at_once_and_other_workspaces_never_wait() {
    let gates = gates(60_000);
    let never = CancellationToken::new();
    let first = gates
        .lock_key(key(), &never, Waiter::default())
        .await
        .unwrap();
    let began = Instant::now();
    gates
        .lock_key(PathBuf::from("/w/other"), &never, Waiter::default())
        .await
        .unwrap();
    let waiting = tokio::spawn({
        let never = never.clone();
        async move {
            let gates = gates;
            gates
                .lock_key(key(), &never, Waiter::default())
                .await
                .map(|_| ())
        }
    });
    tokio::time::sleep(Duration::from_millis(300)).await;
    drop(first);
    waiting.await.unwrap().unwrap();
    assert!(Instant::now() - began < Duration::from_millis(400));
}

#[tokio::test(start_paused = true)]
async fn a_wait_ends_with_the_callers_deadline_or_cancellation_and_says_so_meanwhile() {
    let gates = gates(60_000);
    let never = CancellationToken::new();
    let _held = gates
        .lock_key(key(), &never, Waiter::default())
        .await
        .unwrap();
    let progress = Progress::new(None, crate::progress::Style::Summary, None);
    let limits = Deadlines {
        total: Some(Duration::from_millis(2_000)),
        ..Deadlines::default()
    };
    let began = Instant::now();
    let waited = gates
        .lock_key(key(), &never, Waiter::new(&progress, limits))
        .await
        .unwrap_err();
    assert_eq!(waited, GateWait::Deadline(Limit::Total));
    assert_eq!(Instant::now() - began, Duration::from_millis(2_000));
    assert!(progress.gate_message().is_none(), "the wait is over");

    let cancel = CancellationToken::new();
    let waiting = {
        let (gates, cancel, progress) = (&gates, cancel.clone(), progress.clone());
        async move {
            gates
                .lock_key(key(), &cancel, Waiter::new(&progress, Deadlines::default()))
                .await
        }
    };
    let watch = async {
        tokio::time::sleep(Duration::from_millis(3_200)).await;
        let said = progress.gate_message().expect("the wait shows");
        assert!(
            said.contains("waiting for another call in this workspace to start (for 3s; its run has held the start gate for 5s, at most 60s)"),
            "{said}"
        );
        cancel.cancel();
    };
    let (waited, ()) = tokio::join!(waiting, watch);
    assert_eq!(waited.unwrap_err(), GateWait::Cancelled);
}
