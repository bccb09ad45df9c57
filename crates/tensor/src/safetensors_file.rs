//! Reading safetensors files by memory map, straight into MLX arrays.

use crate::status::api;
use crate::{Array, Dtype, Error, Result, SharedArray};
use memmap2::{MmapOptions, MmapRaw};
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
    /// The file's private, copy-on-write mapping. Held raw (`MmapRaw` hands out pointers, never
    /// references) because MLX may write to it through the pointers `map_tensor` hands over;
    /// Rust reads it only through [`SafetensorsFile::data`].
    map: Arc<MmapRaw>,
    entries: BTreeMap<String, Entry>,
    /// Every array made over the mapping, kept while the file is open: MLX then never holds the
    /// sole reference to one, so never writes to the mapping while Rust reads it. Settled
    /// ([`SharedArray`]), as the threads sharing the file each get a handle to the same node.
    loaded: Mutex<BTreeMap<String, SharedArray>>,
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
        // SAFETY: a private, copy-on-write mapping of a file opened read-only: nothing this
        // process writes to it reaches the file. What no mapping can rule out is another process
        // truncating or rewriting the file while it is mapped (reads then see the new bytes or
        // fault); like every reader of memory-mapped weights, this one assumes it does not.
        let map = unsafe { MmapOptions::new().map_copy(&file) }.map_err(|e| Error::io(&path, e))?;
        let mut opened = SafetensorsFile {
            path,
            map: Arc::new(MmapRaw::from(map)),
            entries: BTreeMap::new(),
            loaded: Mutex::new(BTreeMap::new()),
        };
        opened.entries = parse_safetensors_header(opened.data(), &opened.path)?
            .into_iter()
            .map(|(name, (info, bytes))| (name, Entry { info, bytes }))
            .collect();
        Ok(opened)
    }

    /// The whole mapping, for Rust to read.
    fn data(&self) -> &[u8] {
        // SAFETY: `as_ptr` and `len` are the mapping's own start and length (the pair memmap2's
        // `Mmap` turns into its slice), mapped for as long as `self.map` lives, so for the borrow
        // of `self`. Nothing writes to those bytes while the slice lives: the mapping is private
        // to this process, and MLX writes to an array's buffer only to donate it, which needs the
        // sole reference to it; every array over this mapping is made by `map_tensor` and kept in
        // `loaded` while `self` lives, so MLX holds no such reference. (Another process rewriting
        // the file is the caveat of `open`.)
        unsafe { std::slice::from_raw_parts(self.map.as_ptr(), self.map.len()) }
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

    /// Loads `name` as an array backed by the mapping (settled: see [`SharedArray`]).
    pub fn load(&self, name: &str) -> Result<Array> {
        let mut loaded = self.loaded.lock().unwrap_or_else(|poisoned| poisoned.into_inner());
        if let Some(array) = loaded.get(name) {
            return Ok(Array::clone(array));
        }
        let array = SharedArray::new(self.map_tensor(name)?)?;
        let out = Array::clone(&array);
        loaded.insert(name.to_owned(), array);
        Ok(out)
    }

    fn map_tensor(&self, name: &str) -> Result<Array> {
        let entry =
            self.entries.get(name).ok_or_else(|| Error::format(&self.path, format!("no tensor named `{name}`")))?;
        let dtype = entry.info.dtype.clone().map_err(|found| {
            Error::format(&self.path, format!("tensor `{name}` has dtype {found}, which MLX does not support"))
        })?;
        let bytes = &self.data()[entry.bytes.clone()];
        let shape = &entry.info.shape;
        // The header parser checked both already; MLX is handed the bytes on the strength of them.
        let fills = crate::array::element_count(shape).and_then(|n| n.checked_mul(dtype.size()));
        let ndim = i32::try_from(shape.len()).ok().filter(|_| fills == Some(bytes.len())).ok_or_else(|| {
            Error::format(&self.path, format!("tensor `{name}`: {} data bytes for {dtype} {shape:?}", bytes.len()))
        })?;
        if bytes.is_empty() || !(bytes.as_ptr() as usize).is_multiple_of(dtype.size()) {
            // Empty or misaligned data: copy instead of mapping, through a buffer aligned for any
            // dtype, since MLX reads the source as typed elements.
            let mut aligned = vec![0u64; bytes.len().div_ceil(size_of::<u64>())];
            bytemuck::cast_slice_mut::<u64, u8>(&mut aligned)[..bytes.len()].copy_from_slice(bytes);
            // SAFETY: `aligned` is borrowed for the call, 8-byte aligned (enough for every dtype)
            // and holds at least `bytes.len()` bytes, the element count of `shape` times the
            // dtype's size (checked above), so mlx-c reads only initialised bytes of it; it copies
            // them into a buffer of its own before returning. `shape` is passed as its own pointer
            // and length (`ndim`).
            return Array::from_ctor("load_safetensors", || unsafe {
                api().mlx_array_new_data(aligned.as_ptr().cast(), shape.as_ptr(), ndim, dtype.to_raw())
            });
        }
        // The same bytes as `bytes`, through a pointer that may write (it does not come from a
        // slice): MLX may donate the buffer once it holds the sole reference to the array.
        let data = self.map.as_mut_ptr().wrapping_add(entry.bytes.start).cast::<c_void>();
        let keep_alive = Box::into_raw(Box::new(Arc::clone(&self.map))).cast::<c_void>();
        // SAFETY: `data` addresses `bytes`, which lies in the mapping, is aligned for `dtype`
        // (checked above) and is exactly the element count of `shape` times the dtype's size
        // (checked above), so MLX's typed reads stay inside it; `shape` is passed as its own
        // pointer and length (`ndim`). The mapping stays mapped while any `Arc` to it lives:
        // `keep_alive` is one, handed to mlx-c with `release_mapping`, which it calls once when
        // the last array using the buffer is freed (should mlx-c refuse the buffer, the `Arc`
        // leaks and the mapping stays). The mapping is private and writable, and `data` carries
        // write permission (from `MmapRaw::as_mut_ptr`), so MLX may write to it (donating the
        // buffer of an array it holds the only reference to), changing only this process's
        // pages; not while this file is open, though (`loaded`), which is when Rust reads them.
        Array::from_ctor("load_safetensors", || unsafe {
            api().mlx_array_new_data_managed_payload(
                data,
                shape.as_ptr(),
                ndim,
                dtype.to_raw(),
                keep_alive,
                Some(release_mapping),
            )
        })
    }
}

