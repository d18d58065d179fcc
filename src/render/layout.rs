//! Text laid out for a terminal: display width, wrapping at word
//! boundaries, elision with `…`, and the `--events` table fitted to the
//! width (the human format's).

use unicode_width::UnicodeWidthChar;

/// The characters of `s` a terminal shows: its escape sequences left out
/// (`ESC [` up to a final character in `@`..=`~`: the colours this renderer
/// adds; untrusted text is escaped by `sanitize`, so every ESC in a line is
/// ours). tests/terminal.rs reads the transcripts of a real terminal with it.
pub fn shown_chars(s: &str) -> impl Iterator<Item = char> + '_ {
    let mut chars = s.chars();
    std::iter::from_fn(move || loop {
        let c = chars.next()?;
        if c != '\x1b' {
            return Some(c);
        }
        if chars.next() == Some('[') {
            for c in chars.by_ref() {
                if ('@'..='~').contains(&c) {
                    break;
                }
            }
        }
    })
}

/// Columns a string takes on a terminal: display width (a CJK character
/// takes two, a combining mark none), not bytes; the colour sequences this
/// renderer adds take none ([`shown_chars`]).
pub fn width_of(s: &str) -> usize {
    shown_chars(s).map(|c| c.width().unwrap_or(0)).sum()
}

/// `first`, then `words` each after a space, wrapped at `width` columns:
/// continuation lines are indented by `indent` spaces. `first` (a finding's
/// `severity[check] PATH:` head) and each word are never split, so a path
/// stays whole and greppable even when it is wider than the terminal. An
/// empty word (two spaces in a row of the text it was split from) keeps its
/// space, except where the line breaks; without a width the text is
/// returned exactly. No trailing newline.
pub fn wrap<S: AsRef<str>>(
    first: &str,
    words: impl IntoIterator<Item = S>,
    indent: usize,
    width: Option<usize>,
) -> String {
    let mut out = first.to_string();
    let Some(max) = width else {
        for word in words {
            out.push(' ');
            out.push_str(word.as_ref());
        }
        return out;
    };
    let mut col = width_of(first);
    for word in words {
        let word = word.as_ref();
        let w = width_of(word);
        if col + 1 + w <= max {
            out.push(' ');
            out.push_str(word);
            col += 1 + w;
        } else if !word.is_empty() {
            out.push('\n');
            out.extend(std::iter::repeat_n(' ', indent));
            out.push_str(word);
            col = indent + w;
        }
    }
    out
}

/// `s` cut to `max` columns, its end replaced by `…` when it was longer.
fn elide(s: &str, max: usize) -> String {
    if width_of(s) <= max {
        return s.to_string();
    }
    let mut out = String::new();
    let mut w = 0;
    for c in s.chars() {
        let cw = c.width().unwrap_or(0);
        if w + cw + 1 > max {
            break;
        }
        out.push(c);
        w += cw;
    }
    out.push('…');
    out
}

/// The `--events` table's columns the terminal's width may elide (kind and
/// the why-not note), and the narrowest each may become.
const KIND: usize = 1;
const NOTE: usize = 5;
const MIN_ELIDED: usize = 6;

