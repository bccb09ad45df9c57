//! The summary at the top of BENCHMARKS.md: one table per machine, each row a figure quoted from
//! a generated section below it, so the summary cannot say what the sections do not.
//!
//! The figures are read from the sections' own tables as BENCHMARKS.md holds them
//! ([`markdown_table`](super::markdown_table)), not from the measurements under
//! `target/bench/`: each table is what its run wrote, a fresh clone has no measurements, and the
//! summary is then made and checked the same way anywhere. A machine is a section's `Machine:`
//! line (up to its first `;`); sections on one machine share a table, in file order.
//!
//! What each suite contributes ([`rows`]): `e2e` and `e2e-high-budget` one row per model, image
//! and budget (ours native against stock mlx-vlm bf16, every other side as a multiple of ours;
//! ours f32 against mlx-vlm f32 on its own row when both ran), `kernels` one row per kernel
//! (the range of each column over its benchmarks with an MLX counterpart; `quantized` by dtype and mode), `preprocess` one row
//! per input, `mlx-vlm` the time to first token and the decode rate. A section of another suite
//! gets a row pointing at it.
//!
//! `cargo xtask bench summary` rewrites it; every `cargo xtask bench SUITE` rewrites it after its
//! section; [`check`] (in `cargo xtask bench check` and a test) fails when it differs from what
//! the sections give.

use super::markdown_table::{Table, tables};
use super::{sections, template};
use project::{Result, root};
use std::fs;

/// The section's name: its markers, its template `bench/templates/summary.md`.
pub const NAME: &str = "summary";

/// The command that rewrites it.
pub const COMMAND: &str = "cargo xtask bench summary";

const OURS_NATIVE: &str = "ours, native (bf16)";
const OURS_F32: &str = "ours, f32";
const REFERENCE_BF16: &str = "mlx-vlm, bf16";
const REFERENCE_F32: &str = "mlx-vlm, f32";

/// One row of a machine's table.
#[derive(Debug, Clone, PartialEq, Eq)]
struct Row {
    measured: String,
    ours: String,
    reference: String,
    versus: String,
    others: String,
    section: String,
}

/// The summary's text (its template filled) for the generated sections of `benchmarks`.
pub fn render(benchmarks: &str) -> Result<String> {
    let mut machines: Vec<(String, Vec<String>, Vec<Row>)> = Vec::new();
    for (name, body) in sections::all(benchmarks).into_iter().filter(|(name, _)| *name != NAME) {
        let machine = machine(body).ok_or_else(|| format!("section `{name}` has no `Machine:` line"))?;
        let date = body.lines().rev().find_map(sections::parse_stamp).map_or("undated", |(date, _)| date);
        let rows = rows(name, body).map_err(|e| format!("section `{name}`: {e}"))?;
        let at = match machines.iter().position(|(m, _, _)| *m == machine) {
            Some(at) => at,
            None => {
                machines.push((machine, Vec::new(), Vec::new()));
                machines.len() - 1
            }
        };
        machines[at].1.push(format!("`{name}` ({date})"));
        machines[at].2.extend(rows);
    }
    let tables: Vec<String> = machines
        .iter()
        .map(|(machine, names, rows)| {
            let lines: Vec<String> = rows
                .iter()
                .map(|r| {
                    format!(
                        "| {} | {} | {} | {} | {} | {} |",
                        r.measured, r.ours, r.reference, r.versus, r.others, r.section
                    )
                })
                .collect();
            format!(
                "### {machine}\n\nFrom {}.\n\n| measured | ours | reference | ours against the reference | others (their time / ours) | section |\n| --- | ---: | ---: | --- | --- | --- |\n{}",
                names.join(", "),
                lines.join("\n")
            )
        })
        .collect();
    template::render(NAME, &[("machines", tables.join("\n\n")), ("absent", absent(benchmarks)?)])
}

/// The suites with a template but no section in `benchmarks`, as one sentence.
fn absent(benchmarks: &str) -> Result<String> {
    let present: Vec<&str> = sections::all(benchmarks).into_iter().map(|(name, _)| name).collect();
    let missing: Vec<String> = sections::template_names()?
        .into_iter()
        .filter(|name| name != NAME && !present.contains(&name.as_str()))
        .map(|name| format!("`{name}`"))
        .collect();
    Ok(match missing.as_slice() {
        [] => "Every suite has a section below.".to_owned(),
        names => format!(
            "No section here (no run on the MLX the reference pins): {}; `cargo xtask bench NAME` measures one.",
            names.join(", ")
        ),
    })
}

