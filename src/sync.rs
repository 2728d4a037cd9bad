//! Locks that one panic does not break for every caller after it.

use std::sync::{Mutex, MutexGuard, PoisonError};

/// Locks `m`, taking its data over when an earlier holder panicked. No lock of the server guards
/// a change a panic could leave half made, so a poisoned lock is not a state it handles: without
/// this, one panicking call would make every later call that takes the lock panic too.
pub(crate) fn lock<T: ?Sized>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(PoisonError::into_inner)
}
