//! A thread that runs what it is sent, for work that must run on a thread of its own:
//! one that lives in a cgroup, or carries a seccomp filter its children inherit.

use std::io;
use std::sync::mpsc;

/// A job for a [`Worker`].
pub type Job = Box<dyn FnOnce() + Send>;

/// The sending end of a worker thread; the thread ends when every clone is dropped.
#[derive(Debug, Clone)]
pub struct Worker {
    jobs: mpsc::Sender<Job>,
}

impl Worker {
    /// Starts a thread named `name` that runs `init`, then what it is sent. The worker,
    /// once `init` succeeded there; `init`'s error otherwise, and the thread ends.
    pub fn start(
        name: &str,
        init: impl FnOnce() -> io::Result<()> + Send + 'static,
    ) -> io::Result<Worker> {
        let (jobs, received) = mpsc::channel::<Job>();
        let (ready, started) = mpsc::sync_channel(1);
        std::thread::Builder::new()
            .name(name.to_owned())
            .spawn(move || {
                let init = init();
                let failed = init.is_err();
                let _ = ready.send(init);
                if failed {
                    return;
                }
                while let Ok(job) = received.recv() {
                    job();
                }
            })?;
        started
            .recv()
            .unwrap_or_else(|_| Err(io::Error::other(format!("the {name} thread is gone"))))?;
        Ok(Worker { jobs })
    }

    /// Sends `job` to run on the thread, without waiting; the job back when the thread
    /// is gone.
    pub fn send(&self, job: Job) -> Result<(), Job> {
        self.jobs.send(job).map_err(|mpsc::SendError(job)| job)
    }

    /// Runs `work` on the thread without waiting for it: its result comes through the
    /// receiver, which the caller may await with a bound and drop. A panic there is
    /// resumed where the result is taken; when the thread is gone, the result says so.
    /// `work` is told whether anyone still waits for its result once it ran:
    /// `unclaimed` gets the result nobody took.
    pub fn run_detached<T: Send + 'static>(
        &self,
        work: impl FnOnce() -> io::Result<T> + Send + 'static,
        unclaimed: impl FnOnce(T) + Send + 'static,
    ) -> Detached<T> {
        let (done, result) = tokio::sync::oneshot::channel();
        let job: Job = Box::new(move || {
            let ran = std::panic::catch_unwind(std::panic::AssertUnwindSafe(work));
            if let Err(Ok(Ok(result))) = done.send(ran) {
                unclaimed(result);
            }
        });
        // A job the thread never takes is dropped, and with it the result's sender.
        let _ = self.send(job);
        Detached { result }
    }

    /// Runs `work` on the thread and returns its result (a panic there is resumed
    /// here); on this thread when the worker's thread is gone.
    pub fn run<'a, T: Send + 'a>(
        &self,
        work: impl FnOnce() -> io::Result<T> + Send + 'a,
    ) -> io::Result<T> {
        let (done, result) = mpsc::sync_channel(1);
        let job: Box<dyn FnOnce() + Send + 'a> = Box::new(move || {
            let ran = std::panic::catch_unwind(std::panic::AssertUnwindSafe(work));
            let _ = done.send(ran);
        });
        // SAFETY: the job may borrow from the caller's frame for 'a. It is either run
        // on the worker's thread or dropped there, and this function waits for either
        // (the job's sender is gone once it ran or was dropped) before it returns.
        let job: Job = unsafe { std::mem::transmute(job) };
        if let Err(job) = self.send(job) {
            job();
        }
        match result.recv() {
            Ok(Ok(result)) => result,
            Ok(Err(panic)) => std::panic::resume_unwind(panic),
            Err(_) => Err(io::Error::other("the worker thread is gone")),
        }
    }
}

/// The result of [`Worker::run_detached`], to await.
#[derive(Debug)]
pub struct Detached<T> {
    result: tokio::sync::oneshot::Receiver<std::thread::Result<io::Result<T>>>,
}

impl<T> Detached<T> {
    /// The work's result; an error when the worker's thread was gone.
    pub async fn result(self) -> io::Result<T> {
        match self.result.await {
            Ok(Ok(result)) => result,
            Ok(Err(panic)) => std::panic::resume_unwind(panic),
            Err(_) => Err(io::Error::other("the worker thread is gone")),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn runs_on_its_own_thread_with_borrowed_data_and_reports_init_failures() {
        let worker = Worker::start("test worker", || Ok(())).unwrap();
        let here = std::thread::current().id();
        let borrowed = String::from("borrowed");
        let (sum, there) = worker
            .run(|| Ok((borrowed.len(), std::thread::current().id())))
            .unwrap();
        assert_eq!(sum, 8);
        assert_ne!(there, here);
        assert_eq!(
            worker
                .run(|| -> io::Result<()> { Err(io::Error::other("no")) })
                .unwrap_err()
                .to_string(),
            "no"
        );
        let failed =
            Worker::start("failing worker", || Err(io::Error::other("cannot"))).unwrap_err();
        assert_eq!(failed.to_string(), "cannot");
    }
}
