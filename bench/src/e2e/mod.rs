//! `cargo xtask bench e2e`: image bytes → features, side by side on the same seeded checkpoints
//! and the same JPEGs (`cargo xtask bench e2e --help` for the selection flags).
//!
//! Sides ([`Side`]):
//! - ours, native dtype (the checkpoint's bf16, bit-exact with the reference) and `--dtype f32`:
//!   `bench_encode` (`bench/encode`: `VisionEncoder::encode_files` + eval);
//! - mlx-vlm 0.7.10 on the stock MLX wheels, bf16 and with the weights cast to float32:
//!   `bench/python/bench_e2e.py run`;
//! - candle-transformers 0.11.1's gemma4 tower, float32: `bench/candle-gemma4`;
//! - llama.cpp's mtmd vision encoder (clip), f32 and f16 GGUF mmproj written from the same
//!   checkpoint: `bench/llama-mtmd` ([`llama`]), timing the image encode alone.
//!
//! Checkpoints and images come from `bench_e2e.py make`. Each side is a process that loads once
//! (load time and peak RSS reported apart) and times several encodes; the median is reported.
//! Measurements are kept in `target/bench/e2e/measurements.json`, so that a run of some sides or
//! cases adds to (or replaces rows of) the earlier ones and the table in BENCHMARKS.md is
//! rendered from all of them, each row naming the run that measured it (`--fresh` starts over).
//! The high-budget cases (560, 1120: [`case::Table::HighBudget`]) have their own store and
//! section, `e2e-high-budget` ([`high_budget`]); a run measures the cases of one table.
//! The modules: [`side`], [`case`] and [`model`] say what runs, [`run`] runs it and compares
//! the features, [`flops`] counts matmul FLOPs, [`render`] fills `bench/templates/e2e.md` and
//! [`high_budget`] `bench/templates/e2e-high-budget.md`, [`store`] keeps the measurements,
//! [`llama`] builds llama.cpp and writes its GGUF files; [`gpu`] is the bench
//! `cargo xtask gpu-check` runs, ours and mlx-vlm on a GPU.

mod case;
mod flops;
pub mod gpu;
mod high_budget;
mod llama;
mod model;
mod render;
mod run;
mod side;
mod store;

pub use case::{CASES, Case};
pub use model::{Model, parse_models};
pub use side::{SIDES, Side};

use crate::gemm_peak::GemmPeak;
use crate::machine::{Load, Machine};
use crate::write_section_made_by;
use case::{Table, parse_case};
use project::stack::Stack;
use project::{Result, output, work_dir};

/// What the command line selects.
#[derive(Debug, clap::Args)]
pub struct Args {
    /// Sides to run, in table order whatever the order given [default: all]
    #[arg(long, value_enum, value_delimiter = ',')]
    sides: Vec<Side>,
    /// Cases to run [default: those of section `e2e`]: photo_640x480@70, photo_640x480@280,
    /// photo_4000x3000@280, photo_640x480x8@280 (throughput: 8 same-size images per call); or
    /// those of section `e2e-high-budget`, which run apart and without mlx-vlm:
    /// photo_4000x3000@560, photo_4000x3000@1120
    #[arg(long, value_delimiter = ',', value_parser = parse_case)]
    cases: Vec<&'static Case>,
    /// Only the budget-70 case (same as `--cases photo_640x480@70`)
    #[arg(long, conflicts_with = "cases")]
    quick: bool,
    /// Models to run [default: all]: e2b, 31b-shaped, unified-12b, and the quantized
    /// unified-12b-legacy-q4, e2b-q4-projector, e2b-q4-tower
    #[arg(long, value_delimiter = ',')]
    models: Vec<String>,
    /// Timed encodes per side (after loading)
    #[arg(long, default_value_t = 3, value_parser = clap::value_parser!(u32).range(1..))]
    runs: u32,
    /// Timed encodes of the mlx-vlm sides on the gemma4 towers (minutes each at budget 280)
    #[arg(long, default_value_t = 1, value_parser = clap::value_parser!(u32).range(1..))]
    reference_runs: u32,
    /// Forget the measurements of earlier runs: the table shows this run's only
    #[arg(long)]
    fresh: bool,
}

impl Args {
    fn sides(&self) -> Vec<Side> {
        SIDES.into_iter().filter(|s| self.sides.is_empty() || self.sides.contains(s)).collect()
    }

    fn cases(&self) -> Vec<&'static Case> {
        CASES
            .iter()
            .filter(|c| {
                if self.quick {
                    c.id == "photo_640x480@70"
                } else {
                    self.cases.iter().any(|s| s.id == c.id) || (self.cases.is_empty() && c.table == Table::Standard)
                }
            })
            .collect()
    }

    /// The table the selected cases belong to: a run measures one table's cases.
    fn table(&self) -> Result<Table> {
        let cases = self.cases();
        let table = cases.first().map_or(Table::Standard, |c| c.table);
        if cases.iter().any(|c| c.table != table) {
            return Err("--cases: the high-budget cases (section e2e-high-budget) run apart from the others".to_owned());
        }
        Ok(table)
    }

    /// "models …; sides …; cases …" as the run list states it.
    fn describe(&self) -> String {
        let list = |items: Vec<&str>, all: usize| if items.len() == all { "all".to_owned() } else { items.join(", ") };
        let models = if self.models.is_empty() { "all".to_owned() } else { self.models.join(", ") };
        let sides = list(self.sides().iter().map(|s| s.id()).collect(), SIDES.len());
        let table = self.table().unwrap_or(Table::Standard);
        let cases =
            list(self.cases().iter().map(|c| c.id).collect(), CASES.iter().filter(|c| c.table == table).count());
        format!("models {models}; sides {sides}; cases {cases}")
    }
}

