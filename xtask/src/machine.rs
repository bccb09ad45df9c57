//! What the benchmark tables say about the machine they ran on (read from /proc and /etc).

use std::fs;

/// CPU model, instruction-set extensions that matter for the kernels, cores, memory and OS.
pub struct Machine {
    /// `model name` of /proc/cpuinfo, else the architecture.
    pub model: String,
    /// Which of avx2, fma, avx512f, avx512_bf16 the CPU has.
    pub isa: Vec<&'static str>,
    /// Cores this process may use.
    pub cores: usize,
    /// `", N GiB RAM"`, or empty when unknown.
    pub memory: String,
    /// `PRETTY_NAME` of /etc/os-release, else the OS family.
    pub os: String,
}

impl Machine {
    pub fn read() -> Machine {
        let cpuinfo = fs::read_to_string("/proc/cpuinfo").unwrap_or_default();
        let model = cpuinfo
            .lines()
            .find_map(|l| {
                l.strip_prefix("model name").and_then(|r| r.split_once(':')).map(|(_, m)| m.trim().to_owned())
            })
            .unwrap_or_else(|| std::env::consts::ARCH.to_owned());
        let flags =
            cpuinfo.lines().find_map(|l| l.strip_prefix("flags").and_then(|r| r.split_once(':'))).map(|(_, f)| f);
        let has = |flag: &str| flags.is_some_and(|f| f.split_whitespace().any(|x| x == flag));
        let isa = ["avx2", "fma", "avx512f", "avx512_bf16"].into_iter().filter(|f| has(f)).collect();
        let cores = std::thread::available_parallelism().map_or(1, |n| n.get());
        let memory = fs::read_to_string("/proc/meminfo")
            .ok()
            .and_then(|m| m.lines().find_map(|l| l.strip_prefix("MemTotal:").map(|v| v.trim().to_owned())))
            .and_then(|kb| kb.trim_end_matches(" kB").parse::<f64>().ok())
            .map_or_else(String::new, |kb| format!(", {:.0} GiB RAM", kb / 1024.0 / 1024.0));
        let os = fs::read_to_string("/etc/os-release")
            .ok()
            .and_then(|t| {
                t.lines().find_map(|l| l.strip_prefix("PRETTY_NAME=").map(|v| v.trim_matches('"').to_owned()))
            })
            .unwrap_or_else(|| std::env::consts::OS.to_owned());
        Machine { model, isa, cores, memory, os }
    }
}

/// The 1, 5 and 15-minute load averages, `"a, b, c"` (`"?"` when unknown).
pub fn load_average() -> String {
    fs::read_to_string("/proc/loadavg")
        .map(|t| t.split_whitespace().take(3).collect::<Vec<_>>().join(", "))
        .unwrap_or_else(|_| "?".to_owned())
}
