//! The report's SVG bar chart: mean bytes per packet, log scale, one group
//! of bars per scenario, one colour per codec.

use std::path::Path;

use plotters::coord::Shift;
use plotters::prelude::*;

use crate::methods::Res;
use crate::ScenarioResult;

const WIDTH: u32 = 1280;
const HEIGHT: u32 = 620;
const LEGEND: u32 = 330;

/// Writes the chart of `results` to `path`.
pub(crate) fn draw(results: &[ScenarioResult], path: &Path) -> Res<()> {
    let root = SVGBackend::new(path, (WIDTH, HEIGHT)).into_drawing_area();
    root.fill(&WHITE).map_err(|e| e.to_string())?;
    let (left, right) = root.split_horizontally(WIDTH - LEGEND);
    plot(results, &left).map_err(|e| e.to_string())?;
    legend(results, &right).map_err(|e| e.to_string())?;
    root.present().map_err(|e| e.to_string())?;
    Ok(())
}

/// Every codec name, in first-seen order.
fn codecs(results: &[ScenarioResult]) -> Vec<String> {
    let mut names: Vec<String> = Vec::new();
    for r in results {
        for row in &r.rows {
            let short = short(&row.name);
            if !names.contains(&short) {
                names.push(short);
            }
        }
    }
    names
}

/// The name without its parenthesised detail (the tables have it).
fn short(name: &str) -> String {
    name.split(" (").next().unwrap_or(name).to_owned()
}

fn colour(k: usize) -> RGBColor {
    // tickpack in reds, zstd frames in blues, the rest distinct.
    const C: [RGBColor; 14] = [
        RGBColor(214, 39, 40),
        RGBColor(148, 18, 20),
        RGBColor(250, 128, 114),
        RGBColor(31, 119, 180),
        RGBColor(23, 90, 140),
        RGBColor(12, 50, 90),
        RGBColor(120, 180, 230),
        RGBColor(90, 150, 200),
        RGBColor(60, 110, 170),
        RGBColor(255, 187, 120),
        RGBColor(44, 160, 44),
        RGBColor(148, 103, 189),
        RGBColor(140, 86, 75),
        RGBColor(90, 90, 90),
    ];
    C[k % C.len()]
}

fn plot<DB: DrawingBackend>(
    results: &[ScenarioResult],
    area: &DrawingArea<DB, Shift>,
) -> Result<(), DrawingAreaErrorKind<DB::ErrorType>> {
    let names = codecs(results);
    let per = names.len() + 1; // one gap slot between groups
    let slots = (results.len() * per) as i32;
    let max = results
        .iter()
        .flat_map(|r| r.rows.iter().map(crate::Row::mean))
        .fold(1.0f64, f64::max);
    let mut chart = ChartBuilder::on(area)
        .caption(
            "Mean bytes per packet (tick i against i-6), log scale",
            ("sans-serif", 20),
        )
        .margin(12)
        .x_label_area_size(40)
        .y_label_area_size(70)
        .build_cartesian_2d(0..slots, (0.5f64..max * 2.0).log_scale())?;
    let mid: Vec<(i32, &str)> = results
        .iter()
        .enumerate()
        .map(|(g, r)| ((g * per + names.len() / 2) as i32, r.name))
        .collect();
    chart
        .configure_mesh()
        .disable_x_mesh()
        .x_labels(slots as usize)
        .x_label_formatter(&|x| {
            mid.iter()
                .find(|(m, _)| m == x)
                .map_or(String::new(), |(_, n)| (*n).to_owned())
        })
        .y_desc("bytes per packet")
        .draw()?;
    for (k, codec) in names.iter().enumerate() {
        let bars = results.iter().enumerate().filter_map(|(g, r)| {
            let row = r.rows.iter().find(|row| short(&row.name) == *codec)?;
            let x = (g * per + k) as i32;
            Some(Rectangle::new(
                [(x, 0.5), (x + 1, row.mean().max(0.5))],
                colour(k).filled(),
            ))
        });
        chart.draw_series(bars)?;
    }
    Ok(())
}

fn legend<DB: DrawingBackend>(
    results: &[ScenarioResult],
    area: &DrawingArea<DB, Shift>,
) -> Result<(), DrawingAreaErrorKind<DB::ErrorType>> {
    for (k, codec) in codecs(results).iter().enumerate() {
        let y = 50 + 24 * k as i32;
        area.draw(&Rectangle::new([(8, y), (22, y + 14)], colour(k).filled()))?;
        area.draw(&Text::new(
            codec.clone(),
            (30, y),
            ("sans-serif", 14).into_font(),
        ))?;
    }
    Ok(())
}
