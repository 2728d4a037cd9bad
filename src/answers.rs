//! Answers too long to return inline, kept in memory (bounded in count and bytes, oldest first
//! out) and readable as MCP resources.

use std::collections::VecDeque;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};

use rmcp::model::Resource;

/// Most answers kept readable as resources; the oldest goes first.
pub const MAX_STORED_ANSWERS: usize = 32;
/// Most bytes of answers kept readable as resources; the oldest go first.
pub const MAX_STORED_BYTES: usize = 64 * 1024 * 1024;
/// URI prefix of stored answers.
pub const ANSWER_URI_PREFIX: &str = "geminicli-mcp://answers/";

/// The store (shared by every client of the server).
#[derive(Default)]
pub struct Answers {
    entries: Mutex<Entries>,
    next_id: AtomicU64,
}

#[derive(Default)]
struct Entries {
    list: VecDeque<(String, Arc<String>)>,
    bytes: usize,
}

impl Answers {
    /// Keeps `text` and returns its resource (URI, size, description).
    pub fn keep(&self, text: String, total_chars: usize) -> Resource {
        let id = self.next_id.fetch_add(1, Ordering::Relaxed) + 1;
        let uri = format!("{ANSWER_URI_PREFIX}{}-{id}", std::process::id());
        let size = text.len() as u64;
        self.insert(uri.clone(), Arc::new(text));
        let mut resource = Resource::new(uri, "full Gemini answer");
        resource.mime_type = Some("text/plain".into());
        resource.size = Some(size);
        resource.description = Some(format!("The complete answer ({total_chars} characters)"));
        resource
    }

    fn insert(&self, uri: String, text: Arc<String>) {
        let mut e = self.entries.lock().unwrap_or_else(|e| e.into_inner());
        e.bytes += text.len();
        e.list.push_back((uri, text));
        while e.list.len() > MAX_STORED_ANSWERS || (e.bytes > MAX_STORED_BYTES && e.list.len() > 1)
        {
            if let Some((_, old)) = e.list.pop_front() {
                e.bytes -= old.len();
            }
        }
    }

    /// The answer at `uri`, while it is kept.
    pub fn get(&self, uri: &str) -> Option<Arc<String>> {
        let e = self.entries.lock().unwrap_or_else(|e| e.into_inner());
        e.list
            .iter()
            .find(|(u, _)| u == uri)
            .map(|(_, t)| t.clone())
    }

    /// Every kept answer as a resource, oldest first.
    pub fn list(&self) -> Vec<Resource> {
        let e = self.entries.lock().unwrap_or_else(|e| e.into_inner());
        e.list
            .iter()
            .map(|(uri, text)| {
                let mut r = Resource::new(uri.clone(), "full Gemini answer");
                r.mime_type = Some("text/plain".into());
                r.size = Some(text.len() as u64);
                r
            })
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_oldest_answer_goes_first() {
        let store = Answers::default();
        let uris: Vec<String> = (0..(MAX_STORED_ANSWERS + 2))
            .map(|_| store.keep("x".into(), 1).uri)
            .collect();
        assert!(store.get(&uris[0]).is_none());
        assert!(store.get(&uris[1]).is_none());
        assert!(store.get(&uris[2]).is_some());
        assert_eq!(store.list().len(), MAX_STORED_ANSWERS);
    }
}
