//! Dotted-path overrides (`mxu.rows=256`, `ici.dims=[4,4]`, `ici.dims.0=8`) applied generically
//! to the serde_json value tree of a config, so every field is overridable.
//!
//! The new value is read according to the type of the value it replaces: a string field takes
//! the text as is, a number field a JSON number (byte sizes may use `KiB`, `MiB`, `GiB`, `KB`,
//! `MB`, `GB` suffixes), a boolean `true`/`false`, arrays and objects JSON.

use crate::ArchError;
use serde_json::Value;

/// Splits `path=value`.
pub fn parse_override(text: &str) -> Result<(&str, &str), ArchError> {
    match text.split_once('=') {
        Some((k, v)) if !k.trim().is_empty() => Ok((k.trim(), v.trim())),
        _ => Err(ArchError::OverrideSyntax {
            text: text.to_string(),
        }),
    }
}

/// Sets the field at dotted `path` in `root` to `raw`, typed like the value it replaces.
pub fn apply_override(root: &mut Value, path: &str, raw: &str) -> Result<(), ArchError> {
    let mut cur = root;
    let mut walked = String::new();
    for seg in path.split('.') {
        let here = if walked.is_empty() {
            seg.to_string()
        } else {
            format!("{walked}.{seg}")
        };
        cur = match cur {
            Value::Object(map) => {
                if !map.contains_key(seg) {
                    let keys: Vec<String> = map.keys().cloned().collect();
                    return Err(unknown_key(path, &walked, seg, &keys));
                }
                map.get_mut(seg).expect("checked")
            }
            Value::Array(items) => {
                let n = items.len();
                let idx: usize = seg.parse().map_err(|_| ArchError::UnknownKey {
                    path: path.to_string(),
                    hint: format!(" (`{walked}` is a list: use an index 0..{n})"),
                })?;
                if idx >= n {
                    return Err(ArchError::UnknownKey {
                        path: path.to_string(),
                        hint: format!(" (`{walked}` has {n} entries)"),
                    });
                }
                &mut items[idx]
            }
            _ => {
                return Err(ArchError::UnknownKey {
                    path: path.to_string(),
                    hint: format!(" (`{walked}` is a plain value, it has no fields)"),
                })
            }
        };
        walked = here;
    }
    *cur = typed_value(cur, raw).map_err(|msg| ArchError::BadValue {
        path: path.to_string(),
        msg,
    })?;
    Ok(())
}

fn typed_value(old: &Value, raw: &str) -> Result<Value, String> {
    match old {
        Value::String(_) => {
            // Accept a JSON-quoted string too.
            if raw.starts_with('"') {
                serde_json::from_str::<String>(raw)
                    .map(Value::String)
                    .map_err(|e| format!("`{raw}` is not a valid quoted string: {e}"))
            } else {
                Ok(Value::String(raw.to_string()))
            }
        }
        Value::Bool(_) => match raw {
            "true" => Ok(Value::Bool(true)),
            "false" => Ok(Value::Bool(false)),
            _ => Err(format!("expected true or false, got `{raw}`")),
        },
        Value::Number(n) => {
            let integer = n.is_u64() || n.is_i64();
            parse_number(raw, integer)
        }
        Value::Array(_) | Value::Object(_) | Value::Null => {
            serde_json::from_str(raw).map_err(|e| format!("`{raw}` is not valid JSON: {e}"))
        }
    }
}

fn parse_number(raw: &str, integer: bool) -> Result<Value, String> {
    const SUFFIXES: [(&str, u64); 6] = [
        ("KiB", 1 << 10),
        ("MiB", 1 << 20),
        ("GiB", 1 << 30),
        ("KB", 1_000),
        ("MB", 1_000_000),
        ("GB", 1_000_000_000),
    ];
    for (suf, mult) in SUFFIXES {
        if let Some(num) = raw.strip_suffix(suf) {
            let n: u64 = num
                .trim()
                .parse()
                .map_err(|_| format!("`{raw}`: expected an integer before `{suf}`"))?;
            return n
                .checked_mul(mult)
                .map(Value::from)
                .ok_or_else(|| format!("`{raw}` is too large"));
        }
    }
    if integer {
        if let Ok(v) = raw.parse::<u64>() {
            return Ok(Value::from(v));
        }
        if let Ok(v) = raw.parse::<i64>() {
            return Ok(Value::from(v));
        }
        return Err(format!("expected an integer, got `{raw}`"));
    }
    let v: f64 = raw
        .parse()
        .map_err(|_| format!("expected a number, got `{raw}`"))?;
    serde_json::Number::from_f64(v)
        .map(Value::Number)
        .ok_or_else(|| format!("`{raw}` is not a finite number"))
}

fn unknown_key(path: &str, parent: &str, seg: &str, keys: &[String]) -> ArchError {
    let mut scored: Vec<(usize, &String)> =
        keys.iter().map(|k| (edit_distance(seg, k), k)).collect();
    scored.sort();
    let prefix = if parent.is_empty() {
        String::new()
    } else {
        format!("{parent}.")
    };
    let near: Vec<String> = scored
        .iter()
        .take(5)
        .map(|(_, k)| format!("{prefix}{k}"))
        .collect();
    let hint = if near.is_empty() {
        String::new()
    } else {
        format!("; nearby keys: {}", near.join(", "))
    };
    ArchError::UnknownKey {
        path: path.to_string(),
        hint,
    }
}

/// Levenshtein distance (small strings only).
fn edit_distance(a: &str, b: &str) -> usize {
    let a: Vec<char> = a.chars().collect();
    let b: Vec<char> = b.chars().collect();
    let mut prev: Vec<usize> = (0..=b.len()).collect();
    for i in 1..=a.len() {
        let mut cur = vec![i; b.len() + 1];
        for j in 1..=b.len() {
            let sub = prev[j - 1] + usize::from(a[i - 1] != b[j - 1]);
            cur[j] = sub.min(prev[j] + 1).min(cur[j - 1] + 1);
        }
        prev = cur;
    }
    prev[b.len()]
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn edit_distance_basics() {
        assert_eq!(edit_distance("rows", "rows"), 0);
        assert_eq!(edit_distance("rowz", "rows"), 1);
        assert_eq!(edit_distance("", "abc"), 3);
        assert_eq!(edit_distance("kitten", "sitting"), 3);
    }

    #[test]
    fn suffixes() {
        assert_eq!(
            parse_number("16MiB", true).unwrap(),
            Value::from(16u64 << 20)
        );
        assert_eq!(
            parse_number("2GB", true).unwrap(),
            Value::from(2_000_000_000u64)
        );
        assert!(parse_number("1.5", true).is_err());
        assert_eq!(parse_number("1.5", false).unwrap(), serde_json::json!(1.5));
    }
}