/// Parses and validates the header of a whole safetensors file held in `bytes`: the 8-byte
/// little-endian header length, the JSON header, each tensor's dtype, shape (every extent must
/// fit an `i32`, MLX's extent type) and data offsets, which must tile the data section exactly
/// to the end of `bytes`. Returns, per tensor name, its dtype and shape and the byte range of its
/// data within `bytes`. `path` only names the file in errors ([`Error::Format`]).
///
/// This is all of [`SafetensorsFile::open`]'s parsing (`open` maps the file and calls it); it is
/// public so that the parser can be fuzzed on bytes (`fuzz/fuzz_targets/safetensors_header.rs`)
/// and used on bytes already in memory.
pub fn parse_safetensors_header(bytes: &[u8], path: &Path) -> Result<BTreeMap<String, (TensorInfo, Range<usize>)>> {
    if bytes.len() < 8 {
        return Err(Error::format(path, format!("{} bytes is too short for a safetensors header", bytes.len())));
    }
    check_data_offsets(bytes, path)?;
    let (header_len, metadata) = safetensors::SafeTensors::read_metadata(bytes)
        .map_err(|e| Error::format(path, format!("invalid safetensors: {e}")))?;
    let data_start = 8 + header_len;
    metadata
        .tensors()
        .into_iter()
        .map(|(name, info)| {
            let shape = shape_i32(&name, &info.shape, path)?;
            let (start, end) = info.data_offsets;
            let range = data_start.checked_add(start).zip(data_start.checked_add(end));
            let Some((start, end)) = range.filter(|&(s, e)| s <= e && e <= bytes.len()) else {
                return Err(Error::format(
                    path,
                    format!("tensor `{name}`: data offsets {:?} outside the file", info.data_offsets),
                ));
            };
            Ok((name, (TensorInfo { dtype: dtype_of(info.dtype), shape }, start..end)))
        })
        .collect()
}

