//! Reading safetensors files by memory map, straight into MLX arrays.

use crate::runtime::array_ctor;
use crate::{Array, Dtype, Error, Result};
use memmap2::{MmapMut, MmapOptions};
use std::collections::BTreeMap;
use std::ffi::c_void;
use std::fs::File;
use std::ops::Range;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};

/// Name, dtype and shape of one tensor in a safetensors file.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TensorInfo {
    /// The dtype, or the file's dtype name when MLX has no such type (e.g. `"F8_E4M3"`).
    pub dtype: std::result::Result<Dtype, String>,
    pub shape: Vec<i32>,
}

#[derive(Debug)]
struct Entry {
    info: TensorInfo,
    bytes: Range<usize>,
}

/// An open safetensors file: its header parsed and validated, its data memory-mapped.
///
/// Tensors load without copying: each [`Array`] points into the mapping and keeps it alive.
/// Only the pages of tensors actually used are ever read from disk. The mapping is private
/// and copy-on-write: MLX may reuse ("donate") the buffer of an array it holds the only
/// reference to, which then writes to private pages, never to the file. Loading a name twice
/// returns the same array, so two arrays never alias one buffer.
#[derive(Debug)]
pub struct SafetensorsFile {
    path: PathBuf,
    map: Arc<MmapMut>,
    entries: BTreeMap<String, Entry>,
    loaded: Mutex<BTreeMap<String, Array>>,
}

impl SafetensorsFile {
    /// Opens and validates `path` (header, offsets, and that the data fills the file exactly).
    pub fn open(path: impl AsRef<Path>) -> Result<SafetensorsFile> {
        let path = path.as_ref().to_path_buf();
        let file = File::open(&path).map_err(|e| Error::io(&path, e))?;
        let len = file.metadata().map_err(|e| Error::io(&path, e))?.len();
        if len < 8 {
            return Err(Error::format(&path, format!("{len} bytes is too short for a safetensors header")));
        }
        // SAFETY: a private mapping; the file must not be truncated while mapped (as with any
        // reader of memory-mapped weights).
        let map = unsafe { MmapOptions::new().map_copy(&file) }.map_err(|e| Error::io(&path, e))?;
        let (header_len, metadata) = safetensors::SafeTensors::read_metadata(&map)
            .map_err(|e| Error::format(&path, format!("invalid safetensors: {e}")))?;
        let data_start = 8 + header_len;
        let entries = metadata
            .tensors()
            .into_iter()
            .map(|(name, info)| {
                let shape = info
                    .shape
                    .iter()
                    .map(|&d| i32::try_from(d))
                    .collect::<std::result::Result<Vec<i32>, _>>()
                    .map_err(|_| Error::format(&path, format!("tensor `{name}`: shape {:?} too large", info.shape)))?;
                let (start, end) = info.data_offsets;
                let entry = Entry {
                    info: TensorInfo { dtype: dtype_of(info.dtype), shape },
                    bytes: data_start + start..data_start + end,
                };
                Ok((name, entry))
            })
            .collect::<Result<BTreeMap<_, _>>>()?;
        Ok(SafetensorsFile { path, map: Arc::new(map), entries, loaded: Mutex::new(BTreeMap::new()) })
    }

    /// The file's path.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// Tensor names, sorted.
    pub fn names(&self) -> impl Iterator<Item = &str> {
        self.entries.keys().map(String::as_str)
    }

    /// Dtype and shape of `name`, if present.
    pub fn info(&self, name: &str) -> Option<&TensorInfo> {
        self.entries.get(name).map(|e| &e.info)
    }

    /// Loads `name` as an array backed by the mapping.
    pub fn load(&self, name: &str) -> Result<Array> {
        let mut loaded = self.loaded.lock().unwrap_or_else(|poisoned| poisoned.into_inner());
        if let Some(array) = loaded.get(name) {
            return Ok(array.clone());
        }
        let array = self.map_tensor(name)?;
        loaded.insert(name.to_owned(), array.clone());
        Ok(array)
    }

