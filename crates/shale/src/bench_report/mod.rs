//! `shale bench report`: turns benchmark runs into a table of ratios of a baseline engine
//! (Shale) to each peer, and one throughput-per-interval chart per benchmark.
//!
//! - [`parse`]: `--json_out` files, and `db_bench`-shaped stdout with its report CSV.
//! - [`table`]: medians per (engine, benchmark) and the ratio rows.
//! - [`svg`]: the charts.

mod parse;
mod svg;
mod table;

use std::io::Write as _;
use std::path::{Path, PathBuf};

use clap::Args;

use crate::output::Failure;

/// Flags of `shale bench report`.
#[derive(Debug, Args)]
pub struct BenchReportArgs {
    /// Result files: `shale bench --json_out` output (one JSON object per line), or stdout
    /// of `db_bench` / `shale bench`; for `X.txt`, the report CSV `X.csv` beside it is read
    /// too when it exists.
    #[arg(required = true, value_name = "FILE")]
    pub files: Vec<PathBuf>,
    /// The engine the ratios put on top (ratio = baseline / peer).
    #[arg(long, value_name = "ENGINE", default_value = "shale")]
    pub baseline: String,
    /// Print the table as JSON instead.
    #[arg(long)]
    pub json: bool,
    /// Write one SVG chart of throughput per interval for each benchmark there
    /// (`BENCHMARK.svg`); benchmarks without intervals get none.
    #[arg(long = "svg_dir", value_name = "DIR")]
    pub svg_dir: Option<PathBuf>,
}

fn read(path: &Path) -> Result<String, Failure> {
    std::fs::read_to_string(path)
        .map_err(|e| Failure::error(format!("reading {} failed: {e}", path.display())))
}

/// Every run in `path`, whichever kind of file it is.
fn runs_of(path: &Path) -> Result<Vec<parse::Run>, Failure> {
    let text = read(path)?;
    let source = path.display().to_string();
    let runs = if text.trim_start().starts_with('{') {
        parse::json_lines(&text, &source)
    } else {
        let csv_path = path.with_extension("csv");
        let csv = if csv_path != path && csv_path.is_file() {
            Some(read(&csv_path)?)
        } else {
            None
        };
        parse::db_bench_output(&text, csv.as_deref(), &source)
    };
    runs.map_err(Failure::error)
}

/// Runs the command.
pub fn run(args: &BenchReportArgs) -> Result<(), Failure> {
    let mut runs = Vec::new();
    for path in &args.files {
        runs.extend(runs_of(path)?);
    }
    let medians = table::medians(&runs);
    if !medians.iter().any(|m| m.engine == args.baseline) {
        let engines: Vec<&str> = medians.iter().map(|m| m.engine.as_str()).collect();
        return Err(Failure::error(format!(
            "--baseline={}: no runs of that engine (the files hold: {})",
            args.baseline,
            engines.join(", ")
        )));
    }
    let rows = table::ratio_rows(&medians, &args.baseline);
    let text = if args.json {
        format!("{:#}\n", table::to_json(&rows, &args.baseline))
    } else {
        table::human(&rows, &args.baseline)
    };
    let mut out = std::io::stdout().lock();
    out.write_all(text.as_bytes())?;
    out.flush()?;
    if let Some(dir) = &args.svg_dir {
        write_charts(dir, &medians)?;
    }
    Ok(())
}

fn write_charts(dir: &Path, medians: &[table::Medians]) -> Result<(), Failure> {
    std::fs::create_dir_all(dir)
        .map_err(|e| Failure::error(format!("creating {} failed: {e}", dir.display())))?;
    let mut benchmarks: Vec<&str> = Vec::new();
    for m in medians {
        if !benchmarks.contains(&m.benchmark.as_str()) {
            benchmarks.push(&m.benchmark);
        }
    }
    for benchmark in benchmarks {
        let series: Vec<(&str, &[(f64, f64)])> = medians
            .iter()
            .filter(|m| m.benchmark == benchmark && !m.intervals.is_empty())
            .map(|m| (m.engine.as_str(), m.intervals.as_slice()))
            .collect();
        if series.is_empty() {
            continue;
        }
        // Names come from the input files: keep them to one plain file name.
        let file_name: String = benchmark
            .chars()
            .map(|c| {
                if c.is_ascii_alphanumeric() || c == '-' || c == '_' {
                    c
                } else {
                    '_'
                }
            })
            .collect();
        let path = dir.join(format!("{file_name}.svg"));
        std::fs::write(&path, svg::throughput_chart(benchmark, &series))
            .map_err(|e| Failure::error(format!("writing {} failed: {e}", path.display())))?;
    }
    Ok(())
}
