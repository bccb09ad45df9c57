//! [`Deadline`]: a function run on a helper thread that the caller stops waiting for after a
//! time bound.
//!
//! A thread cannot be stopped from outside, so a call past its bound is abandoned, not
//! cancelled: the caller gets [`Waited::TimedOut`] at once and its next call starts a fresh
//! helper thread, while the abandoned one finishes its call in the background, finds nobody
//! waiting, drops its result and ends. What an abandoned call holds stays bounded by what one
//! call may allocate (for a decode, the job's [`Limits`](preprocess::Limits)); a call that never
//! ended would keep one thread and its memory until the process exits, and would not stop the
//! job or its other threads.

use crate::failure::panic_message;
use std::panic::{AssertUnwindSafe, catch_unwind};
use std::sync::Arc;
use std::sync::mpsc::{self, RecvTimeoutError};
use std::time::Duration;

/// How a call ended, as seen by the caller.
#[derive(Debug, PartialEq, Eq)]
pub(crate) enum Waited<O> {
    /// The function returned within the bound.
    Done(O),
    /// The function panicked (caught on the helper thread): the panic's message.
    Panicked(String),
    /// The bound passed first; the call goes on, abandoned, on its thread.
    TimedOut,
}

/// Runs `work` on one helper thread at a time, each call bounded in time.
pub(crate) struct Deadline<I, O, F> {
    work: Arc<F>,
    helper: Option<Helper<I, O>>,
}

/// A helper thread's two ends: inputs in, results (or panic messages) out.
struct Helper<I, O> {
    inputs: mpsc::Sender<I>,
    results: mpsc::Receiver<Result<O, String>>,
}

impl<I, O, F> Deadline<I, O, F>
where
    I: Send + 'static,
    O: Send + 'static,
    F: Fn(I) -> O + Send + Sync + 'static,
{
    pub fn new(work: F) -> Self {
        Deadline { work: Arc::new(work), helper: None }
    }

    /// `work(input)`, waited for at most `limit`. When no helper thread can be started (the
    /// system refuses one), the call runs on the calling thread, unbounded, its panics caught.
    pub fn call(&mut self, input: I, limit: Duration) -> Waited<O> {
        let input = match self.helper() {
            Some(helper) => match helper.inputs.send(input) {
                Ok(()) => return self.wait(limit),
                // The helper is gone (it cannot be, short of an abort): run here instead.
                Err(mpsc::SendError(input)) => input,
            },
            None => input,
        };
        self.helper = None;
        match catch_unwind(AssertUnwindSafe(|| (self.work)(input))) {
            Ok(output) => Waited::Done(output),
            Err(panic) => Waited::Panicked(panic_message(panic.as_ref())),
        }
    }

    fn wait(&mut self, limit: Duration) -> Waited<O> {
        let Some(helper) = &self.helper else { return Waited::TimedOut };
        match helper.results.recv_timeout(limit) {
            Ok(Ok(output)) => Waited::Done(output),
            Ok(Err(message)) => Waited::Panicked(message),
            Err(RecvTimeoutError::Timeout) => {
                // Dropping the ends abandons the call: the helper's send fails and it ends.
                self.helper = None;
                Waited::TimedOut
            }
            Err(RecvTimeoutError::Disconnected) => {
                self.helper = None;
                Waited::Panicked("the helper thread ended without a result".to_owned())
            }
        }
    }

    /// The current helper, started if there is none; `None` when no thread can be started.
    fn helper(&mut self) -> Option<&Helper<I, O>> {
        if self.helper.is_none() {
            let (inputs, requests) = mpsc::channel::<I>();
            let (answers, results) = mpsc::channel();
            let work = Arc::clone(&self.work);
            let spawned = std::thread::Builder::new().name("embed-decode".to_owned()).spawn(move || {
                for input in requests {
                    let result =
                        catch_unwind(AssertUnwindSafe(|| work(input))).map_err(|panic| panic_message(panic.as_ref()));
                    if answers.send(result).is_err() {
                        break; // abandoned after a timeout
                    }
                }
            });
            if spawned.is_ok() {
                self.helper = Some(Helper { inputs, results });
            }
        }
        self.helper.as_ref()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Instant;

    #[test]
    fn a_call_within_its_bound_returns_its_result() {
        let mut deadline = Deadline::new(|n: u32| n * 2);
        assert_eq!(deadline.call(21, Duration::from_secs(10)), Waited::Done(42));
        assert_eq!(deadline.call(4, Duration::from_secs(10)), Waited::Done(8));
    }

    #[test]
    fn a_call_past_its_bound_is_abandoned_and_the_next_one_runs_on_a_fresh_thread() {
        let mut deadline = Deadline::new(|ms: u64| {
            std::thread::sleep(Duration::from_millis(ms));
            ms
        });
        let started = Instant::now();
        assert_eq!(deadline.call(10_000, Duration::from_millis(50)), Waited::TimedOut);
        assert!(started.elapsed() < Duration::from_secs(5));
        assert_eq!(deadline.call(1, Duration::from_secs(10)), Waited::Done(1));
    }

    #[test]
    fn a_panic_is_returned_as_its_message_and_the_helper_goes_on() {
        let mut deadline = Deadline::new(|n: u32| {
            assert!(n != 0, "zero is refused");
            n
        });
        assert_eq!(deadline.call(0, Duration::from_secs(10)), Waited::Panicked("zero is refused".to_owned()));
        assert_eq!(deadline.call(3, Duration::from_secs(10)), Waited::Done(3));
    }
}
