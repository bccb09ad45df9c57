//! Devices and the per-thread stream that operations run on.
//!
//! Every operation of this crate runs on the calling thread's *current stream*: MLX's default
//! stream for the default device (the GPU where the backend has one, else the CPU), or the
//! device chosen with [`with_device`] for the duration of a closure.

use crate::status::{check, init};
use crate::{Error, Result};
use mlx_ffi as ffi;
use std::cell::RefCell;
use std::marker::PhantomData;
use std::panic::Location;

/// A compute device.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Device {
    Cpu,
    Gpu,
}

impl Device {
    /// MLX's default device: the GPU when this MLX build has one, else the CPU.
    pub fn default_device() -> Result<Device> {
        init();
        // SAFETY: an empty device handle, filled by mlx-c and freed below.
        let mut dev = unsafe { ffi::mlx_device_new() };
        let result = check("get_default_device", || unsafe { ffi::mlx_get_default_device(&mut dev) })
            .and_then(|()| device_type(dev));
        unsafe { ffi::mlx_device_free(dev) };
        result
    }

    /// Whether this MLX build can run on this device.
    pub fn is_available(self) -> bool {
        let dev = self.new_raw();
        let mut available = false;
        let ok = check("device_is_available", || unsafe { ffi::mlx_device_is_available(&mut available, dev) });
        unsafe { ffi::mlx_device_free(dev) };
        ok.is_ok() && available
    }

    fn new_raw(self) -> ffi::mlx_device {
        init();
        let kind = match self {
            Device::Cpu => ffi::MLX_CPU,
            Device::Gpu => ffi::MLX_GPU,
        };
        // SAFETY: a new handle owned by the caller.
        unsafe { ffi::mlx_device_new_type(kind, 0) }
    }
}

fn device_type(dev: ffi::mlx_device) -> Result<Device> {
    let mut kind = ffi::MLX_CPU;
    check("device_get_type", || unsafe { ffi::mlx_device_get_type(&mut kind, dev) })?;
    Ok(if kind == ffi::MLX_GPU { Device::Gpu } else { Device::Cpu })
}

/// An MLX stream: a queue of work on one device, owned by the thread that made it.
#[derive(Debug)]
pub struct Stream {
    raw: ffi::mlx_stream,
    device: Device,
    /// Streams belong to their thread (MLX's default streams are per thread).
    _thread_bound: PhantomData<*const ()>,
}

impl Stream {
    /// This thread's default stream on `device`.
    #[track_caller]
    pub fn default_for(device: Device) -> Result<Stream> {
        let dev = device.new_raw();
        // SAFETY: an empty stream handle, filled by mlx-c; owned by the returned `Stream`.
        let mut raw = unsafe { ffi::mlx_stream_new() };
        let result = check("get_default_stream", || unsafe { ffi::mlx_get_default_stream(&mut raw, dev) });
        unsafe { ffi::mlx_device_free(dev) };
        let stream = Stream { raw, device, _thread_bound: PhantomData };
        result.map(|()| stream)
    }

    /// The device this stream runs on.
    pub fn device(&self) -> Device {
        self.device
    }

    /// Blocks until all work queued on this stream has finished.
    pub fn synchronize(&self) -> Result<()> {
        check("synchronize", || unsafe { ffi::mlx_synchronize(self.raw) })
    }
}

impl Drop for Stream {
    fn drop(&mut self) {
        // SAFETY: the handle is owned and freed once.
        unsafe { ffi::mlx_stream_free(self.raw) };
    }
}

thread_local! {
    static CURRENT: RefCell<Option<Stream>> = const { RefCell::new(None) };
}

/// This thread's current stream, created on first use. The handle stays valid until the
/// thread's current stream is replaced, which no operation does while it runs.
#[track_caller]
pub(crate) fn current_stream() -> Result<ffi::mlx_stream> {
    let location = Location::caller();
    CURRENT.with(|current| {
        let mut current = current.try_borrow_mut().map_err(|_| Error::Mlx {
            op: "current_stream",
            message: "stream slot busy".to_owned(),
            location,
        })?;
        match current.as_ref() {
            Some(stream) => Ok(stream.raw),
            None => {
                let stream = Stream::default_for(Device::default_device()?)?;
                let raw = stream.raw;
                *current = Some(stream);
                Ok(raw)
            }
        }
    })
}

/// Runs `f` with operations on this thread placed on `device`, then restores the previous
/// stream. Arrays made inside stay valid afterwards.
pub fn with_device<R>(device: Device, f: impl FnOnce() -> R) -> Result<R> {
    struct Restore(Option<Stream>);
    impl Drop for Restore {
        fn drop(&mut self) {
            let previous = self.0.take();
            let _ = CURRENT.try_with(|current| current.replace(previous));
        }
    }
    let stream = Stream::default_for(device)?;
    let _restore = Restore(CURRENT.with(|current| current.replace(Some(stream))));
    Ok(f())
}