/// Lay `rows` (the header first) out in columns sized to their content,
/// each line indented by two. Without a `width` (a pipe, a file) columns are
/// two spaces apart and nothing is cut. With one, the kind and note columns,
/// widest first, are elided with `…` until the table fits (one space apart
/// when two do not leave them `MIN_ELIDED` columns each); a table that
/// cannot fit even then overflows rather than cut the other columns. The last
/// column is not padded.
pub(super) fn table(rows: &[[String; 6]], width: Option<usize>) -> Vec<String> {
    let mut cols = [0usize; 6];
    for row in rows {
        for (c, cell) in row.iter().enumerate() {
            cols[c] = cols[c].max(width_of(cell));
        }
    }
    let total = |cols: &[usize; 6], gap: usize| 2 + cols.iter().sum::<usize>() + gap * 5;
    let mut gap = 2;
    if let Some(max) = width {
        let mut narrowest = cols;
        narrowest[KIND] = cols[KIND].min(MIN_ELIDED);
        narrowest[NOTE] = cols[NOTE].min(MIN_ELIDED);
        if total(&narrowest, 2) > max {
            gap = 1;
        }
        while total(&cols, gap) > max {
            let (wider, other) = if cols[NOTE] >= cols[KIND] {
                (NOTE, KIND)
            } else {
                (KIND, NOTE)
            };
            let c = if cols[wider] > MIN_ELIDED {
                wider
            } else if cols[other] > MIN_ELIDED {
                other
            } else {
                break;
            };
            cols[c] -= 1;
        }
    }
    rows.iter()
        .map(|row| {
            let mut line = String::from("  ");
            for (c, cell) in row.iter().enumerate() {
                let cell = elide(cell, cols[c]);
                line.push_str(&cell);
                if c + 1 < row.len() {
                    let pad = cols[c] - width_of(&cell) + gap;
                    line.extend(std::iter::repeat_n(' ', pad));
                }
            }
            line.trim_end().to_string()
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::render::sanitize;

    #[test]
    fn width_is_display_columns_without_colour_codes() {
        assert_eq!(width_of("abc"), 3);
        // two columns per CJK character, none for a combining accent
        assert_eq!(width_of("日本"), 4);
        assert_eq!(width_of("e\u{301}"), 1);
        assert_eq!(width_of("\x1b[31;1merror\x1b[0m[x]"), 8);
        // an escaped control character is text: `\u{1b}` is 6 columns
        assert_eq!(width_of(&sanitize("\x1b")), 6);
    }

    #[test]
    fn wrap_keeps_the_head_and_words_whole() {
        let w = Some(20);
        // fits: one line
        assert_eq!(wrap("  a:", "b c".split(' '), 4, w), "  a: b c");
        // the head wider than the width stays whole; the words go under it
        let head = "  error[x] some/long/path.json:";
        assert_eq!(
            wrap(head, "one two three four five".split(' '), 4, w),
            format!("{head}\n    one two three\n    four five")
        );
        // a word wider than the width is not split
        assert_eq!(
            wrap("  a:", ["x", "0123456789012345678901", "y"], 4, w),
            "  a: x\n    0123456789012345678901\n    y"
        );
        // CJK counts two columns: 5 characters take 10
        assert_eq!(
            wrap("ab", ["日本語日本", "日本語日本"], 0, Some(13)),
            "ab 日本語日本\n日本語日本"
        );
        // without a width nothing wraps, and every space is kept
        let long = "w  ".repeat(100);
        assert_eq!(wrap("x:", long.split(' '), 4, None), format!("x: {long}"));
        // with one, doubled spaces are kept within a line
        assert_eq!(wrap("x:", "a  b".split(' '), 4, w), "x: a  b");
    }

    #[test]
    fn elide_cuts_to_display_width() {
        assert_eq!(elide("MessageEvent", 12), "MessageEvent");
        assert_eq!(elide("MessageEvent", 8), "Message…");
        assert_eq!(elide("日本語日本", 6), "日本…");
        assert_eq!(width_of(&elide("日本語日本", 6)), 5);
    }

    #[test]
    fn table_fits_by_eliding_kind_and_note_only() {
        let rows: Vec<[String; 6]> = [
            ["index", "kind", "source", "parent", "agent", "note"],
            [
                "00000",
                "ConversationStateUpdateEvent",
                "environment",
                "00001 (legacy)",
                "-",
                "state-sync artifact",
            ],
            ["00001", "MessageEvent", "user", "__root__", "yes", ""],
        ]
        .iter()
        .map(|r| r.map(String::from))
        .collect();
        let whole = table(&rows, None);
        assert_eq!(
            whole[1],
            "  00000  ConversationStateUpdateEvent  environment  00001 (legacy)  -      state-sync artifact"
        );
        assert_eq!(
            whole[2],
            "  00001  MessageEvent                  user         __root__        yes"
        );
        let narrow = table(&rows, Some(60));
        for l in &narrow {
            assert!(width_of(l) <= 60, "{l:?}");
        }
        assert!(narrow[1].starts_with("  00000  "), "{:?}", narrow[1]);
        assert!(
            narrow[1].contains("environment  00001 (legacy)  -"),
            "{:?}",
            narrow[1]
        );
        assert!(narrow[1].contains('…'));
    }
}
