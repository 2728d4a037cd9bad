use super::*;
use std::collections::HashMap;

/// A body that yields `frames` chunks of `size` bytes (or without end), counting what was
/// taken from it.
struct Chunks {
    size: usize,
    frames: Option<usize>,
    taken: Arc<std::sync::atomic::AtomicUsize>,
    hint: Option<u64>,
}

impl hyper::body::Body for Chunks {
    type Data = Bytes;
    type Error = Infallible;
    fn poll_frame(
        self: std::pin::Pin<&mut Self>,
        _: &mut std::task::Context<'_>,
    ) -> std::task::Poll<Option<Result<hyper::body::Frame<Bytes>, Infallible>>> {
        let this = self.get_mut();
        let n = this.taken.load(std::sync::atomic::Ordering::Relaxed);
        if this.frames.is_some_and(|f| n >= f) {
            return std::task::Poll::Ready(None);
        }
        this.taken
            .store(n + 1, std::sync::atomic::Ordering::Relaxed);
        let data = Bytes::from(vec![b'a'; this.size]);
        std::task::Poll::Ready(Some(Ok(hyper::body::Frame::data(data))))
    }
    fn size_hint(&self) -> hyper::body::SizeHint {
        self.hint.map_or_else(
            hyper::body::SizeHint::default,
            hyper::body::SizeHint::with_exact,
        )
    }
}

fn chunks(size: usize, frames: Option<usize>) -> (Chunks, Arc<std::sync::atomic::AtomicUsize>) {
    let taken = Arc::new(std::sync::atomic::AtomicUsize::new(0));
    let body = Chunks {
        size,
        frames,
        taken: taken.clone(),
        hint: None,
    };
    (body, taken)
}

#[tokio::test]
async fn a_chunked_body_that_never_ends_is_refused_once_past_the_limit() {
    let (body, taken) = chunks(1000, None);
    assert_eq!(read_body(body, 10_000).await, Err(BodyError::TooLarge));
    assert_eq!(
        taken.load(std::sync::atomic::Ordering::Relaxed),
        11,
        "read one frame past the limit, no more"
    );
}

#[tokio::test]
async fn a_body_within_the_limit_is_read_whole_from_any_number_of_frames() {
    let (body, _) = chunks(1000, Some(10));
    let bytes = read_body(body, 10_000).await.unwrap();
    assert_eq!(bytes.len(), 10_000);
    let (one, _) = chunks(7, Some(1));
    assert_eq!(
        read_body(one, 10_000).await.unwrap(),
        Bytes::from_static(b"aaaaaaa")
    );
    let (none, _) = chunks(7, Some(0));
    assert!(read_body(none, 10).await.unwrap().is_empty());
}

#[tokio::test]
async fn a_declared_length_over_the_limit_is_refused_before_a_byte_is_read() {
    let (mut body, taken) = chunks(1000, Some(20));
    body.hint = Some(20_000);
    assert_eq!(read_body(body, 10_000).await, Err(BodyError::TooLarge));
    assert_eq!(taken.load(std::sync::atomic::Ordering::Relaxed), 0);
}

fn options(args: &[&str], vars: &[(&str, &str)]) -> Result<Option<HttpOptions>, HttpConfigError> {
    let mut argv = vec!["geminicli-mcp"];
    argv.extend_from_slice(args);
    let cli = crate::config::Cli::try_parse_from(argv).unwrap();
    let vars: HashMap<String, OsString> = vars
        .iter()
        .map(|(k, v)| (k.to_string(), OsString::from(v)))
        .collect();
    HttpOptions::read(cli.given.over(|name| vars.get(name).cloned()))
}

const TOKEN: &str = "0123456789abcdef0123";

#[test]
fn off_by_default() {
    assert!(options(&[], &[(TOKEN_ENV, TOKEN)]).unwrap().is_none());
}

#[test]
fn loopback_unless_told_otherwise() {
    let err = options(&["--http", "0.0.0.0:8765"], &[(TOKEN_ENV, TOKEN)]).unwrap_err();
    assert!(matches!(err, HttpConfigError::NotLoopback(_)), "{err}");
    let ok = options(
        &["--http", "0.0.0.0:8765", "--http-allow-remote"],
        &[(TOKEN_ENV, TOKEN)],
    );
    assert!(ok.unwrap().is_some());
    let ok = options(
        &[],
        &[("GEMINICLI_MCP_HTTP", "[::1]:0"), (TOKEN_ENV, TOKEN)],
    );
    assert!(ok.unwrap().unwrap().addr.ip().is_loopback());
}

#[test]
fn a_token_is_required_and_must_be_long_enough() {
    let err = options(&["--http", "127.0.0.1:0"], &[]).unwrap_err();
    assert!(matches!(err, HttpConfigError::NoToken));
    let err = options(&["--http", "127.0.0.1:0"], &[(TOKEN_ENV, "short")]).unwrap_err();
    assert!(matches!(err, HttpConfigError::WeakToken));
}

#[test]
fn the_token_file_wins_and_only_its_first_line_counts() {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("token");
    std::fs::write(&file, format!("  {TOKEN}-file \nsecond line\n")).unwrap();
    let o = options(
        &[
            "--http",
            "127.0.0.1:0",
            "--http-token-file",
            file.to_str().unwrap(),
        ],
        &[(TOKEN_ENV, TOKEN)],
    )
    .unwrap()
    .unwrap();
    assert_eq!(o.token_source, TokenSource::File(file.clone()));
    assert!(o.authorized(Some(format!("Bearer {TOKEN}-file").as_bytes())));
    assert!(!o.authorized(Some(format!("Bearer {TOKEN}").as_bytes())));
    assert!(!format!("{o:?}").contains(TOKEN), "Debug hides the token");
}