/// Rewrites the summary of BENCHMARKS.md from its sections (inserted below the title if
/// absent).
pub fn write() -> Result<()> {
    let path = root().join("BENCHMARKS.md");
    let text = fs::read_to_string(&path).map_err(|e| format!("{}: {e}", path.display()))?;
    let content = render(&text)?;
    fs::write(&path, sections::splice(&text, NAME, COMMAND, &content, true))
        .map_err(|e| format!("writing {}: {e}", path.display()))
}

/// Why the summary of `benchmarks` is not what its sections give, if it is not.
pub fn check(benchmarks: &str) -> Result<Option<String>> {
    let fix = format!("run `{COMMAND}`");
    let expected = render(benchmarks)?;
    let Some(actual) = sections::section(benchmarks, NAME) else {
        return Ok(Some(format!("there is no summary section: {fix}")));
    };
    let (expected, actual) = (expected.trim_end(), actual.trim_end());
    if expected == actual {
        return Ok(None);
    }
    let differs = expected.lines().zip(actual.lines()).find(|(e, a)| e != a);
    Ok(Some(match differs {
        Some((e, a)) => format!("the summary does not quote its sections (it has `{a}` where they give `{e}`): {fix}"),
        None => format!("the summary does not quote its sections (its length differs): {fix}"),
    }))
}

/// The machine a section ran on: its `Machine:` line up to the first `;`.
fn machine(body: &str) -> Option<String> {
    let line = body.lines().find_map(|line| line.strip_prefix("Machine: "))?;
    Some(line.split(';').next().unwrap_or(line).trim().trim_end_matches('.').to_owned())
}

/// The rows section `name` contributes.
fn rows(name: &str, body: &str) -> Result<Vec<Row>> {
    match name {
        "e2e" | "e2e-high-budget" => encoder_rows(name, body),
        "kernels" => kernel_rows(body),
        "preprocess" => preprocess_rows(body),
        "mlx-vlm" => mlx_vlm_rows(body),
        _ => Ok(vec![Row {
            measured: format!("see the section `{name}`"),
            ours: "—".into(),
            reference: "—".into(),
            versus: "—".into(),
            others: "—".into(),
            section: format!("`{name}`"),
        }]),
    }
}

/// The first table of `body` with every column of `columns`.
fn table_with<'a>(body: &'a str, columns: &[&str]) -> Result<Table<'a>> {
    tables(body)
        .into_iter()
        .find(|t| t.has_columns(columns))
        .ok_or_else(|| format!("no table with columns {columns:?}"))
}

