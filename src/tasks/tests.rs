use super::*;

fn limits(retention_ms: u64, max_tasks: usize) -> TaskLimits {
    TaskLimits {
        enabled: true,
        retention: Duration::from_millis(retention_ms),
        max_tasks,
    }
}

fn result(text: &str) -> Outcome {
    let mut r = JsonObject::new();
    r.insert(
        "content".into(),
        serde_json::json!([{"type": "text", "text": text}]),
    );
    Outcome::Completed(r)
}

async fn settle(tasks: &Tasks, id: &str) -> DetailedTask {
    for _ in 0..200 {
        let t = tasks.get(None, id).unwrap();
        if t.status().is_terminal() {
            return t;
        }
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    panic!("task {id} did not finish");
}

#[tokio::test(start_paused = true)]
async fn a_task_runs_then_holds_its_result() {
    let tasks = Tasks::new(limits(60_000, 8), &CancellationToken::new());
    let task = tasks
        .start(None, |h| async move {
            h.status("running 0s".into());
            tokio::time::sleep(Duration::from_millis(50)).await;
            result("done")
        })
        .unwrap();
    assert_eq!(task.status, TaskStatus::Working);
    assert!(task.task_id.len() > 32, "{}", task.task_id);
    let done = settle(&tasks, &task.task_id).await;
    match done.payload {
        TaskPayload::Completed { result } => {
            assert_eq!(result["content"][0]["text"], "done");
        }
        other => panic!("{other:?}"),
    }
}

#[tokio::test(start_paused = true)]
async fn the_status_message_follows_the_run() {
    let tasks = Tasks::new(limits(60_000, 8), &CancellationToken::new());
    let (tx, rx) = tokio::sync::oneshot::channel::<()>();
    let task = tasks
        .start(None, |h| async move {
            h.status("running 3s, tools: ls".into());
            let _ = rx.await;
            result("done")
        })
        .unwrap();
    tokio::time::sleep(Duration::from_millis(20)).await;
    let t = tasks.get(None, &task.task_id).unwrap();
    assert_eq!(
        t.task.status_message.as_deref(),
        Some("running 3s, tools: ls")
    );
    let _ = tx.send(());
    let done = settle(&tasks, &task.task_id).await;
    assert!(done
        .task
        .status_message
        .unwrap()
        .starts_with("finished after"));
}

#[tokio::test(start_paused = true)]
async fn cancel_reaches_the_run_and_the_task_reads_cancelled() {
    let tasks = Tasks::new(limits(60_000, 8), &CancellationToken::new());
    let task = tasks
        .start(None, |h| async move {
            h.cancel.cancelled().await;
            result("stopped")
        })
        .unwrap();
    tasks.cancel(None, &task.task_id).unwrap();
    let done = settle(&tasks, &task.task_id).await;
    assert_eq!(done.status(), TaskStatus::Cancelled);
}

#[tokio::test(start_paused = true)]
async fn another_owner_cannot_see_a_task() {
    let tasks = Tasks::new(limits(60_000, 8), &CancellationToken::new());
    let task = tasks
        .start(Some("a".into()), |_| async { result("x") })
        .unwrap();
    assert!(tasks.get(Some("b"), &task.task_id).is_err());
    assert!(tasks.get(None, &task.task_id).is_err());
    assert!(tasks.cancel(Some("b"), &task.task_id).is_err());
    assert!(tasks.get(Some("a"), &task.task_id).is_ok());
}

#[tokio::test(start_paused = true)]
async fn a_question_makes_the_task_input_required_until_it_is_answered() {
    let tasks = Tasks::new(limits(60_000, 8), &CancellationToken::new());
    let request: InputRequest = serde_json::from_value(serde_json::json!({
        "method": "elicitation/create",
        "params": {"mode": "form", "message": "Allow?", "requestedSchema": {"type": "object", "properties": {}}}
    }))
    .unwrap();
    let task = tasks
        .start(None, |h| async move {
            let answer = h.ask(request).await;
            result(&answer.map_or("none".into(), |a| a["action"].to_string()))
        })
        .unwrap();
    tokio::time::sleep(Duration::from_millis(20)).await;
    let asked = tasks.get(None, &task.task_id).unwrap();
    assert_eq!(asked.status(), TaskStatus::InputRequired);
    let TaskPayload::InputRequired { input_requests } = asked.payload else {
        panic!("no input request");
    };
    let key = input_requests.keys().next().unwrap().clone();
    // An unknown key is ignored; the right one answers.
    let answer = |k: &str| [(k.to_string(), serde_json::json!({"action": "accept"}))].into();
    tasks.update(None, &task.task_id, answer("other")).unwrap();
    assert_eq!(
        tasks.get(None, &task.task_id).unwrap().status(),
        TaskStatus::InputRequired
    );
    tasks.update(None, &task.task_id, answer(&key)).unwrap();
    let done = settle(&tasks, &task.task_id).await;
    match done.payload {
        TaskPayload::Completed { result } => {
            assert_eq!(result["content"][0]["text"], "\"accept\"");
        }
        other => panic!("{other:?}"),
    }
}

#[tokio::test(start_paused = true)]
async fn a_full_store_evicts_finished_tasks_and_refuses_when_all_run() {
    let tasks = Tasks::new(limits(60_000, 2), &CancellationToken::new());
    let first = tasks.start(None, |_| async { result("1") }).unwrap();
    settle(&tasks, &first.task_id).await;
    let hold = CancellationToken::new();
    let (h1, h2) = (hold.clone(), hold.clone());
    let second = tasks
        .start(None, |_| async move {
            h1.cancelled().await;
            result("2")
        })
        .unwrap();
    let third = tasks
        .start(None, |_| async move {
            h2.cancelled().await;
            result("3")
        })
        .unwrap();
    assert!(
        tasks.get(None, &first.task_id).is_err(),
        "the finished one made room"
    );
    assert!(tasks.start(None, |_| async { result("4") }).is_none());
    assert!(tasks.get(None, &second.task_id).is_ok());
    assert!(tasks.get(None, &third.task_id).is_ok());
    hold.cancel();
}

#[tokio::test(start_paused = true)]
async fn a_running_task_nobody_asks_about_is_cancelled_and_forgotten() {
    let tasks = Tasks::new(limits(100, 8), &CancellationToken::new());
    let (tx, rx) = tokio::sync::oneshot::channel::<bool>();
    let task = tasks
        .start(None, |h| async move {
            h.cancel.cancelled().await;
            let _ = tx.send(true);
            result("expired")
        })
        .unwrap();
    tokio::time::sleep(Duration::from_millis(150)).await;
    tasks.sweep();
    assert!(tokio::time::timeout(Duration::from_secs(5), rx)
        .await
        .unwrap()
        .unwrap());
    assert!(tasks.get(None, &task.task_id).is_err());
}

#[tokio::test(start_paused = true)]
async fn a_run_outlives_the_retention_while_the_client_asks() {
    let tasks = Tasks::new(limits(100, 8), &CancellationToken::new());
    let task = tasks
        .start(None, |_| async {
            tokio::time::sleep(Duration::from_millis(400)).await;
            result("long")
        })
        .unwrap();
    let done = settle(&tasks, &task.task_id).await;
    assert_eq!(done.status(), TaskStatus::Completed);
    assert!(done.task.ttl_ms.unwrap() >= 400, "{:?}", done.task.ttl_ms);
}

#[tokio::test(start_paused = true)]
async fn a_finished_task_is_forgotten_after_its_retention() {
    let tasks = Tasks::new(limits(50, 8), &CancellationToken::new());
    let task = tasks.start(None, |_| async { result("x") }).unwrap();
    settle(&tasks, &task.task_id).await;
    tokio::time::sleep(Duration::from_millis(80)).await;
    tasks.sweep();
    assert!(tasks.is_empty());
}

fn label(key: &str, prompt: &str) -> Option<JobLabel> {
    Some(JobLabel {
        tool: "gemini_prompt".into(),
        key: Some((key.into(), serde_json::json!({"prompt": prompt}))),
    })
}

#[tokio::test(start_paused = true)]
async fn a_key_held_attaches_for_the_same_arguments_and_refuses_others() {
    let tasks = Tasks::new(limits(60_000, 8), &CancellationToken::new());
    let (tx, rx) = tokio::sync::oneshot::channel::<()>();
    let first = match tasks.start_job(Some("a".into()), label("k", "p"), |_| async move {
        let _ = rx.await;
        result("once")
    }) {
        Ok(Started::New(task)) => task.task_id,
        other => panic!("{other:?}"),
    };
    let ran_again = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
    let again = {
        let ran = ran_again.clone();
        tasks.start_job(Some("a".into()), label("k", "p"), move |_| async move {
            ran.store(true, std::sync::atomic::Ordering::SeqCst);
            result("twice")
        })
    };
    assert!(
        matches!(again, Ok(Started::Attached(ref id)) if *id == first),
        "{again:?}"
    );
    let other = tasks.start_job(Some("a".into()), label("k", "q"), |_| async { result("x") });
    assert!(
        matches!(other, Err(Refused::KeyTaken(ref id)) if *id == first),
        "{other:?}"
    );
    // Another client's key is its own.
    let theirs = tasks.start_job(Some("b".into()), label("k", "q"), |_| async { result("b") });
    assert!(matches!(theirs, Ok(Started::New(_))), "{theirs:?}");
    tx.send(()).unwrap();
    let view = loop {
        let waiting = tasks.next_finish();
        let v = tasks.view(Some("a"), &first).unwrap();
        if v.payload.is_some() {
            break v;
        }
        waiting.await;
    };
    assert_eq!(view.status, TaskStatus::Completed);
    assert_eq!(view.tool.as_deref(), Some("gemini_prompt"));
    assert!(!ran_again.load(std::sync::atomic::Ordering::SeqCst));
    assert_eq!(tasks.list(Some("a")).len(), 1);
    assert!(
        tasks.view(Some("b"), &first).is_err(),
        "another client's job is unknown"
    );
}

#[tokio::test(start_paused = true)]
async fn a_store_full_of_running_jobs_refuses_a_start() {
    let tasks = Tasks::new(limits(60_000, 1), &CancellationToken::new());
    let running = tasks.start_job(None, label("k1", "p"), |h| async move {
        h.cancel.cancelled().await;
        result("stopped")
    });
    assert!(matches!(running, Ok(Started::New(_))));
    let refused = tasks.start_job(None, label("k2", "p"), |_| async { result("x") });
    assert!(matches!(refused, Err(Refused::Full)), "{refused:?}");
}