#[test]
fn bearer_check() {
    let o = options(&["--http", "127.0.0.1:0"], &[(TOKEN_ENV, TOKEN)])
        .unwrap()
        .unwrap();
    assert!(o.authorized(Some(format!("Bearer {TOKEN}").as_bytes())));
    assert!(o.authorized(Some(format!("bearer {TOKEN}").as_bytes())));
    assert!(!o.authorized(Some(format!("Bearer {TOKEN}x").as_bytes())));
    assert!(!o.authorized(Some(format!("Basic {TOKEN}").as_bytes())));
    assert!(!o.authorized(Some(b"Bearer")));
    assert!(!o.authorized(None));
}

#[test]
fn connection_limits_have_defaults_and_the_flag_wins_over_the_variable() {
    let o = options(&["--http", "127.0.0.1:0"], &[(TOKEN_ENV, TOKEN)])
        .unwrap()
        .unwrap();
    assert_eq!(o.limits, Limits::default());
    assert_eq!(o.limits.header_timeout, Duration::from_secs(10));
    assert_eq!(o.limits.idle_timeout, Duration::from_secs(60));
    assert_eq!(o.limits.max_connections, None, "derived when serving");
    let o = options(
        &[
            "--http",
            "127.0.0.1:0",
            "--http-idle-timeout-ms",
            "500",
            "--http-max-connections",
            "7",
        ],
        &[
            (TOKEN_ENV, TOKEN),
            (HEADER_TIMEOUT_ENV, "2500"),
            (IDLE_TIMEOUT_ENV, "9000"),
            (MAX_CONNECTIONS_ENV, ""),
        ],
    )
    .unwrap()
    .unwrap();
    assert_eq!(o.limits.header_timeout, Duration::from_millis(2500));
    assert_eq!(
        o.limits.idle_timeout,
        Duration::from_millis(500),
        "flag wins"
    );
    assert_eq!(o.limits.max_connections, Some(7));
    let described = o.describe();
    let value = |name: &str| {
        described
            .iter()
            .find(|(n, _)| *n == name)
            .unwrap()
            .1
            .clone()
    };
    assert_eq!(value(HEADER_TIMEOUT_ENV), 2500);
    assert_eq!(value(IDLE_TIMEOUT_ENV), 500);
    assert_eq!(value(MAX_CONNECTIONS_ENV), 7);
}

#[test]
fn a_bad_connection_limit_is_an_error_naming_its_variable() {
    for name in [HEADER_TIMEOUT_ENV, IDLE_TIMEOUT_ENV, MAX_CONNECTIONS_ENV] {
        for bad in ["0", "-1", "ten", "1.5", "99999999999999999999999"] {
            let err = options(
                &["--http", "127.0.0.1:0"],
                &[(TOKEN_ENV, TOKEN), (name, bad)],
            )
            .unwrap_err();
            assert!(
                matches!(&err, HttpConfigError::BadLimit { name: n, .. } if *n == name),
                "{name}={bad}: {err}"
            );
            assert!(err.to_string().starts_with(&format!("{name}=")), "{err}");
        }
    }
    let err =
        crate::config::Cli::try_parse_from(["geminicli-mcp", "--http-header-timeout-ms", "0"])
            .unwrap_err();
    assert!(
        err.to_string().contains("--http-header-timeout-ms"),
        "{err}"
    );
}

#[test]
fn a_second_host_or_origin_is_found() {
    use hyper::header::{HeaderValue, HOST, ORIGIN};
    let mut headers = hyper::HeaderMap::new();
    headers.append(HOST, HeaderValue::from_static("127.0.0.1:1"));
    headers.append(ORIGIN, HeaderValue::from_static("http://127.0.0.1:1"));
    assert_eq!(repeated_header(&headers), None, "one of each");
    let mut hosts = headers.clone();
    hosts.append(HOST, HeaderValue::from_static("evil.example"));
    assert_eq!(repeated_header(&hosts), Some("Host"));
    headers.append(ORIGIN, HeaderValue::from_static("http://127.0.0.1:1"));
    assert_eq!(repeated_header(&headers), Some("Origin"), "even the same");
}

#[test]
fn the_body_limit_is_stated_from_its_value() {
    assert_eq!(size_text(16 * 1024 * 1024), "16 MiB");
    assert_eq!(size_text(64 * 1024 * 1024), "64 MiB");
    assert_eq!(size_text(1000), "1000 bytes");
}

#[test]
fn origins_and_hosts_from_flags_or_env() {
    let o = options(
        &["--http", "127.0.0.1:0"],
        &[
            (TOKEN_ENV, TOKEN),
            (
                "GEMINICLI_MCP_HTTP_ALLOWED_ORIGINS",
                "http://localhost:3000, https://a.example",
            ),
        ],
    )
    .unwrap()
    .unwrap();
    assert_eq!(
        o.allowed_origins,
        ["http://localhost:3000", "https://a.example"]
    );
    let o = options(
        &[
            "--http",
            "127.0.0.1:0",
            "--http-allowed-origin",
            "http://x:1",
        ],
        &[
            (TOKEN_ENV, TOKEN),
            ("GEMINICLI_MCP_HTTP_ALLOWED_ORIGINS", "http://y:2"),
        ],
    )
    .unwrap()
    .unwrap();
    assert_eq!(o.allowed_origins, ["http://x:1"], "the flag wins");
}
