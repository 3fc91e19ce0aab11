//! The HTTP base path: the prefix every route answers under (`http.base_path`,
//! `--http-base-path`); `crate::http::base_path` strips it from requests.

/// A validated path prefix: `""` (the root) or `/seg[/seg...]` without a trailing slash, each
/// segment of `A-Z a-z 0-9 - . _ ~` and not `.` or `..`.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct BasePath(String);

impl BasePath {
    /// Parses a base path; `""` and `"/"` are the root, a trailing slash is dropped.
    pub fn parse(s: &str) -> Result<Self, String> {
        let trimmed = s.trim_end_matches('/');
        if trimmed.is_empty() {
            return Ok(Self::default());
        }
        let Some(rest) = trimmed.strip_prefix('/') else {
            return Err(format!("{s:?} must start with '/'"));
        };
        for seg in rest.split('/') {
            let ok_chars = seg
                .bytes()
                .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'-' | b'.' | b'_' | b'~'));
            if seg.is_empty() || seg == "." || seg == ".." || !ok_chars {
                return Err(format!(
                    "{s:?}: each segment must be non-empty, not '.' or '..', of A-Z a-z 0-9 - . _ ~"
                ));
            }
        }
        Ok(Self(trimmed.to_owned()))
    }

    /// The prefix (`""` for the root).
    pub fn as_str(&self) -> &str {
        &self.0
    }

    /// Whether this is the root (no prefix).
    pub fn is_root(&self) -> bool {
        self.0.is_empty()
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    #[test]
    fn parses() {
        assert!(BasePath::parse("").unwrap().is_root());
        assert!(BasePath::parse("/").unwrap().is_root());
        assert_eq!(
            BasePath::parse("/obs/sightline/").unwrap().as_str(),
            "/obs/sightline"
        );
        for bad in ["obs", "/a//b", "/a/../b", "/a b", "/a?x", "/%2e"] {
            assert!(BasePath::parse(bad).is_err(), "{bad}");
        }
    }
}
