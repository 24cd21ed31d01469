//! A line chart of throughput per interval over a benchmark, one polyline per engine, as
//! plain SVG: title, axes with five ticks each, a legend. Written by hand (a plotting crate
//! would be the largest dependency of the binary for one chart type).

use std::fmt::Write as _;

const WIDTH: f64 = 760.0;
const HEIGHT: f64 = 420.0;
const LEFT: f64 = 80.0;
const RIGHT: f64 = 150.0;
const TOP: f64 = 40.0;
const BOTTOM: f64 = 50.0;
const TICKS: u32 = 5;
/// Line colours, one per engine in order (colour-blind-safe Okabe-Ito).
const COLOURS: [&str; 6] = [
    "#0072b2", "#d55e00", "#009e73", "#cc79a7", "#e69f00", "#56b4e9",
];

fn escape(text: &str) -> String {
    text.replace('&', "&amp;")
        .replace('<', "&lt;")
        .replace('>', "&gt;")
        .replace('"', "&quot;")
}

/// A round number at or above `value` (1, 2 or 5 times a power of ten), for the axis end.
fn nice_ceiling(value: f64) -> f64 {
    if value <= 0.0 || !value.is_finite() {
        return 1.0;
    }
    let power = 10f64.powf(value.log10().floor());
    [1.0, 2.0, 5.0, 10.0]
        .into_iter()
        .map(|step| step * power)
        .find(|candidate| *candidate >= value)
        .unwrap_or(10.0 * power)
}

/// `1234567` as `1.235M`, for tick labels.
fn short(value: f64) -> String {
    let (scaled, unit) = match value {
        v if v >= 1e6 => (v / 1e6, "M"),
        v if v >= 1e3 => (v / 1e3, "k"),
        v => (v, ""),
    };
    let digits = format!("{scaled:.3}");
    let digits = digits.trim_end_matches('0').trim_end_matches('.');
    format!("{digits}{unit}")
}

/// The chart of `series` (`(engine, [(secs, ops/s)])`) for `benchmark`.
pub fn throughput_chart(benchmark: &str, series: &[(&str, &[(f64, f64)])]) -> String {
    let points = series.iter().flat_map(|(_, points)| points.iter());
    let (max_x, max_y) = points.fold((0.0f64, 0.0f64), |(x, y), (px, py)| {
        (x.max(*px), y.max(*py))
    });
    let (max_x, max_y) = (nice_ceiling(max_x), nice_ceiling(max_y));
    let plot_width = WIDTH - LEFT - RIGHT;
    let plot_height = HEIGHT - TOP - BOTTOM;
    let x_of = |secs: f64| LEFT + secs / max_x * plot_width;
    let y_of = |qps: f64| TOP + plot_height - qps / max_y * plot_height;
    let mut svg = String::new();
    let _ = writeln!(
        svg,
        r#"<svg xmlns="http://www.w3.org/2000/svg" width="{WIDTH}" height="{HEIGHT}" viewBox="0 0 {WIDTH} {HEIGHT}" font-family="sans-serif" font-size="12">"#
    );
    let _ = writeln!(
        svg,
        r#"<rect width="{WIDTH}" height="{HEIGHT}" fill="white"/>"#
    );
    let _ = writeln!(
        svg,
        r#"<text x="{}" y="24" text-anchor="middle" font-size="15">{}: throughput per interval</text>"#,
        LEFT + plot_width / 2.0,
        escape(benchmark)
    );
    // Grid lines and tick labels.
    for tick in 0..=TICKS {
        let share = f64::from(tick) / f64::from(TICKS);
        let y = y_of(share * max_y);
        let x = x_of(share * max_x);
        let _ = writeln!(
            svg,
            r##"<line x1="{LEFT}" y1="{y:.1}" x2="{:.1}" y2="{y:.1}" stroke="#ddd"/><text x="{:.1}" y="{:.1}" text-anchor="end">{}</text>"##,
            LEFT + plot_width,
            LEFT - 6.0,
            y + 4.0,
            short(share * max_y)
        );
        let _ = writeln!(
            svg,
            r#"<text x="{x:.1}" y="{:.1}" text-anchor="middle">{}</text>"#,
            TOP + plot_height + 18.0,
            short(share * max_x)
        );
    }
    let _ = writeln!(
        svg,
        r#"<path d="M{LEFT},{TOP} V{:.1} H{:.1}" fill="none" stroke="black"/>"#,
        TOP + plot_height,
        LEFT + plot_width
    );
    let _ = writeln!(
        svg,
        r#"<text x="{:.1}" y="{:.1}" text-anchor="middle">seconds</text>"#,
        LEFT + plot_width / 2.0,
        HEIGHT - 10.0
    );
    let _ = writeln!(
        svg,
        r#"<text transform="translate(18 {:.1}) rotate(-90)" text-anchor="middle">ops/s</text>"#,
        TOP + plot_height / 2.0
    );
    for (index, (engine, points)) in series.iter().enumerate() {
        let colour = COLOURS[index % COLOURS.len()];
        let coordinates: Vec<String> = points
            .iter()
            .map(|(secs, qps)| format!("{:.1},{:.1}", x_of(*secs), y_of(*qps)))
            .collect();
        let _ = writeln!(
            svg,
            r#"<polyline data-engine="{}" fill="none" stroke="{colour}" stroke-width="2" points="{}"/>"#,
            escape(engine),
            coordinates.join(" ")
        );
        let legend_y = TOP + 10.0 + 20.0 * index as f64;
        let legend_x = LEFT + plot_width + 16.0;
        let _ = writeln!(
            svg,
            r#"<line x1="{legend_x}" y1="{legend_y}" x2="{:.1}" y2="{legend_y}" stroke="{colour}" stroke-width="3"/><text x="{:.1}" y="{:.1}">{}</text>"#,
            legend_x + 22.0,
            legend_x + 28.0,
            legend_y + 4.0,
            escape(engine)
        );
    }
    svg.push_str("</svg>\n");
    svg
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn axis_ends_are_round_numbers() {
        assert!((nice_ceiling(0.0) - 1.0).abs() < 1e-12);
        assert!((nice_ceiling(7.0) - 10.0).abs() < 1e-9);
        assert!((nice_ceiling(123_000.0) - 200_000.0).abs() < 1e-6);
        assert!((nice_ceiling(400_000.0) - 500_000.0).abs() < 1e-6);
        assert_eq!(short(200_000.0), "200k");
        assert_eq!(short(1_500_000.0), "1.5M");
        assert_eq!(short(40.0), "40");
    }

    #[test]
    fn chart_has_a_polyline_per_engine_scaled_into_the_plot() {
        let shale = [(0.0, 0.0), (10.0, 100.0)];
        let redb = [(5.0, 50.0)];
        let svg = throughput_chart("fill<random>", &[("shale", &shale), ("redb", &redb)]);
        assert!(svg.starts_with("<svg "));
        assert!(svg.trim_end().ends_with("</svg>"));
        assert!(svg.contains("fill&lt;random&gt;: throughput per interval"));
        assert_eq!(svg.matches("<polyline ").count(), 2);
        // x 0..10 s and y 0..100 ops/s span the plot's corners.
        assert!(
            svg.contains(
                r##"data-engine="shale" fill="none" stroke="#0072b2" stroke-width="2" points="80.0,370.0 610.0,40.0""##
            ),
            "{svg}"
        );
        assert!(svg.contains(r#"points="345.0,205.0""#));
        assert!(svg.contains(">redb</text>"));
    }
}
