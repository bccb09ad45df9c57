//! [`ShardHeader`]: a safetensors file's header read on its own (its 8-byte length, then its
//! JSON), checked against the file's size, and the header of a file holding a subset of its
//! tensors.

use std::collections::BTreeMap;
use std::ops::Range;

/// The most bytes a header may take: safetensors' own limit.
pub const MAX_HEADER_BYTES: u64 = 100_000_000;

/// A checked safetensors header.
#[derive(Debug, Clone)]
pub struct ShardHeader {
    /// The JSON's length in bytes (the file's first 8 bytes, little-endian).
    pub json_len: u64,
    /// The tensors, in the order of their data.
    pub tensors: Vec<HeaderTensor>,
    /// The `__metadata__` entry, if any.
    metadata: Option<serde_json::Value>,
}

/// One tensor of a header.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct HeaderTensor {
    pub name: String,
    pub dtype: String,
    pub shape: Vec<u64>,
    /// Its bytes, counted from the start of the data (after the header).
    pub data: Range<u64>,
}

/// A file holding some tensors of a shard: its header bytes, and where each run of the
/// shard's bytes goes in it.
#[derive(Debug, Clone)]
pub struct SubsetFile {
    /// The new file's first bytes: length, JSON, padding to 8 bytes.
    pub header: Vec<u8>,
    /// Runs of the shard's bytes (absolute in the shard file), in the order they follow the
    /// header in the new file.
    pub runs: Vec<Range<u64>>,
    /// The tensors taken, by name.
    pub tensors: Vec<String>,
}

impl SubsetFile {
    /// The new file's size.
    pub fn len(&self) -> u64 {
        self.header.len() as u64 + self.data_len()
    }

    /// Whether it holds no tensor data.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// The bytes of data it takes from the shard.
    pub fn data_len(&self) -> u64 {
        self.runs.iter().map(|r| r.end - r.start).sum()
    }
}

impl ShardHeader {
    /// The JSON's length from the file's first 8 bytes, checked against the file's size.
    pub fn json_len(prefix: [u8; 8], file_size: u64) -> Result<u64, String> {
        let len = u64::from_le_bytes(prefix);
        if len > MAX_HEADER_BYTES {
            return Err(format!("the header claims {len} bytes, more than safetensors' limit of {MAX_HEADER_BYTES}"));
        }
        if len.saturating_add(8) > file_size {
            return Err(format!("the header claims {len} bytes, past the end of a file of {file_size}"));
        }
        Ok(len)
    }

    /// Parses and checks the header JSON of a file of `file_size` bytes: every tensor's bytes
    /// lie inside the data, do not overlap, and (for the dtypes safetensors names) hold exactly
    /// its shape's elements.
    pub fn parse(json: &[u8], file_size: u64) -> Result<ShardHeader, String> {
        let json_len = json.len() as u64;
        let data_len = file_size.checked_sub(8 + json_len).ok_or("the header is longer than the file")?;
        let map: BTreeMap<String, serde_json::Value> =
            serde_json::from_slice(json).map_err(|e| format!("the header is not a JSON object: {e}"))?;
        let mut metadata = None;
        let mut tensors = Vec::with_capacity(map.len());
        for (name, entry) in map {
            if name == "__metadata__" {
                metadata = Some(entry);
                continue;
            }
            tensors.push(tensor(&name, &entry, data_len).map_err(|e| format!("`{name}`: {e}"))?);
        }
        tensors.sort_by_key(|t| (t.data.start, t.data.end));
        for pair in tensors.windows(2) {
            if pair[1].data.start < pair[0].data.end {
                return Err(format!("`{}` and `{}` overlap", pair[0].name, pair[1].name));
            }
        }
        Ok(ShardHeader { json_len, tensors, metadata })
    }

    /// Where the data starts in the file.
    pub fn data_start(&self) -> u64 {
        8 + self.json_len
    }

    /// The file holding only the tensors `keep` takes, with this header's metadata: its
    /// header, and the runs of this file's bytes that follow it (adjacent tensors in one run).
    pub fn subset(&self, keep: impl Fn(&str) -> bool) -> SubsetFile {
        let mut entries = serde_json::Map::new();
        if let Some(metadata) = &self.metadata {
            entries.insert("__metadata__".to_owned(), metadata.clone());
        }
        let mut runs: Vec<Range<u64>> = Vec::new();
        let mut names = Vec::new();
        let mut offset = 0u64;
        for tensor in self.tensors.iter().filter(|t| keep(&t.name)) {
            let len = tensor.data.end - tensor.data.start;
            entries.insert(
                tensor.name.clone(),
                serde_json::json!({"dtype": tensor.dtype, "shape": tensor.shape, "data_offsets": [offset, offset + len]}),
            );
            offset += len;
            let source = self.data_start() + tensor.data.start..self.data_start() + tensor.data.end;
            match runs.last_mut() {
                Some(last) if last.end == source.start => last.end = source.end,
                _ => runs.push(source),
            }
            names.push(tensor.name.clone());
        }
        let mut json = serde_json::to_vec(&entries).unwrap_or_default();
        while !(json.len() + 8).is_multiple_of(8) {
            json.push(b' ');
        }
        let mut header = (json.len() as u64).to_le_bytes().to_vec();
        header.extend_from_slice(&json);
        runs.retain(|r| r.start < r.end);
        SubsetFile { header, runs, tensors: names }
    }
}