/// What a safetensors file's header says, read without its data: each tensor's dtype, shape and
/// byte range within the file, and the `__metadata__` strings.
#[derive(Debug, Clone, PartialEq)]
pub struct SafetensorsHeader {
    pub tensors: BTreeMap<String, (TensorInfo, Range<usize>)>,
    pub metadata: BTreeMap<String, String>,
}

/// Reads and validates the header of the safetensors file at `path` without reading its data:
/// the header length (at most safetensors' 100 MB), the JSON header, each tensor's dtype, shape
/// (extents that fit an `i32`) and data offsets, which must tile the data section exactly to the
/// end of the file: a file cut short, or longer than its header says, is an [`Error::Format`].
pub fn read_safetensors_header(path: impl AsRef<Path>) -> Result<SafetensorsHeader> {
    use std::io::Read;
    let path = path.as_ref();
    let mut file = File::open(path).map_err(|e| Error::io(path, e))?;
    let file_len = file.metadata().map_err(|e| Error::io(path, e))?.len();
    let mut len = [0u8; 8];
    file.read_exact(&mut len)
        .map_err(|_| Error::format(path, format!("{file_len} bytes is too short for a safetensors header")))?;
    let header_len = u64::from_le_bytes(len);
    if header_len > MAX_HEADER_BYTES || header_len > file_len - 8 {
        return Err(Error::format(path, format!("a header of {header_len} bytes in a file of {file_len}")));
    }
    let mut header = vec![0u8; header_len as usize];
    file.read_exact(&mut header).map_err(|e| Error::io(path, e))?;
    let parsed: safetensors::tensor::Metadata =
        serde_json::from_slice(&header).map_err(|e| Error::format(path, format!("invalid safetensors header: {e}")))?;
    let data_start = 8 + header_len as usize;
    let described = data_start.checked_add(parsed.data_len());
    if described.map(|n| n as u64) != Some(file_len) {
        return Err(Error::format(
            path,
            format!(
                "the file holds {file_len} bytes, its header describes {}",
                described.map_or("more".into(), |n| n.to_string())
            ),
        ));
    }
    let tensors = parsed
        .tensors()
        .into_iter()
        .map(|(name, info)| {
            let shape = shape_i32(&name, &info.shape, path)?;
            let (start, end) = info.data_offsets;
            let range = data_start + start..data_start + end;
            Ok((name, (TensorInfo { dtype: dtype_of(info.dtype), shape }, range)))
        })
        .collect::<Result<_>>()?;
    let metadata = parsed.metadata().clone().unwrap_or_default().into_iter().collect();
    Ok(SafetensorsHeader { tensors, metadata })
}

/// safetensors' own limit on the header's length.
const MAX_HEADER_BYTES: u64 = 100_000_000;

/// Rejects a header whose data offsets point past the end of the file before the `safetensors`
/// crate sums them: its `header length + 8 + end of data` overflows (a panic in debug builds) for
/// offsets near `usize::MAX`. Headers that are not an object of objects are left to its parser.
/// A header's shape as MLX's `i32` extents; a dimension past `i32::MAX` is a format error
/// naming the tensor.
fn shape_i32(name: &str, shape: &[usize], path: &Path) -> Result<Vec<i32>> {
    shape
        .iter()
        .map(|&d| i32::try_from(d))
        .collect::<std::result::Result<Vec<i32>, _>>()
        .map_err(|_| Error::format(path, format!("tensor `{name}`: shape {shape:?} too large")))
}

fn check_data_offsets(bytes: &[u8], path: &Path) -> Result<()> {
    let Some(header) = bytes
        .get(..8)
        .and_then(|n| <[u8; 8]>::try_from(n).ok())
        .and_then(|n| usize::try_from(u64::from_le_bytes(n)).ok())
        .and_then(|n| bytes.get(8..8usize.checked_add(n)?))
    else {
        return Ok(());
    };
    let Ok(serde_json::Value::Object(tensors)) = serde_json::from_slice::<serde_json::Value>(header) else {
        return Ok(());
    };
    let data_len = (bytes.len() - 8 - header.len()) as u64;
    for (name, entry) in &tensors {
        let ends = entry.get("data_offsets").and_then(|o| o.as_array()).into_iter().flatten();
        if ends.filter_map(serde_json::Value::as_u64).any(|offset| offset > data_len) {
            return Err(Error::format(
                path,
                format!("tensor `{name}`: data offsets past the end of the file ({data_len} data bytes)"),
            ));
        }
    }
    Ok(())
}

