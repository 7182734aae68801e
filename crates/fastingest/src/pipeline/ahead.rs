//! The bytes a read may hold ahead of its decoding or its consumer: work
//! (a window of units, one unit) takes its bytes from the budget before its
//! fetch starts and gives them back when it is decoded or handed over.
//! Whole reads of local files, streams and the loaders' unit streams share
//! this one bound.

use std::sync::Arc;

use tokio::sync::{OwnedSemaphorePermit, Semaphore};

use crate::error::Result;
use crate::request::closed;

/// A budget of bytes, counted in KiB (so that any budget fits the
/// semaphore's permit count).
#[derive(Debug, Clone)]
pub(crate) struct AheadBudget {
    kib: Arc<Semaphore>,
    /// The whole budget, in KiB.
    most: u32,
}

impl AheadBudget {
    /// A budget of `bytes` (at least 1 KiB).
    pub(crate) fn new(bytes: u64) -> Self {
        let most = (bytes / 1024).clamp(1, u32::MAX as u64 >> 4) as u32;
        AheadBudget {
            kib: Arc::new(Semaphore::new(most as usize)),
            most,
        }
    }

    /// Waits until `bytes` fit in what is not taken, and takes them until
    /// the permit is dropped. More bytes than the whole budget wait for all
    /// of it (such work runs alone rather than never).
    pub(crate) async fn take(&self, bytes: u64) -> Result<OwnedSemaphorePermit> {
        let kib = bytes.div_ceil(1024).clamp(1, self.most as u64) as u32;
        Arc::clone(&self.kib)
            .acquire_many_owned(kib)
            .await
            .map_err(closed)
    }
}

#[cfg(test)]
mod tests {
    use super::AheadBudget;

    #[tokio::test]
    async fn work_waits_for_room_and_work_larger_than_the_budget_runs_alone() {
        let budget = AheadBudget::new(10 * 1024);
        let first = budget.take(6 * 1024).await.unwrap();
        // 6 KiB taken: 5 more do not fit until the first is given back.
        let second = budget.take(5 * 1024);
        tokio::pin!(second);
        assert!(futures::poll!(second.as_mut()).is_pending());
        drop(first);
        let second = second.await.unwrap();
        drop(second);
        // More than the whole budget takes all of it.
        let all = budget.take(1 << 30).await.unwrap();
        assert_eq!(all.num_permits(), 10);
        assert!(futures::poll!(Box::pin(budget.take(1))).is_pending());
    }
}
