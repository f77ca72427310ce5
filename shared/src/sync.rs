//! A lock that outlives a panic: the one place the course decides what a
//! poisoned [`Mutex`] means.
//!
//! A thread that panics while it holds a `std` mutex poisons it, and from
//! then on `lock()` returns an error instead of the data. The locks in the
//! harness guard queues of notices and finished work, maps of running
//! tasks, counters, a clock, an approver and the observer the loop reports
//! to. Their critical sections are short: a change of that data (a push,
//! an insert, a `take`, an assignment, a few of them in a row), one call
//! that reads it, or one append to a file that is read back defensively
//! (the workflow journal). So a panic under one of these locks is a bug,
//! reported where it happened (a task's `JoinError`, a failed test), and
//! what it leaves behind is at worst one short change unfinished. Refusing
//! the data from then on would turn that one panic into another in every
//! later caller, down to the `Drop` that stops background work; so every
//! lock in the course goes through [`LockExt`], which takes the data as it
//! is.
//!
//! ```
//! use std::sync::Mutex;
//! use shared::sync::LockExt;
//!
//! let queue = Mutex::new(vec![1]);
//! queue.locked().push(2);
//! assert_eq!(*queue.locked(), [1, 2]);
//! ```

use std::sync::{Mutex, MutexGuard, PoisonError};

/// Poison-tolerant access to a [`Mutex`]; see the [module](self) for why
/// recovering is right here.
pub trait LockExt<T: ?Sized> {
    /// Locks the mutex, taking the data as it is if a holder panicked.
    fn locked(&self) -> MutexGuard<'_, T>;

    /// The data through an exclusive borrow (no locking needed, as with
    /// [`Mutex::get_mut`]), taking it as it is if a holder panicked.
    fn inner_mut(&mut self) -> &mut T;
}

impl<T: ?Sized> LockExt<T> for Mutex<T> {
    fn locked(&self) -> MutexGuard<'_, T> {
        self.lock().unwrap_or_else(PoisonError::into_inner)
    }

    fn inner_mut(&mut self) -> &mut T {
        self.get_mut().unwrap_or_else(PoisonError::into_inner)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::Arc;

    #[test]
    fn a_poisoned_lock_still_gives_its_data() {
        let shared = Arc::new(Mutex::new(vec![1]));
        let holder = Arc::clone(&shared);
        let panicked = std::thread::spawn(move || {
            let mut data = holder.locked();
            data.push(2);
            panic!("a holder panics after a whole push");
        })
        .join();
        assert!(panicked.is_err());
        assert!(shared.is_poisoned());
        assert_eq!(*shared.locked(), [1, 2]);
        let mut owned = Arc::try_unwrap(shared).expect("the holder is gone");
        owned.inner_mut().push(3);
        assert_eq!(*owned.locked(), [1, 2, 3]);
    }
}