/// Destructor MLX calls (from any thread) when the last array using a mapping is freed.
///
/// # Safety
/// `payload` must come from `Box::into_raw` on a `Box<Arc<MmapRaw>>` and be passed here once.
unsafe extern "C" fn release_mapping(payload: *mut c_void) {
    // SAFETY: `payload` is the `Box<Arc<MmapRaw>>` leaked in `map_tensor`, which mlx-c hands
    // back exactly once; `Arc<MmapRaw>` is `Send`, so dropping it on any thread is sound.
    drop(unsafe { Box::from_raw(payload.cast::<Arc<MmapRaw>>()) });
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
    use crate::status::check;
    let path = path.as_ref();
    let c_path = std::ffi::CString::new(path.to_string_lossy().as_bytes())
        .map_err(|_| Error::format(path, "path contains a NUL byte"))?;
    let stream = crate::device::current_stream()?;
    // SAFETY: no preconditions; the new (empty) map of arrays is ours, freed below on every path.
    let mut arrays = unsafe { api().mlx_map_string_to_array_new() };
    // SAFETY: no preconditions; the new (empty) map of metadata strings is ours, freed below on
    // every path.
    let mut metadata = unsafe { api().mlx_map_string_to_string_new() };
    // SAFETY: `arrays` and `metadata` are valid handles, exclusively borrowed, that the call fills;
    // `c_path` is a `CString` that outlives the call (mlx-c copies it); `stream` is this thread's
    // current stream.
    let loaded = check("load_safetensors", || unsafe {
        api().mlx_load_safetensors(&mut arrays, &mut metadata, c_path.as_ptr(), stream)
    });
    let result = loaded.and_then(|()| {
        let mut out = BTreeMap::new();
        let mut failure = None;
        // SAFETY: `arrays` is a live, non-null map handle (the load succeeded and filled it);
        // the iterator points into it, and the map is neither changed nor freed until the
        // iterator is freed below.
        let iter = unsafe { api().mlx_map_string_to_array_iterator_new(arrays) };
        loop {
            let mut key: *const std::ffi::c_char = std::ptr::null();
            // SAFETY: no preconditions; the null handle is ours, freed here unless adopted.
            let mut raw = unsafe { api().mlx_array_new() };
            // SAFETY: `iter` is live (see above); `key` and `raw` are valid and exclusively
            // borrowed: the call points `key` at the entry's key and sets `raw` to a new handle
            // sharing the entry's array.
            let status = unsafe { api().mlx_map_string_to_array_iterator_next(&mut key, &mut raw, iter) };
            if status != 0 || key.is_null() {
                // SAFETY: `raw` is ours and not adopted on this path: freed once, here.
                unsafe { api().mlx_array_free(raw) };
                break;
            }
            // SAFETY: `key` (non-null) is the NUL-terminated data of the entry's key string, owned
            // by the map, which is unchanged and live until freed below; it is copied out here.
            let name = unsafe { std::ffi::CStr::from_ptr(key) }.to_string_lossy().into_owned();
            // SAFETY: the iterator set `raw` to a new handle of its own allocation: ours alone.
            match unsafe { Array::adopt(raw, "load_safetensors") } {
                Ok(value) => {
                    out.insert(name, value);
                }
                Err(e) => {
                    failure = Some(e);
                    break;
                }
            }
        }
        // SAFETY: `iter` is ours, no longer used, and freed once, here.
        unsafe { api().mlx_map_string_to_array_iterator_free(iter) };
        failure.map_or(Ok(out), Err)
    });
    // SAFETY: both maps are ours, no longer used (the arrays adopted above hold their own
    // references, the names were copied), and each is freed once, here.
    unsafe {
        api().mlx_map_string_to_array_free(arrays);
        api().mlx_map_string_to_string_free(metadata);
    }
    result
}