fn tensor(name: &str, entry: &serde_json::Value, data_len: u64) -> Result<HeaderTensor, String> {
    let dtype = entry.get("dtype").and_then(|d| d.as_str()).ok_or("no `dtype` string")?.to_owned();
    let shape: Vec<u64> = entry
        .get("shape")
        .and_then(|s| s.as_array())
        .ok_or("no `shape` list")?
        .iter()
        .map(|d| d.as_u64().ok_or("a shape extent is not a non-negative integer"))
        .collect::<Result<_, _>>()?;
    let offsets = entry.get("data_offsets").and_then(|o| o.as_array()).ok_or("no `data_offsets` pair")?;
    let [start, end] = offsets.as_slice() else { return Err("`data_offsets` is not a pair".into()) };
    let (Some(start), Some(end)) = (start.as_u64(), end.as_u64()) else {
        return Err("`data_offsets` are not non-negative integers".into());
    };
    if start > end || end > data_len {
        return Err(format!("its bytes {start}..{end} are not inside the {data_len} bytes of data"));
    }
    if let Some(bits) = dtype_bits(&dtype) {
        let elements = shape.iter().try_fold(1u64, |n, &d| n.checked_mul(d)).ok_or("its shape overflows")?;
        let bytes = elements.checked_mul(bits).ok_or("its shape overflows")?.div_ceil(8);
        if bytes != end - start {
            return Err(format!("{dtype} {shape:?} takes {bytes} bytes, its offsets give {}", end - start));
        }
    }
    Ok(HeaderTensor { name: name.to_owned(), dtype, shape, data: start..end })
}

/// Bits per element of the dtypes safetensors names.
fn dtype_bits(dtype: &str) -> Option<u64> {
    Some(match dtype {
        "BOOL" | "U8" | "I8" | "F8_E4M3" | "F8_E5M2" | "F8_E8M0" => 8,
        "U16" | "I16" | "F16" | "BF16" => 16,
        "U32" | "I32" | "F32" => 32,
        "U64" | "I64" | "F64" | "C64" => 64,
        "F4" => 4,
        "F6_E2M3" | "F6_E3M2" => 6,
        _ => return None,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn header(json: &str) -> Vec<u8> {
        json.as_bytes().to_vec()
    }

    #[test]
    fn a_subset_keeps_the_taken_tensors_bytes_in_runs() {
        let json = header(
            r#"{"__metadata__":{"format":"mlx"},
            "v.a":{"dtype":"F32","shape":[2],"data_offsets":[0,8]},
            "l.b":{"dtype":"BF16","shape":[3],"data_offsets":[8,14]},
            "v.c":{"dtype":"U8","shape":[2],"data_offsets":[14,16]},
            "v.d":{"dtype":"I32","shape":[1],"data_offsets":[16,20]}}"#,
        );
        let size = 8 + json.len() as u64 + 20;
        let parsed = ShardHeader::parse(&json, size).unwrap();
        let subset = parsed.subset(|n| n.starts_with("v."));
        let start = parsed.data_start();
        assert_eq!(subset.runs, vec![start..start + 8, start + 14..start + 20]);
        assert_eq!(subset.tensors, ["v.a", "v.c", "v.d"]);
        assert_eq!(subset.header.len() % 8, 0);
        let n = u64::from_le_bytes(subset.header[..8].try_into().unwrap());
        let reparsed = ShardHeader::parse(&subset.header[8..8 + n as usize], subset.len()).unwrap();
        let names: Vec<_> = reparsed.tensors.iter().map(|t| (t.name.as_str(), t.data.clone())).collect();
        assert_eq!(names, [("v.a", 0..8), ("v.c", 8..10), ("v.d", 10..14)]);
        assert!(String::from_utf8_lossy(&subset.header).contains("\"format\":\"mlx\""));
    }

    #[test]
    fn bad_headers_are_refused() {
        assert!(ShardHeader::json_len(200u64.to_le_bytes(), 100).is_err());
        assert!(ShardHeader::json_len(u64::MAX.to_le_bytes(), u64::MAX).is_err());
        for (json, data) in [
            (r#"{"a":{"dtype":"F32","shape":[2],"data_offsets":[0,9]}}"#, 9),
            (r#"{"a":{"dtype":"F32","shape":[2],"data_offsets":[0,8]}}"#, 4),
            (
                r#"{"a":{"dtype":"F32","shape":[1],"data_offsets":[0,4]},"b":{"dtype":"F32","shape":[1],"data_offsets":[2,6]}}"#,
                8,
            ),
            (r#"{"a":{"dtype":"F32","shape":[-1],"data_offsets":[0,4]}}"#, 4),
            (r#"{"a":1}"#, 0),
            ("[]", 0),
            ("{", 0),
        ] {
            let json = header(json);
            assert!(
                ShardHeader::parse(&json, 8 + json.len() as u64 + data).is_err(),
                "{}",
                String::from_utf8_lossy(&json)
            );
        }
    }
}
