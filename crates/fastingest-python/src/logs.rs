//! The core's log records (retries, slow requests) as Python `logging`
//! records under the `fastingest` logger: target `fastingest::retry` becomes
//! logger `fastingest.retry`.
//!
//! Records come from runtime threads that must never wait for the GIL (a
//! Python thread holding it may be waiting for them), so they are queued and
//! a forwarder thread hands them to Python. The queue is bounded: when
//! Python cannot keep up, records are dropped rather than reads slowed.

use std::sync::mpsc::{sync_channel, Receiver, SyncSender};
use std::sync::Mutex;

use pyo3::prelude::*;

/// Records waiting for the forwarder at most.
const QUEUE: usize = 1024;

enum Message {
    Record {
        logger: String,
        level: u8,
        text: String,
    },
    /// Answered once everything queued before it was handed over.
    Flush(SyncSender<()>),
}

/// The forwarder's queue, made by the process that uses it (a forked child
/// starts its own thread: threads do not survive `fork`).
static QUEUE_OF_PROCESS: Mutex<Option<(u32, SyncSender<Message>)>> = Mutex::new(None);

fn sender() -> SyncSender<Message> {
    let mut slot = QUEUE_OF_PROCESS.lock().unwrap_or_else(|e| e.into_inner());
    let pid = std::process::id();
    if let Some((owner, tx)) = slot.as_ref() {
        if *owner == pid {
            return tx.clone();
        }
    }
    let (tx, rx) = sync_channel(QUEUE);
    std::thread::Builder::new()
        .name("fastingest-log".into())
        .spawn(move || forward(rx))
        .ok();
    *slot = Some((pid, tx.clone()));
    tx
}

fn forward(rx: Receiver<Message>) {
    for message in rx {
        match message {
            Message::Record {
                logger,
                level,
                text,
            } => {
                // Gone at interpreter shutdown: nothing to log to.
                let _ = Python::try_attach(|py| -> PyResult<()> {
                    // `fastingest._log` imports and sets up `logging`
                    // the first time (not at `import fastingest`).
                    py.import("fastingest._log")?
                        .call_method1("emit", (logger, level, text))?;
                    Ok(())
                });
            }
            Message::Flush(done) => {
                let _ = done.send(());
            }
        }
    }
}

/// Python's level numbers.
fn python_level(level: log::Level) -> u8 {
    match level {
        log::Level::Error => 40,
        log::Level::Warn => 30,
        log::Level::Info => 20,
        log::Level::Debug | log::Level::Trace => 10,
    }
}

struct ToPythonLogging;

impl log::Log for ToPythonLogging {
    fn enabled(&self, metadata: &log::Metadata) -> bool {
        metadata.target().starts_with("fastingest")
    }

    fn log(&self, record: &log::Record) {
        if !self.enabled(record.metadata()) {
            return;
        }
        let message = Message::Record {
            logger: record.target().replace("::", "."),
            level: python_level(record.level()),
            text: record.args().to_string(),
        };
        // A full queue drops the record: logging never slows a read.
        let _ = sender().try_send(message);
    }

    fn flush(&self) {}
}

/// Routes the core's records to Python `logging` (once per process; a
/// program that set its own Rust logger keeps it).
pub fn install() {
    if log::set_boxed_logger(Box::new(ToPythonLogging)).is_ok() {
        log::set_max_level(log::LevelFilter::Info);
    }
}

/// Waits until every record logged so far has reached Python `logging`
/// (tests, and programs about to exit).
#[pyfunction]
pub fn _flush_logs(py: Python<'_>) {
    // Nothing logged in this process yet: nothing to wait for.
    let queue = {
        let slot = QUEUE_OF_PROCESS.lock().unwrap_or_else(|e| e.into_inner());
        match slot.as_ref() {
            Some((owner, tx)) if *owner == std::process::id() => tx.clone(),
            _ => return,
        }
    };
    // Without the GIL: the forwarder needs it to empty the queue.
    py.detach(|| {
        let (tx, rx) = sync_channel(1);
        if queue.send(Message::Flush(tx)).is_ok() {
            let _ = rx.recv_timeout(std::time::Duration::from_secs(10));
        }
    });
}
