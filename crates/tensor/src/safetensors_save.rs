//! Writing safetensors files, atomically: from MLX arrays, or from bytes already on the host.

use crate::{Array, Dtype, Error, Result};
use std::collections::BTreeMap;
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
    let host = tensors
        .iter()
        .map(|&(name, array)| {
            let shape = array.shape().iter().map(|&d| d as usize).collect::<Vec<_>>();
            Ok((name, array.dtype(), shape, array.with_bytes(<[u8]>::to_vec)?))
        })
        .collect::<Result<Vec<_>>>()?;
    let views: Vec<TensorBytes<'_>> =
        host.iter().map(|(name, dtype, shape, data)| TensorBytes { name, dtype: *dtype, shape, data }).collect();
    let metadata: BTreeMap<String, String> = metadata.unwrap_or_default().into_iter().collect();
    write_safetensors(path, &views, &metadata)
}

/// One tensor as a safetensors file stores it: its dtype, its shape and its bytes (row-major,
/// little-endian, `shape`'s element count times the dtype's size).
#[derive(Debug, Clone, Copy)]
pub struct TensorBytes<'a> {
    pub name: &'a str,
    pub dtype: Dtype,
    pub shape: &'a [usize],
    pub data: &'a [u8],
}

/// Writes a safetensors file at `path` from host bytes: the header (each tensor's dtype, shape
/// and data offsets, in the order given, and `metadata` under `__metadata__`, as strings),
/// padded with spaces to a multiple of 8 bytes, then the tensors' bytes one after the other,
/// streamed to the file without a second copy. The file appears complete or not at all
/// ([`write_atomically`]). Fails ([`Error::Format`]) on a tensor whose bytes do not fill its
/// shape, a dtype safetensors cannot store, or two tensors of one name.
pub fn write_safetensors(
    path: impl AsRef<Path>,
    tensors: &[TensorBytes<'_>],
    metadata: &BTreeMap<String, String>,
) -> Result<()> {
    let path = path.as_ref();
    let header = safetensors_header(path, tensors, metadata)?;
    write_atomically(path, |file| {
        let mut out = std::io::BufWriter::new(file);
        out.write_all(&(header.len() as u64).to_le_bytes())?;
        out.write_all(&header)?;
        for tensor in tensors {
            out.write_all(tensor.data)?;
        }
        out.flush()
    })
}

/// The JSON header of [`write_safetensors`], padded.
fn safetensors_header(
    path: &Path,
    tensors: &[TensorBytes<'_>],
    metadata: &BTreeMap<String, String>,
) -> Result<Vec<u8>> {
    let mut header = serde_json::Map::new();
    if !metadata.is_empty() {
        let metadata = metadata.iter().map(|(k, v)| (k.clone(), serde_json::Value::String(v.clone()))).collect();
        header.insert("__metadata__".into(), serde_json::Value::Object(metadata));
    }
    let mut offset = 0usize;
    for tensor in tensors {
        if tensor.dtype == Dtype::C64 {
            return Err(Error::format(
                path,
                format!("tensor `{}`: dtype {} cannot be saved", tensor.name, tensor.dtype),
            ));
        }
        let bytes = tensor.shape.iter().try_fold(tensor.dtype.size(), |n, &d| n.checked_mul(d));
        if bytes != Some(tensor.data.len()) {
            return Err(Error::format(
                path,
                format!(
                    "tensor `{}`: {} bytes do not fill shape {:?} of {}",
                    tensor.name,
                    tensor.data.len(),
                    tensor.shape,
                    tensor.dtype
                ),
            ));
        }
        let end = offset + tensor.data.len();
        let entry = serde_json::json!({ "dtype": tensor.dtype.safetensors_name(), "shape": tensor.shape, "data_offsets": [offset, end] });
        if header.insert(tensor.name.to_owned(), entry).is_some() || tensor.name == "__metadata__" {
            return Err(Error::format(path, format!("tensor `{}` named twice (or reserved)", tensor.name)));
        }
        offset = end;
    }
    let mut bytes = serde_json::to_vec(&header).map_err(|e| Error::format(path, e.to_string()))?;
    bytes.resize(bytes.len().next_multiple_of(8), b' ');
    Ok(bytes)
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
