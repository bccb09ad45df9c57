//! What the benchmark tables say about the machine they ran on (read from /proc and /etc), and
//! how loaded it was: every bench command describes its machine and load the same way.

use std::fs;

/// CPU model, instruction-set extensions that matter for the kernels, cores, memory and OS.
#[derive(Debug, Clone)]
pub struct Machine {
    /// `model name` of /proc/cpuinfo, else the architecture.
    pub model: String,
    /// Which of avx2, fma, avx512f, avx512_bf16 the CPU has.
    pub isa: Vec<&'static str>,
    /// Cores this process may use.
    pub cores: usize,
    /// Total memory in GiB, when known.
    pub memory_gib: Option<f64>,
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
        let memory_gib = fs::read_to_string("/proc/meminfo")
            .ok()
            .and_then(|m| m.lines().find_map(|l| l.strip_prefix("MemTotal:").map(|v| v.trim().to_owned())))
            .and_then(|kb| kb.trim_end_matches(" kB").parse::<f64>().ok())
            .map(|kb| kb / 1024.0 / 1024.0);
        let os = fs::read_to_string("/etc/os-release")
            .ok()
            .and_then(|t| {
                t.lines().find_map(|l| l.strip_prefix("PRETTY_NAME=").map(|v| v.trim_matches('"').to_owned()))
            })
            .unwrap_or_else(|| std::env::consts::OS.to_owned());
        Machine { model, isa, cores: cores(), memory_gib, os }
    }

    /// "MODEL (avx2, fma), N cores, M GiB RAM; OS", the line every table opens with.
    pub fn describe(&self) -> String {
        let isa = if self.isa.is_empty() { "no AVX2".to_owned() } else { self.isa.join(", ") };
        let memory = self.memory_gib.map_or_else(String::new, |g| format!(", {g:.0} GiB RAM"));
        format!("{} ({isa}), {} cores{memory}; {}", self.model, self.cores, self.os)
    }
}

/// Cores this process may use.
pub fn cores() -> usize {
    std::thread::available_parallelism().map_or(1, |n| n.get())
}

/// The 1, 5 and 15-minute load averages, `"a, b, c"` (`"?"` when unknown).
pub fn load_average() -> String {
    fs::read_to_string("/proc/loadavg")
        .map(|t| t.split_whitespace().take(3).collect::<Vec<_>>().join(", "))
        .unwrap_or_else(|_| "?".to_owned())
}

/// The 1-minute load average (NaN where /proc/loadavg is unreadable).
pub fn load_average_1min() -> f64 {
    fs::read_to_string("/proc/loadavg")
        .ok()
        .and_then(|t| t.split_whitespace().next().and_then(|v| v.parse().ok()))
        .unwrap_or(f64::NAN)
}

/// The load averages before and after a run, as each table states them.
#[derive(Debug, Clone)]
pub struct Load {
    pub before: String,
    pub after: String,
}

impl Load {
    /// Starts a run: reads the load average now.
    pub fn start() -> Load {
        Load { before: load_average(), after: String::new() }
    }

    /// Ends a run: reads the load average again.
    pub fn finish(mut self) -> Load {
        self.after = load_average();
        self
    }

    /// "Load average (1, 5, 15 min) before: …; after: …."
    pub fn describe(&self) -> String {
        format!("Load average (1, 5, 15 min) before: {}; after: {}.", self.before, self.after)
    }
}
