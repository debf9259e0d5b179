//! One problem found in a schema.

use std::fmt;

/// A schema problem: where (`fields[3].size`, `enums.proto.values`, `time_field`) and what.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SchemaIssue {
    /// JSON path of the offending value; empty for the document as a whole.
    pub path: String,
    pub message: String,
}

impl fmt::Display for SchemaIssue {
    fn fmt(&self, f: &mut fmt::Formatter) -> fmt::Result {
        if self.path.is_empty() {
            f.write_str(&self.message)
        } else {
            write!(f, "{}: {}", self.path, self.message)
        }
    }
}

/// Edit distance counting an adjacent transposition as one edit (optimal string alignment), for
/// "did you mean" suggestions: `unit32` is one edit from `uint32`.
pub fn edit_distance(a: &str, b: &str) -> usize {
    let a: Vec<char> = a.chars().collect();
    let b: Vec<char> = b.chars().collect();
    let mut d = vec![vec![0usize; b.len() + 1]; a.len() + 1];
    for (i, row) in d.iter_mut().enumerate() {
        row[0] = i;
    }
    for (j, cell) in d[0].iter_mut().enumerate() {
        *cell = j;
    }
    for i in 1..=a.len() {
        for j in 1..=b.len() {
            let cost = usize::from(a[i - 1] != b[j - 1]);
            let mut v = (d[i - 1][j] + 1)
                .min(d[i][j - 1] + 1)
                .min(d[i - 1][j - 1] + cost);
            if i > 1 && j > 1 && a[i - 1] == b[j - 2] && a[i - 2] == b[j - 1] {
                v = v.min(d[i - 2][j - 2] + 1);
            }
            d[i][j] = v;
        }
    }
    d[a.len()][b.len()]
}

/// ` (did you mean "x"?)` for the nearest candidate (ties go to the one of the same length), or
/// nothing when none is close. A candidate that extends the word (`default` → `default_label`)
/// counts as close.
pub fn suggest<'a>(word: &str, candidates: impl IntoIterator<Item = &'a str>) -> String {
    if word.len() > 256 {
        return String::new();
    }
    let best = candidates
        .into_iter()
        .map(|c| {
            let d = if c.starts_with(word) && !word.is_empty() {
                1
            } else {
                edit_distance(word, c)
            };
            (d, c.len().abs_diff(word.len()), c)
        })
        .min();
    match best {
        Some((d, _, c)) if d <= word.len().max(3) / 2 + 1 => format!(" (did you mean \"{c}\"?)"),
        _ => String::new(),
    }
}