    fn map_tensor(&self, name: &str) -> Result<Array> {
        let entry =
            self.entries.get(name).ok_or_else(|| Error::format(&self.path, format!("no tensor named `{name}`")))?;
        let dtype = entry.info.dtype.clone().map_err(|found| {
            Error::format(&self.path, format!("tensor `{name}` has dtype {found}, which MLX does not support"))
        })?;
        let bytes = &self.map[entry.bytes.clone()];
        let shape = &entry.info.shape;
        if bytes.is_empty() || (bytes.as_ptr() as usize) % dtype.size() != 0 {
            // Empty or misaligned data: copy instead of mapping.
            return array_ctor("load_safetensors", || unsafe {
                mlx_ffi::mlx_array_new_data(bytes.as_ptr().cast(), shape.as_ptr(), shape.len() as i32, dtype.to_raw())
            });
        }
        let keep_alive = Box::into_raw(Box::new(Arc::clone(&self.map))).cast::<c_void>();
        array_ctor("load_safetensors", || unsafe {
            mlx_ffi::mlx_array_new_data_managed_payload(
                bytes.as_ptr().cast_mut().cast(),
                shape.as_ptr(),
                shape.len() as i32,
                dtype.to_raw(),
                keep_alive,
                Some(release_mapping),
            )
        })
    }
}

/// Destructor MLX calls (from any thread) when the last array using a mapping is freed.
unsafe extern "C" fn release_mapping(payload: *mut c_void) {
    // SAFETY: `payload` is the `Box<Arc<MmapMut>>` leaked in `load`, released exactly once.
    drop(unsafe { Box::from_raw(payload.cast::<Arc<MmapMut>>()) });
}

fn dtype_of(dtype: safetensors::Dtype) -> std::result::Result<Dtype, String> {
    use safetensors::Dtype as S;
    Ok(match dtype {
        S::BOOL => Dtype::Bool,
        S::U8 => Dtype::U8,
        S::I8 => Dtype::I8,
        S::U16 => Dtype::U16,
        S::I16 => Dtype::I16,
        S::U32 => Dtype::U32,
        S::I32 => Dtype::I32,
        S::U64 => Dtype::U64,
        S::I64 => Dtype::I64,
        S::F16 => Dtype::F16,
        S::BF16 => Dtype::Bf16,
        S::F32 => Dtype::F32,
        S::F64 => Dtype::F64,
        other => return Err(format!("{other:?}")),
    })
}

/// Loads every tensor of a safetensors file.
pub fn load_safetensors(path: impl AsRef<Path>) -> Result<BTreeMap<String, Array>> {
    let file = SafetensorsFile::open(path)?;
    file.names().map(|name| Ok((name.to_owned(), file.load(name)?))).collect()
}

/// Loads every tensor of a safetensors file with MLX's own loader, which reads each tensor
/// into a fresh buffer when it is first evaluated. Kept to compare against the memory-mapped
/// [`SafetensorsFile`] (see `benches/load.rs`); the mapped loader is the faster one here.
pub fn load_safetensors_copying(path: impl AsRef<Path>) -> Result<BTreeMap<String, Array>> {
    use crate::runtime::check;
    use mlx_ffi as ffi;
    let path = path.as_ref();
    let c_path = std::ffi::CString::new(path.to_string_lossy().as_bytes())
        .map_err(|_| Error::format(path, "path contains a NUL byte"))?;
    let stream = crate::device::current_stream()?;
    // SAFETY: map handles created here and freed below on every path.
    let mut arrays = unsafe { ffi::mlx_map_string_to_array_new() };
    let mut metadata = unsafe { ffi::mlx_map_string_to_string_new() };
    let loaded = check("load_safetensors", || unsafe {
        ffi::mlx_load_safetensors(&mut arrays, &mut metadata, c_path.as_ptr(), stream)
    });
    let result = loaded.and_then(|()| {
        let mut out = BTreeMap::new();
        let iter = unsafe { ffi::mlx_map_string_to_array_iterator_new(arrays) };
        loop {
            let mut key: *const std::ffi::c_char = std::ptr::null();
            // SAFETY: an empty handle the iterator fills; `Array` owns it.
            let mut value = unsafe { Array::from_raw(ffi::mlx_array_new()) };
            let status = unsafe { ffi::mlx_map_string_to_array_iterator_next(&mut key, value.as_mut_raw(), iter) };
            if status != 0 || key.is_null() {
                break;
            }
            let name = unsafe { std::ffi::CStr::from_ptr(key) }.to_string_lossy().into_owned();
            out.insert(name, value);
        }
        unsafe { ffi::mlx_map_string_to_array_iterator_free(iter) };
        Ok(out)
    });
    unsafe {
        ffi::mlx_map_string_to_array_free(arrays);
        ffi::mlx_map_string_to_string_free(metadata);
    }
    result
}
