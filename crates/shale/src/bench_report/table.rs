//! Medians over repeated runs per (engine, benchmark), and the ratios of a baseline engine
//! (Shale) to each peer.
//!
//! Each figure's median is taken over the runs that have it, on its own (the median p99 may
//! come from another run than the median throughput). The interval series shown is the one
//! of the run whose throughput is the median (the lower middle one for an even count).
//! A ratio is baseline / peer: above 1 means Shale has more of it (better for throughput,
//! worse for latency, bytes, write-amp and size).
//!
//! Write-amp compares engines only when both wrote about the same user bytes: readwhilewriting's
//! writer runs as long as the reads do, so a faster reader writes less, and the two engines stop
//! at different points of their flush and compaction cycles (a window with or without one
//! compaction of the base level differs by more than the engines do). Such a ratio is marked.

use serde_json::{json, Value};

use super::parse::Run;

/// The medians of one engine on one benchmark.
#[derive(Debug, Clone, PartialEq)]
pub struct Medians {
    pub engine: String,
    pub benchmark: String,
    pub runs: usize,
    /// ops/s, p99, p99.9, user bytes written, process bytes written, write-amp, db size.
    pub figures: [Option<f64>; FIGURE_COUNT],
    pub intervals: Vec<(f64, f64)>,
}

const FIGURE_COUNT: usize = 7;

/// The figures' names, as in the table and the JSON.
pub const FIGURES: [&str; FIGURE_COUNT] = [
    "ops_per_sec",
    "p99_micros",
    "p999_micros",
    "user_bytes_written",
    "process_bytes_written",
    "write_amp",
    "db_size_bytes",
];

const USER_BYTES: usize = 3;
const WRITE_AMP: usize = 5;

/// How far apart (as a ratio) the two engines' user bytes may be for their write-amp to be
/// compared without a mark.
const COMPARABLE_USER_BYTES: std::ops::RangeInclusive<f64> = 0.95..=1.05;

fn figures(run: &Run) -> [Option<f64>; FIGURE_COUNT] {
    [
        Some(run.ops_per_sec),
        run.p99_micros,
        run.p999_micros,
        run.user_bytes_written,
        run.process_bytes_written,
        run.write_amp,
        run.db_size_bytes,
    ]
}

fn median(mut values: Vec<f64>) -> Option<f64> {
    values.sort_by(f64::total_cmp);
    let n = values.len();
    match n {
        0 => None,
        _ if n % 2 == 1 => Some(values[n / 2]),
        _ => Some(f64::midpoint(values[n / 2 - 1], values[n / 2])),
    }
}

/// Medians per (engine, benchmark), benchmarks and engines in the order first seen.
pub fn medians(runs: &[Run]) -> Vec<Medians> {
    let mut keys: Vec<(&str, &str)> = Vec::new();
    for run in runs {
        let key = (run.benchmark.as_str(), run.engine.as_str());
        if !keys.contains(&key) {
            keys.push(key);
        }
    }
    // Group by benchmark first, keeping each benchmark's engines in first-seen order.
    let mut ordered: Vec<(&str, &str)> = Vec::new();
    for (benchmark, _) in &keys {
        for key in keys.iter().filter(|(b, _)| b == benchmark) {
            if !ordered.contains(key) {
                ordered.push(*key);
            }
        }
    }
    ordered
        .into_iter()
        .map(|(benchmark, engine)| {
            let group: Vec<&Run> = runs
                .iter()
                .filter(|r| r.benchmark == benchmark && r.engine == engine)
                .collect();
            let per_run: Vec<[Option<f64>; FIGURE_COUNT]> =
                group.iter().map(|r| figures(r)).collect();
            let figures =
                std::array::from_fn(|i| median(per_run.iter().filter_map(|f| f[i]).collect()));
            let mut by_speed = group.clone();
            by_speed.sort_by(|a, b| a.ops_per_sec.total_cmp(&b.ops_per_sec));
            let middle = by_speed[(by_speed.len() - 1) / 2];
            Medians {
                engine: engine.to_string(),
                benchmark: benchmark.to_string(),
                runs: group.len(),
                figures,
                intervals: middle.intervals.clone(),
            }
        })
        .collect()
}

/// The baseline engine against one peer on one benchmark.
#[derive(Debug, Clone, PartialEq)]
pub struct RatioRow<'a> {
    pub baseline: &'a Medians,
    pub peer: &'a Medians,
    /// baseline / peer for each of [`FIGURES`], where both are known and the peer's is not 0.
    pub ratios: [Option<f64>; FIGURE_COUNT],
}

