//! `distinct[N]<...>` ids inside attributes a file holds as text. The writer of such an entry
//! printed it on its own, so its ids are its own (upstream prints every access group written as
//! text as `distinct[0]`), and upstream's reader gives each entry fresh distinct attributes. rtx
//! keeps the text, and prints and writes a module's texts as one: the ids of each such entry are
//! renumbered, apart from every other entry's and from the ids rtx gives decoded entries, so that
//! two entries never share one by accident.

use super::FileState;
use crate::ir::{AttrId, Attribute};
use crate::text::string_literal_end;

/// Renumbers the ids inside the text entries `raw` (attribute indices), entry by entry, from
/// `first` on. The ids rtx gives the distinct attributes of decoded entries are below the number
/// of attribute entries, so `first` is that number.
pub(super) fn renumber(state: &mut FileState<'_>, raw: impl Iterator<Item = usize>, first: u64) {
    let mut next = first;
    for i in raw {
        let Some(Attribute::Text { dialect, text }) = state.module.context.attrs().get(i).cloned() else { continue };
        let mut local: Vec<(u32, u32)> = Vec::new();
        let rewritten = rewrite(state.module.context.str_bytes(text), |n| {
            if let Some(&(_, id)) = local.iter().find(|(from, _)| *from == n) {
                return id;
            }
            let id = u32::try_from(next).unwrap_or(u32::MAX);
            next += 1;
            local.push((n, id));
            id
        });
        if let Some(rewritten) = rewritten {
            let text = state.module.context.intern_str(&rewritten);
            state.module.context.replace_attr(AttrId(i as u32), Attribute::Text { dialect, text });
        }
    }
}

/// `text` with the id of every `distinct[N]` outside string literals replaced by `map(N)`, or
/// `None` when it has none.
fn rewrite(text: &[u8], mut map: impl FnMut(u32) -> u32) -> Option<Vec<u8>> {
    const KEY: &[u8] = b"distinct[";
    let mut out = Vec::new();
    let (mut i, mut copied, mut found) = (0, 0, false);
    while i < text.len() {
        match text[i] {
            b'"' => i = string_literal_end(text, i).unwrap_or(text.len()),
            b'd' if text[i..].starts_with(KEY) && (i == 0 || !text[i - 1].is_ascii_alphanumeric()) => {
                let start = i + KEY.len();
                let end = start + text[start..].iter().take_while(|b| b.is_ascii_digit()).count();
                if let Some(n) = std::str::from_utf8(&text[start..end]).ok().and_then(|d| d.parse::<u32>().ok()) {
                    found = true;
                    out.extend_from_slice(&text[copied..start]);
                    out.extend_from_slice(map(n).to_string().as_bytes());
                    copied = end;
                }
                i = end;
            }
            _ => i += 1,
        }
    }
    if !found {
        return None;
    }
    out.extend_from_slice(&text[copied.min(text.len())..]);
    Some(out)
}

#[cfg(test)]
mod tests {
    use super::rewrite;

    #[test]
    fn rewrites_ids_outside_strings_only() {
        let text = br#"#x.a<id = distinct[0]<>, s = "distinct[0]", r = distinct[12]<#x.b<id = distinct[0]<>>>>"#;
        let out = rewrite(text, |n| n + 100).unwrap();
        assert_eq!(
            String::from_utf8(out).unwrap(),
            r#"#x.a<id = distinct[100]<>, s = "distinct[0]", r = distinct[112]<#x.b<id = distinct[100]<>>>>"#
        );
        assert!(rewrite(br#"#x.a<s = "distinct[1]">"#, |n| n).is_none());
        assert!(rewrite(b"#x.indistinct[1]", |n| n).is_none());
        assert!(rewrite(b"distinct[", |n| n).is_none());
    }
}
