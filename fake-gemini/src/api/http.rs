//! Just enough HTTP/1.1 for the scripted API: read one request (Content-Length or chunked body)
//! from a connection, and write plain or event-stream responses. Only the real CLI's own
//! requests need to parse, so anything unusual is refused rather than guessed.

use std::io::{self, BufRead, BufReader, Read, Write};
use std::net::TcpStream;

/// Header block and body limits: the CLI's largest request is a few hundred KiB (the whole
/// conversation plus tool declarations); anything far beyond that is not the CLI.
const MAX_HEADER_BYTES: usize = 64 * 1024;
const MAX_BODY_BYTES: usize = 64 * 1024 * 1024;

/// One parsed request.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Request {
    /// `POST`, `GET`, …
    pub method: String,
    /// The request target as sent (path and query).
    pub target: String,
    /// Header names lower-cased, in order.
    pub headers: Vec<(String, String)>,
    /// The decoded body.
    pub body: Vec<u8>,
}

impl Request {
    /// The first value of a header (name compared case-insensitively).
    pub fn header(&self, name: &str) -> Option<&str> {
        self.headers
            .iter()
            .find(|(n, _)| n.eq_ignore_ascii_case(name))
            .map(|(_, v)| v.as_str())
    }

    /// Whether the client asked to close the connection after this exchange.
    pub fn wants_close(&self) -> bool {
        self.header("connection")
            .is_some_and(|v| v.eq_ignore_ascii_case("close"))
    }
}

fn bad(msg: impl Into<String>) -> io::Error {
    io::Error::new(io::ErrorKind::InvalidData, msg.into())
}

/// Reads one CRLF- (or LF-) terminated line, counting it against `budget`.
fn line(r: &mut impl BufRead, budget: &mut usize) -> io::Result<Option<String>> {
    let mut buf = Vec::new();
    // `take` bounds a line that never ends, so a garbage client cannot grow the buffer forever.
    let n = r.take(*budget as u64 + 1).read_until(b'\n', &mut buf)?;
    if n == 0 {
        return Ok(None);
    }
    if n > *budget {
        return Err(bad("header block too large"));
    }
    *budget -= n;
    while buf.last().is_some_and(|b| *b == b'\n' || *b == b'\r') {
        buf.pop();
    }
    String::from_utf8(buf)
        .map(Some)
        .map_err(|_| bad("header is not UTF-8"))
}

/// Reads the next request; `Ok(None)` when the client closed the connection between requests.
pub fn read_request(r: &mut BufReader<TcpStream>) -> io::Result<Option<Request>> {
    let mut budget = MAX_HEADER_BYTES;
    // RFC 9112 §2.2: a server should ignore empty lines received before the request line.
    let request_line = loop {
        match line(r, &mut budget)? {
            None => return Ok(None),
            Some(l) if l.is_empty() => continue,
            Some(l) => break l,
        }
    };
    let mut parts = request_line.split(' ');
    let (Some(method), Some(target), Some(version), None) =
        (parts.next(), parts.next(), parts.next(), parts.next())
    else {
        return Err(bad(format!("bad request line `{request_line}`")));
    };
    if !version.starts_with("HTTP/1.") {
        return Err(bad(format!("unsupported protocol `{version}`")));
    }
    let mut headers = Vec::new();
    loop {
        let l = line(r, &mut budget)?.ok_or_else(|| bad("connection closed in headers"))?;
        if l.is_empty() {
            break;
        }
        let (name, value) = l
            .split_once(':')
            .ok_or_else(|| bad(format!("bad header line `{l}`")))?;
        headers.push((name.trim().to_ascii_lowercase(), value.trim().to_string()));
    }
    let mut req = Request {
        method: method.to_string(),
        target: target.to_string(),
        headers,
        body: Vec::new(),
    };
    let chunked = req
        .header("transfer-encoding")
        .is_some_and(|v| v.to_ascii_lowercase().contains("chunked"));
    if chunked {
        req.body = read_chunked(r)?;
    } else if let Some(len) = req.header("content-length") {
        let len: usize = len
            .parse()
            .map_err(|_| bad(format!("bad content-length `{len}`")))?;
        if len > MAX_BODY_BYTES {
            return Err(bad("body too large"));
        }
        req.body = vec![0; len];
        r.read_exact(&mut req.body)?;
    }
    Ok(Some(req))
}