impl RatioRow<'_> {
    /// Whether the write-amp ratio compares like with like: both engines wrote user bytes
    /// within 5% of each other. `None` when either count is unknown.
    pub fn write_amp_comparable(&self) -> Option<bool> {
        self.ratios[USER_BYTES].map(|ratio| COMPARABLE_USER_BYTES.contains(&ratio))
    }
}

/// One row per (benchmark, peer) where `baseline` ran the benchmark too.
pub fn ratio_rows<'a>(medians: &'a [Medians], baseline: &str) -> Vec<RatioRow<'a>> {
    let mut rows = Vec::new();
    for base in medians.iter().filter(|m| m.engine == baseline) {
        for peer in medians
            .iter()
            .filter(|m| m.benchmark == base.benchmark && m.engine != baseline)
        {
            let ratios = std::array::from_fn(|i| match (base.figures[i], peer.figures[i]) {
                (Some(b), Some(p)) if p != 0.0 => Some(b / p),
                _ => None,
            });
            rows.push(RatioRow {
                baseline: base,
                peer,
                ratios,
            });
        }
    }
    rows
}

fn cell(value: Option<f64>) -> String {
    value.map_or_else(|| "-".to_string(), |v| format!("{v:.2}"))
}

/// The table for people.
pub fn human(rows: &[RatioRow<'_>], baseline: &str) -> String {
    use std::fmt::Write as _;
    let mut text = format!(
        "medians; ratio = {baseline} / peer (ops/s above 1: {baseline} faster; the others \
         below 1: {baseline} smaller)\n"
    );
    let _ = writeln!(
        text,
        "{:<17} {:<9} {:>4} {:>12} {:>12} {:>7} {:>7} {:>7} {:>7} {:>7} {:>7} {:>7}",
        "benchmark",
        "peer",
        "runs",
        format!("{baseline} ops/s"),
        "peer ops/s",
        "ops/s",
        "p99",
        "p99.9",
        "user",
        "bytes",
        "w-amp",
        "size"
    );
    for row in rows {
        let ops = |m: &Medians| m.figures[0].map_or_else(|| "-".into(), |v| format!("{v:.0}"));
        let _ = write!(
            text,
            "{:<17} {:<9} {:>4} {:>12} {:>12}",
            row.baseline.benchmark,
            row.peer.engine,
            format!("{}/{}", row.baseline.runs, row.peer.runs),
            ops(row.baseline),
            ops(row.peer),
        );
        for (i, ratio) in row.ratios.into_iter().enumerate() {
            let mut value = cell(ratio);
            if i == WRITE_AMP && ratio.is_some() && row.write_amp_comparable() == Some(false) {
                value.push('*');
            }
            let _ = write!(text, " {value:>7}");
        }
        text.push('\n');
    }
    if rows.iter().any(|r| r.write_amp_comparable() == Some(false)) {
        text.push_str(
            "* the engines wrote different user bytes (\"user\" ratio), so they stopped at \
             different points of their flush and compaction cycles: compare write-amp at equal \
             user bytes (--duration with --benchmark_write_rate_limit; scripts/peer-rww-wamp.sh)\n",
        );
    }
    text
}

/// The table as JSON: medians of both sides and the ratios, per row.
pub fn to_json(rows: &[RatioRow<'_>], baseline: &str) -> Value {
    let named = |values: &[Option<f64>; FIGURE_COUNT]| {
        let mut map = serde_json::Map::new();
        for (name, value) in FIGURES.iter().zip(values) {
            map.insert((*name).to_string(), json!(value));
        }
        Value::Object(map)
    };
    json!({
        "baseline": baseline,
        "rows": rows.iter().map(|row| json!({
            "benchmark": row.baseline.benchmark,
            "peer": row.peer.engine,
            "runs": {"baseline": row.baseline.runs, "peer": row.peer.runs},
            "baseline_medians": named(&row.baseline.figures),
            "peer_medians": named(&row.peer.figures),
            "ratios": named(&row.ratios),
            "write_amp_comparable": row.write_amp_comparable(),
        })).collect::<Vec<_>>(),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn run(engine: &str, benchmark: &str, ops: f64, p99: f64, intervals: f64) -> Run {
        Run {
            engine: engine.into(),
            benchmark: benchmark.into(),
            ops_per_sec: ops,
            p99_micros: Some(p99),
            p999_micros: None,
            user_bytes_written: Some(1000.0),
            process_bytes_written: Some(ops * 10.0),
            write_amp: Some(2.0),
            db_size_bytes: Some(100.0),
            intervals: vec![(1.0, intervals)],
        }
    }

    #[test]
    fn medians_per_engine_and_benchmark_and_the_median_runs_intervals() {
        let runs = vec![
            run("shale", "fillrandom", 300.0, 10.0, 3.0),
            run("redb", "fillrandom", 100.0, 40.0, 1.0),
            run("shale", "fillrandom", 100.0, 30.0, 1.0),
            run("shale", "fillrandom", 200.0, 20.0, 2.0),
            run("shale", "readrandom", 50.0, 5.0, 5.0),
            run("redb", "fillrandom", 200.0, 20.0, 2.0),
        ];
        let medians = medians(&runs);
        let names: Vec<(&str, &str, usize)> = medians
            .iter()
            .map(|m| (m.benchmark.as_str(), m.engine.as_str(), m.runs))
            .collect();
        assert_eq!(
            names,
            vec![
                ("fillrandom", "shale", 3),
                ("fillrandom", "redb", 2),
                ("readrandom", "shale", 1)
            ]
        );
        assert_eq!(medians[0].figures[0], Some(200.0));
        assert_eq!(medians[0].figures[1], Some(20.0));
        assert_eq!(medians[0].figures[2], None);
        assert_eq!(medians[0].intervals, vec![(1.0, 2.0)]);
        // Two runs: the mean of the middle two; the slower run's series.
        assert_eq!(medians[1].figures[0], Some(150.0));
        assert_eq!(medians[1].intervals, vec![(1.0, 1.0)]);

        let rows = ratio_rows(&medians, "shale");
        assert_eq!(rows.len(), 1, "readrandom has no peer");
        let ratios = rows[0].ratios;
        assert!((ratios[0].unwrap() - 200.0 / 150.0).abs() < 1e-12);
        assert!((ratios[1].unwrap() - 20.0 / 30.0).abs() < 1e-12);
        assert_eq!(ratios[2], None);
        assert_eq!(ratios[3], Some(1.0));
        assert!((ratios[4].unwrap() - 2000.0 / 1500.0).abs() < 1e-12);
        assert_eq!((ratios[5], ratios[6]), (Some(1.0), Some(1.0)));
        assert_eq!(rows[0].write_amp_comparable(), Some(true));

        let text = human(&rows, "shale");
        let line = text.lines().nth(2).unwrap();
        assert!(
            line.starts_with("fillrandom        redb       3/2"),
            "{line}"
        );
        assert!(line.contains(" 1.33 "), "{line}");
        assert!(!text.contains('*'), "{text}");
        let value = to_json(&rows, "shale");
        assert_eq!(value["rows"][0]["peer"], "redb");
        assert_eq!(value["rows"][0]["ratios"]["write_amp"], 1.0);
        assert_eq!(value["rows"][0]["ratios"]["p999_micros"], Value::Null);
        assert_eq!(value["rows"][0]["write_amp_comparable"], true);
    }

    #[test]
    fn write_amp_of_unequal_user_bytes_is_marked() {
        let mut shale = run("shale", "readwhilewriting", 200.0, 10.0, 1.0);
        let mut peer = run("rocksdb", "readwhilewriting", 100.0, 20.0, 1.0);
        shale.user_bytes_written = Some(700.0);
        peer.user_bytes_written = Some(1000.0);
        let both = medians(&[shale.clone(), peer.clone()]);
        let rows = ratio_rows(&both, "shale");
        assert_eq!(rows[0].write_amp_comparable(), Some(false));
        let text = human(&rows, "shale");
        let line = text.lines().nth(2).unwrap();
        assert!(line.contains(" 0.70 "), "the user bytes ratio: {line}");
        assert!(line.contains(" 1.00* "), "the marked write-amp: {line}");
        assert!(
            text.contains("* the engines wrote different user bytes"),
            "{text}"
        );
        assert_eq!(
            to_json(&rows, "shale")["rows"][0]["write_amp_comparable"],
            false
        );

        // Within 5%: compared as is; unknown user bytes: neither marked nor claimed.
        shale.user_bytes_written = Some(980.0);
        let both = medians(&[shale.clone(), peer.clone()]);
        assert_eq!(
            ratio_rows(&both, "shale")[0].write_amp_comparable(),
            Some(true)
        );
        shale.user_bytes_written = None;
        let both = medians(&[shale, peer]);
        let rows = ratio_rows(&both, "shale");
        assert_eq!(rows[0].write_amp_comparable(), None);
        assert!(!human(&rows, "shale").contains('*'));
    }
}
