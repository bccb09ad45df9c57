//! Reading what criterion wrote under `CRITERION_HOME` (`<group>/<function>[/<value>]/new/`):
//! each benchmark's median, its fastest sample and its declared throughput. Every bench
//! command that runs criterion benches (ops, preprocess, kernels) reads them here.

use project::Result;
use serde_json::Value;
use std::fs;
use std::path::{Path, PathBuf};

/// One benchmark's statistics, in seconds per iteration.
#[derive(Debug, Clone, PartialEq)]
pub struct Estimate {
    /// Criterion's group name (`benchmark_group`), or the function's name for ungrouped ones.
    pub group: String,
    /// The function name within the group (`BenchmarkId`'s function, or `bench_function`'s id).
    pub function: Option<String>,
    /// The parameter of a `BenchmarkId` (`value_str`), e.g. a shape.
    pub value: Option<String>,
    /// The median estimate.
    pub median: f64,
    /// The fastest sample's mean time per iteration (the least disturbed by other processes).
    pub fastest: f64,
    /// Work per iteration the bench declared (`group.throughput(…)`).
    pub throughput: Option<Throughput>,
}

/// Criterion's `Throughput` of one iteration.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Throughput {
    Elements(u64),
    Bytes(u64),
}

impl Estimate {
    /// `group/function/value`, criterion's id.
    pub fn id(&self) -> String {
        [Some(self.group.as_str()), self.function.as_deref(), self.value.as_deref()]
            .into_iter()
            .flatten()
            .collect::<Vec<_>>()
            .join("/")
    }
}

/// The benchmark whose results are in `home/<path…>/new/`.
pub fn read(home: &Path, path: &[&str]) -> Result<Estimate> {
    let dir = path.iter().fold(home.to_path_buf(), |dir, part| dir.join(part)).join("new");
    read_dir(&dir)
}

/// Every benchmark under `home`, sorted by id.
pub fn read_all(home: &Path) -> Result<Vec<Estimate>> {
    let mut found = Vec::new();
    collect(home, &mut found)?;
    let mut estimates = found.iter().map(|dir| read_dir(dir)).collect::<Result<Vec<_>>>()?;
    estimates.sort_by_key(Estimate::id);
    Ok(estimates)
}

/// Directories named `new` that hold a `benchmark.json` (criterion's `report/` is skipped).
fn collect(dir: &Path, found: &mut Vec<PathBuf>) -> Result<()> {
    let entries = fs::read_dir(dir).map_err(|e| format!("{}: {e}", dir.display()))?;
    for entry in entries {
        let path = entry.map_err(|e| format!("{}: {e}", dir.display()))?.path();
        if !path.is_dir() || path.file_name().is_some_and(|n| n == "report") {
            continue;
        }
        if path.file_name().is_some_and(|n| n == "new") && path.join("benchmark.json").is_file() {
            found.push(path);
        } else {
            collect(&path, found)?;
        }
    }
    Ok(())
}

fn read_json(path: &Path) -> Result<Value> {
    let text = fs::read_to_string(path).map_err(|e| format!("{}: {e}", path.display()))?;
    serde_json::from_str(&text).map_err(|e| format!("{}: {e}", path.display()))
}

