//! Plain-text tables for the human-readable outputs.

#![forbid(unsafe_code)]

/// Renders rows (the first is the header) as aligned columns: the first
/// column left-aligned, the others right-aligned.
pub fn render(rows: &[Vec<String>]) -> String {
    let cols = rows.iter().map(Vec::len).max().unwrap_or(0);
    let mut width = vec![0usize; cols];
    for r in rows {
        for (w, c) in width.iter_mut().zip(r) {
            *w = (*w).max(c.chars().count());
        }
    }
    let mut out = String::new();
    for (i, r) in rows.iter().enumerate() {
        let mut line = String::new();
        for (j, c) in r.iter().enumerate() {
            if j == 0 {
                line += &format!("{c:<w$}", w = width[0]);
            } else {
                line += &format!("  {c:>w$}", w = width[j]);
            }
        }
        out += line.trim_end();
        out.push('\n');
        if i == 0 {
            let total = width.iter().sum::<usize>() + 2 * cols.saturating_sub(1);
            out += &"-".repeat(total);
            out.push('\n');
        }
    }
    out
}
