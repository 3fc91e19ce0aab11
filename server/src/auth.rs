//! Tenants and bearer-token auth.
//!
//! With a tokens file (one `TOKEN TENANT` pair per line, `#` starts a comment, blank lines
//! ignored) every request must carry `Authorization: Bearer TOKEN` (gRPC: `authorization`
//! metadata); the token alone decides the tenant and `X-Scope-OrgID` is ignored. A missing or
//! unknown token is refused (HTTP 401, gRPC `UNAUTHENTICATED`) before anything is decoded.
//! Without a tokens file auth is off and `X-Scope-OrgID` (gRPC: `x-scope-orgid`) picks the
//! tenant, `default` when absent.

use std::collections::HashMap;
use std::path::Path;

use sightline_storage::TenantId;

use crate::error::{ConfigError, IngestError, TokensError};

/// How requests are mapped to tenants.
#[derive(Clone, Debug, Default)]
pub enum Auth {
    /// No auth: `X-Scope-OrgID` or the default tenant.
    #[default]
    Off,
    /// Bearer tokens, each mapped to a tenant.
    Tokens(HashMap<String, TenantId>),
}

impl Auth {
    /// Loads a tokens file, warning when other users may read it (it holds secrets: keep it
    /// `chmod 600`).
    pub fn from_file(path: &Path) -> Result<Self, ConfigError> {
        let text = std::fs::read_to_string(path).map_err(|source| ConfigError::Io {
            path: path.to_owned(),
            source,
        })?;
        if let Some(mode) = readable_by_others(path) {
            tracing::warn!(
                path = %path.display(),
                mode = format!("{mode:o}"),
                "the tokens file is readable by other users: chmod 600 it"
            );
        }
        Self::parse(&text).map_err(|source| ConfigError::Tokens {
            path: path.to_owned(),
            source,
        })
    }

    /// Parses the tokens file format.
    pub fn parse(text: &str) -> Result<Self, TokensError> {
        let mut map = HashMap::new();
        for (i, line) in text.lines().enumerate() {
            let line = line.split('#').next().unwrap_or("").trim();
            if line.is_empty() {
                continue;
            }
            let mut parts = line.split_whitespace();
            let (Some(token), Some(tenant), None) = (parts.next(), parts.next(), parts.next())
            else {
                return Err(TokensError::Malformed { line: i + 1 });
            };
            let tenant = TenantId::new(tenant).map_err(|source| TokensError::Tenant {
                line: i + 1,
                source,
            })?;
            if map.insert(token.to_owned(), tenant).is_some() {
                return Err(TokensError::Duplicate { line: i + 1 });
            }
        }
        if map.is_empty() {
            return Err(TokensError::Empty);
        }
        Ok(Self::Tokens(map))
    }

    /// Whether auth is on.
    pub fn enabled(&self) -> bool {
        matches!(self, Self::Tokens(_))
    }

    /// The tenant of a request, from its `Authorization` and `X-Scope-OrgID` header values.
    pub fn tenant(
        &self,
        authorization: Option<&[u8]>,
        org_id: Option<&[u8]>,
    ) -> Result<TenantId, IngestError> {
        match self {
            Self::Tokens(map) => {
                let header = authorization
                    .ok_or_else(|| IngestError::Unauthenticated("missing bearer token".into()))?;
                let token = std::str::from_utf8(header)
                    .ok()
                    .and_then(|h| {
                        let (scheme, rest) = h.trim().split_once(' ')?;
                        scheme.eq_ignore_ascii_case("bearer").then(|| rest.trim())
                    })
                    .ok_or_else(|| {
                        IngestError::Unauthenticated(
                            "authorization must be `Bearer <token>`".into(),
                        )
                    })?;
                map.get(token)
                    .cloned()
                    .ok_or_else(|| IngestError::Unauthenticated("unknown bearer token".into()))
            }
            Self::Off => match org_id {
                None => Ok(TenantId::default_tenant()),
                Some(raw) => {
                    let s = std::str::from_utf8(raw).map_err(|_| {
                        IngestError::InvalidTenant("X-Scope-OrgID is not UTF-8".into())
                    })?;
                    TenantId::new(s.trim())
                        .map_err(|e| IngestError::InvalidTenant(format!("X-Scope-OrgID: {e}")))
                }
            },
        }
    }
}

/// The file's permission bits when group or others may read it.
pub fn readable_by_others(path: &Path) -> Option<u32> {
    use std::os::unix::fs::PermissionsExt as _;
    let mode = std::fs::metadata(path).ok()?.permissions().mode() & 0o777;
    (mode & 0o044 != 0).then_some(mode)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tokens_file_and_lookup() {
        let auth = Auth::parse("# comment\n\ns3cret team-a  # trailing\nother team-b\n")
            .unwrap_or_else(|e| panic!("{e}"));
        let t = auth
            .tenant(Some(b"Bearer s3cret"), Some(b"team-b"))
            .unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(t.as_str(), "team-a");
        assert!(matches!(
            auth.tenant(Some(b"Bearer nope"), None),
            Err(IngestError::Unauthenticated(_))
        ));
        assert!(matches!(
            auth.tenant(None, None),
            Err(IngestError::Unauthenticated(_))
        ));
        assert!(matches!(
            auth.tenant(Some(b"Basic s3cret"), None),
            Err(IngestError::Unauthenticated(_))
        ));
        assert!(Auth::parse("a b c\n").is_err());
        assert!(Auth::parse("tok ../etc\n").is_err());
        assert!(Auth::parse("# nothing\n").is_err());
    }

    #[test]
    fn org_id_without_auth() {
        let auth = Auth::Off;
        let t = auth.tenant(None, None).unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(t.as_str(), "default");
        let t = auth
            .tenant(Some(b"Bearer x"), Some(b"acme"))
            .unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(t.as_str(), "acme");
        assert!(matches!(
            auth.tenant(None, Some(b"../x")),
            Err(IngestError::InvalidTenant(_))
        ));
    }
}