/// Decodes a chunked body (RFC 9112 §7.1); extensions and trailers are read and dropped.
fn read_chunked(r: &mut BufReader<TcpStream>) -> io::Result<Vec<u8>> {
    let mut body = Vec::new();
    loop {
        let mut budget = MAX_HEADER_BYTES;
        let size_line = line(r, &mut budget)?.ok_or_else(|| bad("connection closed in body"))?;
        let hex = size_line.split(';').next().unwrap_or("").trim();
        let size = usize::from_str_radix(hex, 16)
            .map_err(|_| bad(format!("bad chunk size `{size_line}`")))?;
        if size == 0 {
            // Trailer section up to the empty line.
            while !line(r, &mut budget)?.unwrap_or_default().is_empty() {}
            return Ok(body);
        }
        if body.len() + size > MAX_BODY_BYTES {
            return Err(bad("body too large"));
        }
        let start = body.len();
        body.resize(start + size, 0);
        r.read_exact(&mut body[start..])?;
        let mut crlf = [0u8; 2];
        r.read_exact(&mut crlf)?;
        if &crlf != b"\r\n" {
            return Err(bad("chunk not followed by CRLF"));
        }
    }
}

fn reason(status: u16) -> &'static str {
    match status {
        200 => "OK",
        400 => "Bad Request",
        401 => "Unauthorized",
        403 => "Forbidden",
        404 => "Not Found",
        429 => "Too Many Requests",
        500 => "Internal Server Error",
        503 => "Service Unavailable",
        _ => "Status",
    }
}

/// Writes a complete response with a Content-Length body.
pub fn write_response(
    w: &mut impl Write,
    status: u16,
    content_type: &str,
    body: &[u8],
    close: bool,
) -> io::Result<()> {
    let head = format!(
        "HTTP/1.1 {status} {}\r\ncontent-type: {content_type}\r\ncontent-length: {}\r\nconnection: {}\r\n\r\n",
        reason(status),
        body.len(),
        if close { "close" } else { "keep-alive" }
    );
    w.write_all(head.as_bytes())?;
    w.write_all(body)?;
    w.flush()
}

/// Starts an event stream. Its end is the end of the connection (no length, no chunking), so
/// every event reaches the client the moment it is written: that is what gives deltas their cadence.
pub fn start_event_stream(w: &mut impl Write) -> io::Result<()> {
    w.write_all(
        b"HTTP/1.1 200 OK\r\ncontent-type: text/event-stream\r\ncache-control: no-cache\r\nconnection: close\r\n\r\n",
    )?;
    w.flush()
}

/// Writes one server-sent event carrying `data` (one line, as the Gemini API sends them).
pub fn write_event(w: &mut impl Write, data: &str) -> io::Result<()> {
    w.write_all(format!("data: {data}\r\n\r\n").as_bytes())?;
    w.flush()
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::net::TcpListener;

    fn roundtrip(raw: &'static [u8]) -> io::Result<Option<Request>> {
        let l = TcpListener::bind("127.0.0.1:0").unwrap();
        let addr = l.local_addr().unwrap();
        let t = std::thread::spawn(move || {
            let mut c = TcpStream::connect(addr).unwrap();
            c.write_all(raw).unwrap();
        });
        let (s, _) = l.accept().unwrap();
        t.join().unwrap();
        read_request(&mut BufReader::new(s))
    }

    #[test]
    fn content_length_body() {
        let r = roundtrip(b"POST /v1beta/models/m:generateContent HTTP/1.1\r\nHost: x\r\nContent-Length: 2\r\n\r\n{}")
            .unwrap()
            .unwrap();
        assert_eq!(r.method, "POST");
        assert_eq!(r.target, "/v1beta/models/m:generateContent");
        assert_eq!(r.header("host"), Some("x"));
        assert_eq!(r.body, b"{}");
    }

    #[test]
    fn chunked_body() {
        let r = roundtrip(
            b"POST / HTTP/1.1\r\ntransfer-encoding: chunked\r\n\r\n3;x=y\r\nabc\r\n2\r\nde\r\n0\r\n\r\n",
        )
        .unwrap()
        .unwrap();
        assert_eq!(r.body, b"abcde");
    }

    #[test]
    fn garbage_and_eof() {
        assert!(roundtrip(b"NOT HTTP\r\n\r\n").is_err());
        assert!(roundtrip(b"").unwrap().is_none());
        assert!(roundtrip(b"POST / HTTP/1.1\r\ncontent-length: x\r\n\r\n").is_err());
    }
}