/// A cell that must be there.
fn cell<'a>(table: &Table<'a>, row: &[&'a str], column: &str) -> Result<&'a str> {
    table.cell(row, column).ok_or_else(|| format!("a row without a `{column}` cell: {row:?}"))
}

/// The number a cell begins with (`4.285`, `295.5 GFLOP/s`, `5.0x`, `219.51 s`).
fn number(cell: &str) -> Result<f64> {
    let end = cell.find(|c: char| !(c.is_ascii_digit() || c == '.')).unwrap_or(cell.len());
    cell[..end].parse().map_err(|_| format!("`{cell}` is not a figure"))
}

/// `reference / ours` for times: how many times faster ours is (or slower).
fn faster(reference: f64, ours: f64) -> String {
    if reference >= ours {
        format!("{} faster", times(reference / ours))
    } else {
        format!("{} slower", times(ours / reference))
    }
}

/// A ratio as the summary prints it: whole above 10, one decimal below.
fn times(ratio: f64) -> String {
    if ratio >= 10.0 { format!("{ratio:.0}×") } else { format!("{ratio:.1}×") }
}

/// `e2e` and `e2e-high-budget`: one row per model, image and budget (and one for f32 where both
/// ours and mlx-vlm ran it).
fn encoder_rows(name: &str, body: &str) -> Result<Vec<Row>> {
    let main = table_with(body, &["model", "image", "budget", "side", "median (s)", "run"])?;
    let quantized = table_with(body, &["model", "image", "budget", "side", "× bf16 model"]).ok();
    let key = |row: &[&str]| -> Result<(String, String, String)> {
        Ok((cell(&main, row, "model")?.into(), cell(&main, row, "image")?.into(), cell(&main, row, "budget")?.into()))
    };
    let mut keys: Vec<(String, String, String)> = Vec::new();
    for row in &main.rows {
        let k = key(row)?;
        if !keys.contains(&k) {
            keys.push(k);
        }
    }
    let mut out = Vec::new();
    for k in keys {
        let (model, image, budget) = &k;
        let mut group = Vec::new();
        for row in &main.rows {
            if key(row)? == k {
                group.push(row);
            }
        }
        let side = |wanted: &str| group.iter().copied().find(|r| main.cell(r, "side") == Some(wanted));
        let Some(native) = side(OURS_NATIVE) else { continue };
        let f32_pair = side(OURS_F32).zip(side(REFERENCE_F32));
        let ours = number(cell(&main, native, "median (s)")?)?;
        let mut others = Vec::new();
        for row in &group {
            let side_name = cell(&main, row, "side")?;
            let paired = [OURS_NATIVE, REFERENCE_BF16, REFERENCE_F32].contains(&side_name)
                || (f32_pair.is_some() && side_name == OURS_F32);
            if !paired {
                let median = cell(&main, row, "median (s)")?;
                others.push(format!("{side_name} {median} s ({:.2})", number(median)? / ours));
            }
        }
        if let Some(q) = &quantized {
            let same = |r: &&Vec<&str>| {
                [("model", model.as_str()), ("image", image), ("budget", budget), ("side", OURS_NATIVE)]
                    .iter()
                    .all(|(column, value)| q.cell(r, column) == Some(value))
            };
            if let Some(row) = q.rows.iter().find(same) {
                others.push(format!("its bf16 model's time × {}", cell(q, row, "× bf16 model")?));
            }
        }
        let versus = |ours_row: &[&str], reference: Option<&&Vec<&str>>| -> Result<(String, String, String)> {
            let ours = number(cell(&main, ours_row, "median (s)")?)?;
            let ours_run = cell(&main, ours_row, "run")?;
            Ok(match reference {
                Some(r) => {
                    let median = cell(&main, r, "median (s)")?;
                    let run = cell(&main, r, "run")?;
                    let runs = if run == ours_run { format!("run {run}") } else { format!("runs {ours_run}, {run}") };
                    (format!("{median} s"), faster(number(median)?, ours), format!("`{name}` {runs}"))
                }
                None => ("—".into(), "—".into(), format!("`{name}` run {ours_run}")),
            })
        };
        let (reference, against, section) = versus(native, side(REFERENCE_BF16).as_ref())?;
        out.push(Row {
            measured: format!("{model}, {image} @ {budget}: s per image, native (bf16)"),
            ours: format!("{} s", cell(&main, native, "median (s)")?),
            reference,
            versus: against,
            others: if others.is_empty() { "—".into() } else { others.join("; ") },
            section,
        });
        if let Some((ours_f32, reference_f32)) = f32_pair {
            let (reference, against, section) = versus(ours_f32, Some(&reference_f32))?;
            out.push(Row {
                measured: format!("{model}, {image} @ {budget}: s per image, f32"),
                ours: format!("{} s", cell(&main, ours_f32, "median (s)")?),
                reference,
                versus: against,
                others: "—".into(),
                section,
            });
        }
    }
    Ok(out)
}

/// The group a kernel benchmark id belongs to: its first component (`gemm/e2b/bf16/…` →
/// `gemm`, `layer_norm/float32 [2394, 768]` → `layer_norm`), with the dtype and mode for
/// `quantized` (`quantized/e2b/tower/bf16 affine4g64/…` → `quantized bf16 affine4g64`).
fn kernel_group(id: &str) -> String {
    let parts: Vec<&str> = id.split('/').collect();
    let first = parts[0].split_whitespace().next().unwrap_or(parts[0]);
    match (first, parts.get(3)) {
        ("quantized", Some(mode)) => format!("quantized {mode}"),
        _ => first.to_owned(),
    }
}

/// `min–max` of a column's cells (as written), by the number each begins with.
fn range(cells: &[&str]) -> Result<String> {
    let mut numbered = cells.iter().map(|c| Ok((number(c)?, *c))).collect::<Result<Vec<_>>>()?;
    numbered.sort_by(|a, b| a.0.total_cmp(&b.0));
    let (Some((_, low)), Some((_, high))) = (numbered.first(), numbered.last()) else { return Ok("—".into()) };
    if low == high {
        return Ok((*low).to_owned());
    }
    Ok(match (low.split_once(' '), high.split_once(' ')) {
        (Some((low_figure, a)), Some((_, b))) if a == b => format!("{low_figure}–{high}"),
        _ => format!("{low}–{high}"),
    })
}

/// `kernels`: one row per kernel group, over its benchmarks with an MLX counterpart.
fn kernel_rows(body: &str) -> Result<Vec<Row>> {
    let table = table_with(body, &["benchmark", "ours", "MLX", "ours / MLX", "% GEMM peak"])?;
    let mut groups: Vec<(String, Vec<&Vec<&str>>)> = Vec::new();
    for row in &table.rows {
        if cell(&table, row, "MLX")? == "—" {
            continue;
        }
        let group = kernel_group(cell(&table, row, "benchmark")?);
        match groups.iter_mut().find(|(g, _)| *g == group) {
            Some((_, rows)) => rows.push(row),
            None => groups.push((group, vec![row])),
        }
    }
    groups
        .iter()
        .map(|(group, rows)| {
            let column = |name: &str| -> Result<Vec<&str>> {
                rows.iter().map(|r| cell(&table, r, name)).filter(|c| c.as_ref().map_or(true, |c| *c != "—")).collect()
            };
            let peak = column("% GEMM peak")?;
            Ok(Row {
                measured: match rows.len() {
                    1 => format!("{group} (1 benchmark)"),
                    n => format!("{group} ({n} benchmarks)"),
                },
                ours: range(&column("ours")?)?,
                reference: range(&column("MLX")?)?,
                versus: format!("{} of MLX's time", range(&column("ours / MLX")?)?),
                others: if peak.is_empty() { "—".into() } else { format!("{} of the GEMM peak", range(&peak)?) },
                section: "`kernels`".into(),
            })
        })
        .collect()
}

/// `preprocess`: one row per input and budget, ours on one core against the reference.
fn preprocess_rows(body: &str) -> Result<Vec<Row>> {
    let table = table_with(body, &["input", "budget", "reference (ms)"])?;
    let ours: Vec<usize> = (0..table.header.len())
        .filter(|&i| table.header[i].starts_with("ours, ") && table.header[i].ends_with(" (ms)"))
        .collect();
    let [one, more] = ours[..] else { return Err(format!("expected two `ours, N core(s) (ms)` columns: {ours:?}")) };
    let label = |i: usize| table.header[i].trim_start_matches("ours, ").trim_end_matches(" (ms)");
    fn at<'a>(row: &[&'a str], i: usize) -> Result<&'a str> {
        row.get(i).copied().ok_or_else(|| format!("a short row: {row:?}"))
    }
    table
        .rows
        .iter()
        .map(|row| {
            Ok(Row {
                measured: format!(
                    "{} @ {}: ms per image, {}",
                    cell(&table, row, "input")?,
                    cell(&table, row, "budget")?,
                    label(one)
                ),
                ours: format!("{} ms", at(row, one)?),
                reference: format!("{} ms", cell(&table, row, "reference (ms)")?),
                versus: format!("{} faster", at(row, one + 1)?.replace('x', "×")),
                others: format!(
                    "ours, {}: {} ms ({} faster)",
                    label(more),
                    at(row, more)?,
                    at(row, more + 1)?.replace('x', "×")
                ),
                section: "`preprocess`".into(),
            })
        })
        .collect()
}

