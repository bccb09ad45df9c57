//! Devices and the per-thread stream that operations run on.
//!
//! Every operation of this crate runs on the calling thread's *current stream*: MLX's default
//! stream for the default device (the GPU where the backend has one, else the CPU), or the
//! device chosen with [`with_device`] for the duration of a closure.

use crate::status::{api, check, init};
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
        init()?;
        // SAFETY: `mlx_device_new` has no preconditions; it returns an empty handle, which the
        // guard owns (and frees) from here on.
        let mut dev = DeviceHandle(unsafe { api().mlx_device_new() });
        // SAFETY: `dev.0` is a valid handle, exclusively borrowed, that the call sets to the
        // default device (allocating it if empty); the guard still owns it afterwards.
        check("get_default_device", || unsafe { api().mlx_get_default_device(&mut dev.0) })?;
        device_type(&dev)
    }

    /// Whether this MLX build can run on this device.
    pub fn is_available(self) -> bool {
        let Ok(dev) = self.new_raw() else { return false };
        let mut available = false;
        // SAFETY: `dev.0` is the handle made above, owned (so live) until `dev` drops after the
        // call; `available` is a valid `bool` the call writes through its exclusive pointer.
        check("device_is_available", || unsafe { api().mlx_device_is_available(&mut available, dev.0) }).is_ok()
            && available
    }

    /// A new handle for this device, owned by the returned guard.
    fn new_raw(self) -> Result<DeviceHandle> {
        init()?;
        let kind = match self {
            Device::Cpu => ffi::MLX_CPU,
            Device::Gpu => ffi::MLX_GPU,
        };
        // SAFETY: no preconditions: mlx-c only wraps the value `(kind, 0)` in a new handle (null
        // should that fail), which the guard owns from here on.
        Ok(DeviceHandle(unsafe { api().mlx_device_new_type(kind, 0) }))
    }
}

/// An owned `mlx_device` handle, freed on drop: the one place device handles are freed.
struct DeviceHandle(ffi::mlx_device);

impl Drop for DeviceHandle {
    fn drop(&mut self) {
        // SAFETY: the handle came from an `mlx_device_new*` call and belongs to this guard alone
        // (callers lend `self.0` to one call at a time, never keep it); freed once, here. Freeing
        // an empty handle is a no-op.
        unsafe { api().mlx_device_free(self.0) };
    }
}

fn device_type(dev: &DeviceHandle) -> Result<Device> {
    let mut kind = ffi::MLX_CPU;
    // SAFETY: `dev.0` is live while `dev` is borrowed; `kind` is a valid `mlx_device_type` the
    // call writes through its exclusive pointer.
    check("device_get_type", || unsafe { api().mlx_device_get_type(&mut kind, dev.0) })?;
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
        let dev = device.new_raw()?;
        // SAFETY: `mlx_stream_new` has no preconditions; it returns an empty handle, owned by the
        // `Stream` built below, whose `Drop` frees it on every path.
        let mut raw = unsafe { api().mlx_stream_new() };
        // SAFETY: `raw` is a valid handle, exclusively borrowed, that the call sets to this
        // thread's default stream of `dev.0`, which the guard keeps live for the call (the stream
        // keeps a copy of the device value, not the handle).
        let result = check("get_default_stream", || unsafe { api().mlx_get_default_stream(&mut raw, dev.0) });
        let stream = Stream { raw, device, _thread_bound: PhantomData };
        result.map(|()| stream)
    }

    /// The device this stream runs on.
    pub fn device(&self) -> Device {
        self.device
    }

    /// Blocks until all work queued on this stream has finished.
    pub fn synchronize(&self) -> Result<()> {
        // SAFETY: `self.raw` is live while `self` is borrowed, on the thread that made it
        // (`Stream` is neither `Send` nor `Sync`).
        check("synchronize", || unsafe { api().mlx_synchronize(self.raw) })
    }
}

impl Drop for Stream {
    fn drop(&mut self) {
        // SAFETY: `self.raw` is owned by this `Stream` alone and freed once, here. Arrays built on
        // the stream keep a copy of the stream's value, not this handle.
        unsafe { api().mlx_stream_free(self.raw) };
    }
}

thread_local! {
    static CURRENT: RefCell<Option<Stream>> = const { RefCell::new(None) };
}

/// This thread's current stream, created on first use. The handle is borrowed from the
/// `Stream` in this thread's slot: it stays valid until the slot is replaced ([`with_device`]),
/// so callers pass it straight to one mlx-c call and never keep it.
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