fn read_dir(dir: &Path) -> Result<Estimate> {
    let estimates = read_json(&dir.join("estimates.json"))?;
    let median = estimates["median"]["point_estimate"]
        .as_f64()
        .ok_or_else(|| format!("{}: no median estimate", dir.display()))?;
    let sample = read_json(&dir.join("sample.json"))?;
    let numbers = |key: &str| -> Vec<f64> {
        sample[key].as_array().map(|a| a.iter().filter_map(Value::as_f64).collect()).unwrap_or_default()
    };
    let fastest = numbers("iters").iter().zip(numbers("times")).map(|(n, t)| t / n).fold(f64::INFINITY, f64::min);
    if !fastest.is_finite() {
        return Err(format!("{}: no samples", dir.display()));
    }
    let (group, function, value, throughput) = match read_json(&dir.join("benchmark.json")) {
        Ok(b) => {
            let text = |key: &str| b[key].as_str().map(str::to_owned);
            let group = text("group_id").ok_or_else(|| format!("{}: no group_id", dir.display()))?;
            (group, text("function_id"), text("value_str"), throughput(&b["throughput"]))
        }
        // Older layouts without benchmark.json: the directory names.
        Err(_) => {
            let name = |d: Option<&Path>| d.and_then(Path::file_name).map(|n| n.to_string_lossy().into_owned());
            (name(dir.parent().and_then(Path::parent)).unwrap_or_default(), name(dir.parent()), None, None)
        }
    };
    Ok(Estimate { group, function, value, median: median * 1e-9, fastest: fastest * 1e-9, throughput })
}

fn throughput(value: &Value) -> Option<Throughput> {
    let count = |key: &str| value[key].as_u64();
    count("Elements")
        .map(Throughput::Elements)
        .or_else(|| value["ElementsAndBytes"]["elements"].as_u64().map(Throughput::Elements))
        .or_else(|| count("Bytes").or_else(|| count("BytesDecimal")).map(Throughput::Bytes))
}

#[cfg(test)]
pub mod tests {
    use super::*;

    /// Writes criterion's three files for one benchmark under `home`.
    pub fn write_benchmark(home: &Path, id: (&str, Option<&str>, Option<&str>), median_ns: f64, throughput: &str) {
        let (group, function, value) = id;
        let dir = [Some(group), function, value].into_iter().flatten().fold(home.to_path_buf(), |d, p| d.join(p));
        let new = dir.join("new");
        fs::create_dir_all(&new).unwrap();
        let quoted = |v: Option<&str>| v.map_or("null".to_owned(), |v| format!("\"{v}\""));
        fs::write(
            new.join("benchmark.json"),
            format!(
                r#"{{"group_id":"{group}","function_id":{},"value_str":{},"throughput":{throughput},"full_id":"x","directory_name":"x","title":"x"}}"#,
                quoted(function),
                quoted(value)
            ),
        )
        .unwrap();
        fs::write(new.join("estimates.json"), format!(r#"{{"median":{{"point_estimate":{median_ns}}}}}"#)).unwrap();
        let times = [median_ns * 10.0, median_ns * 9.0, median_ns * 20.0];
        fs::write(
            new.join("sample.json"),
            format!(
                r#"{{"sampling_mode":"Linear","iters":[10.0,10.0,20.0],"times":[{},{},{}]}}"#,
                times[0], times[1], times[2]
            ),
        )
        .unwrap();
        fs::create_dir_all(home.join("report")).unwrap();
    }

    #[test]
    fn reads_medians_fastest_samples_and_throughputs() {
        let home = std::env::temp_dir().join(format!("xtask-criterion-{}", std::process::id()));
        let _ = fs::remove_dir_all(&home);
        write_benchmark(&home, ("gemm", Some("f32"), Some("64x128x32")), 2000.0, r#"{"Elements":524288}"#);
        write_benchmark(&home, ("exp", None, None), 50.0, "null");
        let all = read_all(&home).unwrap();
        assert_eq!(all.len(), 2);
        assert_eq!(all[1].id(), "gemm/f32/64x128x32");
        assert_eq!(all[1].throughput, Some(Throughput::Elements(524288)));
        assert!((all[1].median - 2e-6).abs() < 1e-15);
        assert!((all[1].fastest - 0.9 * 2e-6).abs() < 1e-15);
        assert_eq!((all[0].group.as_str(), all[0].function.as_deref(), all[0].throughput), ("exp", None, None));
        let one = read(&home, &["gemm", "f32", "64x128x32"]).unwrap();
        assert_eq!(one, all[1]);
        assert!(read(&home, &["missing"]).is_err());
        fs::remove_dir_all(&home).unwrap();
    }
}