pub fn main(args: &Args, setup: crate::Setup) -> Result<()> {
    let table = args.table()?;
    let sides: Vec<Side> = args.sides().into_iter().filter(|s| table == Table::Standard || !s.is_mlx_vlm()).collect();
    if sides.is_empty() {
        return Err("--sides: no side runs the high-budget cases (mlx-vlm's take hours there)".to_owned());
    }
    let cases = args.cases();
    setup()?;
    let dir = work_dir("bench/e2e")?;
    let mut store = if args.fresh { store::Store::default() } else { store::Store::load(&dir, table.store_file())? };
    let load = Load::start();
    let tools = run::Tools::build(&Stack::cpu(), &sides)?;

    eprintln!("bench e2e: checkpoints and images (bench_e2e.py make)");
    let models = parse_models(&output(tools.reference_python(&dir).arg("make"))?)?;
    let model_order: Vec<String> = models.iter().map(|m| m.name.clone()).collect();
    for name in &args.models {
        if !model_order.contains(name) {
            return Err(format!("--models: unknown model `{name}` (choose among {})", model_order.join(", ")));
        }
    }
    let all_models: Vec<&Model> = models.iter().collect();
    let models: Vec<&Model> =
        models.iter().filter(|m| args.models.is_empty() || args.models.contains(&m.name)).collect();

    eprintln!("bench e2e: float32 GEMM peak (bench/python/gemm_peak.py)");
    let mut info = store::RunInfo {
        id: store.next_run_id(),
        started: output(project::cmd("date", &["-u", "+%Y-%m-%d %H:%M UTC"]))?,
        machine: Machine::read().describe(),
        mlx: "?".to_owned(),
        selection: args.describe(),
        load_before: load.before.clone(),
        load_after: None,
        gemm_before: GemmPeak::measure()?,
        gemm_after: None,
        floor_before: None,
        floor_after: None,
    };
    eprintln!("bench e2e: the exactness floor's rates (bench_encode --floor)");
    info.floor_before = Some(tools.floor()?);
    store.put_run(info.clone());
    let mut runner = run::Runner::new(&dir, &tools, info.id, args.runs, args.reference_runs)?;
    for model in &models {
        for case in &cases {
            let row_sides =
                sides.iter().copied().filter(|s| s.supports(model) && (!case.is_throughput() || s.batches()));
            for side in row_sides {
                store.insert(runner.measure(model, case, side)?);
                store.save(&dir, table.store_file())?;
            }
            runner.compare_row(&mut store, model, case)?;
            store.save(&dir, table.store_file())?;
        }
    }
    eprintln!("bench e2e: float32 GEMM peak again");
    info.gemm_after = Some(GemmPeak::measure()?);
    eprintln!("bench e2e: the exactness floor's rates again");
    info.floor_after = Some(tools.floor()?);
    info.load_after = Some(load.finish().after);
    info.mlx = runner.mlx_version().unwrap_or_else(|| "?".to_owned());
    store.put_run(info);
    store.save(&dir, table.store_file())?;
    let section = match table {
        Table::Standard => render::section(&store, &model_order, &render::Quantized::of(&all_models))?,
        Table::HighBudget => high_budget::section(&store, &model_order)?,
    };
    println!("{section}");
    write_section_made_by(table.section(), &table.command(), &section)?;
    eprintln!("bench e2e: wrote the `{}` section of BENCHMARKS.md", table.section());
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse(args: &[&str]) -> std::result::Result<Args, clap::Error> {
        crate::parse_suite_args("e2e", args)
    }

    #[test]
    fn selection_keeps_table_order_and_rejects_unknown_values() {
        let args = parse(&["--sides", "mlx-bf16,ours-f32", "--cases", "photo_640x480x8@280", "--runs", "5"]).unwrap();
        assert_eq!(args.sides(), [Side::OursF32, Side::MlxBf16]);
        assert_eq!(args.cases().iter().map(|c| c.id).collect::<Vec<_>>(), ["photo_640x480x8@280"]);
        assert_eq!((args.runs, args.reference_runs), (5, 1));
        assert_eq!(parse(&[]).unwrap().sides(), SIDES);
        assert_eq!(parse(&["--quick"]).unwrap().cases().len(), 1);
        assert!(parse(&["--sides", "torch"]).is_err());
        assert!(parse(&["--cases", "photo@1"]).is_err());
        assert!(parse(&["--runs", "0"]).is_err());
        assert!(parse(&["--quick", "--cases", "photo_640x480@70"]).is_err());
        assert!(parse(&[]).unwrap().cases().iter().all(|c| c.table == Table::Standard));
        let high = parse(&["--cases", "photo_4000x3000@1120,photo_4000x3000@560"]).unwrap();
        assert_eq!(high.cases().iter().map(|c| c.budget).collect::<Vec<_>>(), [560, 1120]);
        assert_eq!(high.table(), Ok(Table::HighBudget));
        assert!(high.describe().ends_with("cases all"), "{}", high.describe());
        assert!(parse(&["--cases", "photo_4000x3000@280,photo_4000x3000@560"]).unwrap().table().is_err());
    }

    #[test]
    fn model_lines_parse_with_their_dimensions() {
        let line = r#"{"model": "e2b", "model_type": "gemma4", "dir": "m", "hidden": 768, "layers": 16}"#;
        let model = parse_models(line).unwrap().remove(0);
        assert_eq!((model.name.as_str(), model.unified, model.dim("hidden")), ("e2b", false, Some(768.0)));
        assert!(model.dir.is_absolute());
        assert!(parse_models("nothing").is_err());
    }
}
