//! Answers too long to return in one result, kept in memory (bounded in count and bytes, oldest
//! first out), readable on with `gemini_read_answer` by an id nobody can guess (one HTTP server
//! serves several clients) and as MCP resources.

use std::collections::VecDeque;
use std::sync::{Arc, Mutex};

use crate::sync::lock;
use rmcp::model::Resource;

/// Most answers kept readable as resources; the oldest goes first.
pub(crate) const MAX_STORED_ANSWERS: usize = 32;
/// Most bytes of answers kept readable as resources; the oldest go first.
pub(crate) const MAX_STORED_BYTES: usize = 64 * 1024 * 1024;
/// URI prefix of stored answers.
pub(crate) const ANSWER_URI_PREFIX: &str = "geminicli-mcp://answers/";

/// The store (shared by every client of the server).
#[derive(Default)]
pub(crate) struct Answers {
    entries: Mutex<Entries>,
}

#[derive(Default)]
struct Entries {
    list: VecDeque<(String, Arc<String>)>,
    bytes: usize,
}

impl Answers {
    /// Keeps `text` and returns its id and its resource (URI, size, description). The id is 128
    /// random bits: knowing one answer's id tells nothing of another's.
    pub(crate) fn keep(&self, text: String, total_chars: usize) -> (String, Resource) {
        self.keep_shared(Arc::new(text), total_chars)
    }

    /// [`Answers::keep`] of a text others hold too: kept without a copy.
    pub(crate) fn keep_shared(&self, text: Arc<String>, total_chars: usize) -> (String, Resource) {
        let id = new_id();
        let uri = format!("{ANSWER_URI_PREFIX}{id}");
        let size = text.len() as u64;
        self.insert(id.clone(), text);
        let mut resource = Resource::new(uri, "full Gemini answer");
        resource.mime_type = Some("text/plain".into());
        resource.size = Some(size);
        resource.description = Some(format!("The complete answer ({total_chars} characters)"));
        (id, resource)
    }

    fn insert(&self, uri: String, text: Arc<String>) {
        let mut e = lock(&self.entries);
        e.bytes += text.len();
        e.list.push_back((uri, text));
        while e.list.len() > MAX_STORED_ANSWERS || (e.bytes > MAX_STORED_BYTES && e.list.len() > 1)
        {
            if let Some((_, old)) = e.list.pop_front() {
                e.bytes -= old.len();
            }
        }
    }

    /// The answer kept at `uri` (a resource), while it is kept.
    pub(crate) fn get_uri(&self, uri: &str) -> Option<Arc<String>> {
        self.get(uri.strip_prefix(ANSWER_URI_PREFIX)?)
    }

    /// The answer with this id, while it is kept.
    pub(crate) fn get(&self, uri: &str) -> Option<Arc<String>> {
        let e = lock(&self.entries);
        e.list
            .iter()
            .find(|(u, _)| u == uri)
            .map(|(_, t)| t.clone())
    }

    /// The resource of the kept answer `id`, while it is kept.
    pub(crate) fn resource(&self, id: &str) -> Option<Resource> {
        let text = self.get(id)?;
        let mut r = Resource::new(format!("{ANSWER_URI_PREFIX}{id}"), "full Gemini answer");
        r.mime_type = Some("text/plain".into());
        r.size = Some(text.len() as u64);
        r.description = Some(format!(
            "The complete answer ({} characters)",
            text.chars().count()
        ));
        Some(r)
    }

    /// Every kept answer as a resource, oldest first.
    pub(crate) fn list(&self) -> Vec<Resource> {
        let e = lock(&self.entries);
        e.list
            .iter()
            .map(|(id, text)| {
                let mut r = Resource::new(format!("{ANSWER_URI_PREFIX}{id}"), "full Gemini answer");
                r.mime_type = Some("text/plain".into());
                r.size = Some(text.len() as u64);
                r
            })
            .collect()
    }
}

/// 128 random bits as 32 hexadecimal digits.
fn new_id() -> String {
    let mut bytes = [0u8; 16];
    // The operating system's generator does not fail on the supported systems; if it ever did,
    // the ids would still be unique (the time and a counter), only guessable.
    if getrandom::fill(&mut bytes).is_err() {
        static COUNTER: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);
        let n = COUNTER.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        let t = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0, |d| d.as_nanos());
        bytes[..8].copy_from_slice(&n.to_le_bytes());
        bytes[8..].copy_from_slice(&(t as u64).to_le_bytes());
    }
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_oldest_answer_goes_first() {
        let store = Answers::default();
        let uris: Vec<String> = (0..(MAX_STORED_ANSWERS + 2))
            .map(|_| store.keep("x".into(), 1).0)
            .collect();
        assert!(store.get(&uris[0]).is_none());
        assert!(store.get(&uris[1]).is_none());
        assert!(store.get(&uris[2]).is_some());
        assert_eq!(store.list().len(), MAX_STORED_ANSWERS);
    }

    #[test]
    fn ids_are_random_and_resources_find_them() {
        let store = Answers::default();
        let (a, resource) = store.keep("one".into(), 3);
        let (b, _) = store.keep("two".into(), 3);
        assert_eq!(a.len(), 32);
        assert_ne!(a, b);
        assert_eq!(store.get_uri(&resource.uri).unwrap().as_str(), "one");
        assert!(store.get_uri("geminicli-mcp://answers/0").is_none());
    }
}
