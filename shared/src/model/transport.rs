//! What both HTTP clients share: credentials that never print, and timeouts.
//!
//! It lives apart from [`super::config`], which chooses a client, so that
//! the clients depend on this module and `config` depends on the clients,
//! never the other way round.

use std::fmt;
use std::time::Duration;

/// A credential. It can be used, but never printed by accident.
#[derive(Clone, PartialEq, Eq)]
pub struct Secret(String);

impl Secret {
    /// Wraps a credential.
    pub fn new(value: impl Into<String>) -> Self {
        Self(value.into())
    }

    /// The credential itself, for the one place that sends it.
    pub fn expose(&self) -> &str {
        &self.0
    }
}

impl fmt::Debug for Secret {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("Secret(***)")
    }
}

/// Timeouts shared by both HTTP clients.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Timeouts {
    /// How long to wait for a TCP/TLS connection.
    pub connect: Duration,
    /// How long to wait for the response headers.
    pub response: Duration,
    /// How long the stream may stay silent between two events. The
    /// Anthropic API sends `ping` events, so a long silence means a dead
    /// connection.
    pub idle: Duration,
}

impl Default for Timeouts {
    fn default() -> Self {
        Self {
            connect: Duration::from_secs(10),
            response: Duration::from_secs(120),
            idle: Duration::from_secs(90),
        }
    }
}