/// `mlx-vlm`: the time to first token and the decode rate, accelerated against stock.
fn mlx_vlm_rows(body: &str) -> Result<Vec<Row>> {
    let table = table_with(body, &["run", "time to first token", "decode tokens/s"])?;
    let find = |word: &str| {
        table
            .rows
            .iter()
            .find(|r| table.cell(r, "run").is_some_and(|c| c.contains(word)))
            .ok_or_else(|| format!("no `{word}` row"))
    };
    let (stock, ours) = (find("stock")?, find("accelerate")?);
    let identical = body
        .lines()
        .find_map(|line| line.strip_prefix("Identical tokens: "))
        .and_then(|rest| rest.split('.').next())
        .ok_or("no `Identical tokens:` line")?;
    let (first_ours, first_stock) =
        (cell(&table, ours, "time to first token")?, cell(&table, stock, "time to first token")?);
    let (rate_ours, rate_stock) = (cell(&table, ours, "decode tokens/s")?, cell(&table, stock, "decode tokens/s")?);
    let section = "`mlx-vlm`".to_owned();
    Ok(vec![
        Row {
            measured: "mlx-vlm's generation: time to first token".into(),
            ours: first_ours.into(),
            reference: first_stock.into(),
            versus: faster(number(first_stock)?, number(first_ours)?),
            others: format!("identical tokens: {identical}"),
            section: section.clone(),
        },
        Row {
            measured: "mlx-vlm's generation: decode tokens/s (mlx-vlm's own)".into(),
            ours: rate_ours.into(),
            reference: rate_stock.into(),
            versus: format!("{} the rate", times(number(rate_ours)? / number(rate_stock)?)),
            others: "—".into(),
            section,
        },
    ])
}

#[cfg(test)]
mod tests;
