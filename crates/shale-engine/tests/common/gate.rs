//! Gates a `FaultFs` hook waits at, to hold a background job at a chosen file: `Gate` holds
//! the first thread that passes once armed, `Latch` holds every thread until opened.

use std::sync::{Arc, Condvar, Mutex};
use std::time::Duration;

use shale_fs::{FaultFs, FsCall, MemFs};

/// How long a test waits for a held thread to arrive before it fails.
const ARRIVAL_TIMEOUT: Duration = Duration::from_secs(20);

#[derive(Debug, Default, Clone, Copy, PartialEq, Eq)]
enum State {
    #[default]
    Open,
    Armed,
    Holding,
}

/// Open, it lets every thread through; armed, it holds the first thread that passes until
/// released (and lets later ones through while it holds that one).
#[derive(Debug, Default)]
pub struct Gate {
    state: Mutex<State>,
    changed: Condvar,
}

impl Gate {
    pub fn arm(&self) {
        self.set(State::Armed);
    }

    /// Opens the gate, letting the held thread (if any) go on.
    pub fn release(&self) {
        self.set(State::Open);
    }

    fn set(&self, state: State) {
        *self.state.lock().unwrap() = state;
        self.changed.notify_all();
    }

    /// Holds the calling thread if the gate is armed, until released.
    pub fn pass(&self) {
        let mut state = self.state.lock().unwrap();
        if *state == State::Armed {
            *state = State::Holding;
            self.changed.notify_all();
            drop(
                self.changed
                    .wait_while(state, |s| *s == State::Holding)
                    .unwrap(),
            );
        }
    }

    /// Waits until a thread is held; fails the test after `ARRIVAL_TIMEOUT`.
    pub fn wait_until_held(&self) {
        let state = self.state.lock().unwrap();
        let (state, timeout) = self
            .changed
            .wait_timeout_while(state, ARRIVAL_TIMEOUT, |s| *s != State::Holding)
            .unwrap();
        assert!(
            !timeout.timed_out(),
            "no thread reached the gate ({:?})",
            *state
        );
    }
}

/// Closed until opened, once: holds every thread that passes meanwhile.
#[derive(Debug, Default)]
pub struct Latch {
    open: Mutex<bool>,
    opened: Condvar,
}

impl Latch {
    pub fn open(&self) {
        *self.open.lock().unwrap() = true;
        self.opened.notify_all();
    }

    /// Holds the calling thread while the latch is closed.
    pub fn pass(&self) {
        drop(
            self.opened
                .wait_while(self.open.lock().unwrap(), |open| !*open)
                .unwrap(),
        );
    }
}

/// A `MemFs` whose calls that `holds` picks wait at a `Gate`: the thread named `thread`
/// (`shale-compact`, `shale-flush`) as it opens or creates a table, say.
pub fn gated_mem_fs(
    holds: impl Fn(&FsCall<'_>) -> bool + Send + Sync + 'static,
) -> (FaultFs, Arc<Gate>) {
    let fs = FaultFs::new(Arc::new(MemFs::new()));
    let gate = Arc::new(Gate::default());
    let at_gate = gate.clone();
    fs.set_hook(move |call| {
        if holds(call) {
            at_gate.pass();
        }
        Ok(())
    });
    (fs, gate)
}

/// Whether the calling thread is the one named `name`.
pub fn on_thread(name: &str) -> bool {
    std::thread::current().name() == Some(name)
}

/// `inner` with the calls that `holds` picks waiting at a `Latch`, closed: every table
/// creation until the test opens it, say.
pub fn latched_fs(
    inner: MemFs,
    holds: impl Fn(&FsCall<'_>) -> bool + Send + Sync + 'static,
) -> (FaultFs, Arc<Latch>) {
    let fs = FaultFs::new(Arc::new(inner));
    let latch = Arc::new(Latch::default());
    let at_latch = latch.clone();
    fs.set_hook(move |call| {
        if holds(call) {
            at_latch.pass();
        }
        Ok(())
    });
    (fs, latch)
}
