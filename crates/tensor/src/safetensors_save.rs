//! Writing safetensors files, atomically.

use crate::{Array, Error, Result};
use std::borrow::Cow;
use std::collections::HashMap;
use std::io::Write;
use std::path::Path;
use std::sync::atomic::{AtomicU64, Ordering};

/// Writes `tensors` (name, array) to a safetensors file at `path`, with optional string
/// metadata. The file appears complete or not at all (see [`write_atomically`]).
pub fn save_safetensors(
    path: impl AsRef<Path>,
    tensors: &[(&str, &Array)],
    metadata: Option<HashMap<String, String>>,
) -> Result<()> {
    let path = path.as_ref();
    let views = tensors
        .iter()
        .map(|&(name, array)| {
            let dtype = safetensors_dtype(array).ok_or_else(|| {
                Error::format(path, format!("tensor `{name}`: dtype {} cannot be saved", array.dtype()))
            })?;
            let data = array.with_bytes(<[u8]>::to_vec)?;
            let shape = array.shape().iter().map(|&d| d as usize).collect();
            Ok((name.to_owned(), HostTensor { dtype, shape, data }))
        })
        .collect::<Result<Vec<_>>>()?;
    let bytes = safetensors::serialize(views, metadata).map_err(|e| Error::format(path, e.to_string()))?;
    write_atomically(path, |file| file.write_all(&bytes))
}

struct HostTensor {
    dtype: safetensors::Dtype,
    shape: Vec<usize>,
    data: Vec<u8>,
}

impl safetensors::View for HostTensor {
    fn dtype(&self) -> safetensors::Dtype {
        self.dtype
    }
    fn shape(&self) -> &[usize] {
        &self.shape
    }
    fn data(&self) -> Cow<'_, [u8]> {
        Cow::Borrowed(&self.data)
    }
    fn data_len(&self) -> usize {
        self.data.len()
    }
}

fn safetensors_dtype(array: &Array) -> Option<safetensors::Dtype> {
    use crate::Dtype as D;
    use safetensors::Dtype as S;
    Some(match array.dtype() {
        D::Bool => S::BOOL,
        D::U8 => S::U8,
        D::U16 => S::U16,
        D::U32 => S::U32,
        D::U64 => S::U64,
        D::I8 => S::I8,
        D::I16 => S::I16,
        D::I32 => S::I32,
        D::I64 => S::I64,
        D::F16 => S::F16,
        D::Bf16 => S::BF16,
        D::F32 => S::F32,
        D::F64 => S::F64,
        D::C64 => return None,
    })
}

/// Creates `path` through a temporary file in the same directory that is renamed into place
/// once `write` succeeded and the data is on disk. On any failure the temporary file is
/// removed and `path` is left as it was.
pub fn write_atomically(
    path: impl AsRef<Path>,
    write: impl FnOnce(&mut std::fs::File) -> std::io::Result<()>,
) -> Result<()> {
    let path = path.as_ref();
    let dir = match path.parent() {
        Some(dir) if !dir.as_os_str().is_empty() => dir,
        _ => Path::new("."),
    };
    let name = path.file_name().ok_or_else(|| Error::format(path, "not a file path"))?;
    static SEQUENCE: AtomicU64 = AtomicU64::new(0);
    let unique = SEQUENCE.fetch_add(1, Ordering::Relaxed);
    let temp = dir.join(format!(".{}.{}-{unique}.partial", name.to_string_lossy(), std::process::id()));
    let result = (|| {
        let mut file = std::fs::File::create(&temp)?;
        write(&mut file)?;
        file.sync_all()?;
        std::fs::rename(&temp, path)
    })();
    result.map_err(|e| {
        let _ = std::fs::remove_file(&temp);
        Error::io(path, e)
    })
}
