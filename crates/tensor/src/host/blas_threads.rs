//! Single-threaded BLAS calls for host kernels that spread their own work over the cores.

use std::sync::Mutex;

/// How many [`SingleThreadedBlas`] guards are alive in the process.
static ACTIVE: Mutex<usize> = Mutex::new(0);

/// While at least one guard is alive, every BLAS call in the process (ours and MLX's) runs on
/// the calling thread only; when the last one drops, the BLAS gets back one thread per core.
///
/// Kernels that run many small products in parallel from their own threads use it: a
/// multi-threaded BLAS called from each of them would put two BLAS threads on every core, and
/// their barriers spin. Results never depend on the BLAS thread count (it splits output rows
/// and columns, never the reduction); only the speed of concurrent MLX matmuls does.
pub(crate) struct SingleThreadedBlas(());

impl SingleThreadedBlas {
    pub(crate) fn enter() -> SingleThreadedBlas {
        crate::runtime::init();
        let mut active = ACTIVE.lock().unwrap_or_else(|poisoned| poisoned.into_inner());
        if *active == 0 {
            mlx_ffi::blas::configure(1);
        }
        *active += 1;
        SingleThreadedBlas(())
    }
}

impl Drop for SingleThreadedBlas {
    fn drop(&mut self) {
        let mut active = ACTIVE.lock().unwrap_or_else(|poisoned| poisoned.into_inner());
        *active -= 1;
        if *active == 0 {
            mlx_ffi::blas::configure(crate::runtime::blas_threads());
        }
    }
}
