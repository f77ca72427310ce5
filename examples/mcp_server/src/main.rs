//! `mcp_example_server`: the course's MCP server. Lesson 18 connects to it
//! as `docs`; see the crate's library for what it offers.
//!
//! ```text
//! mcp_example_server                                  # stdio: one client, which started it
//! mcp_example_server --http 127.0.0.1:8080            # Streamable HTTP at http://127.0.0.1:8080/mcp
//! mcp_example_server --http 127.0.0.1:0 --bearer-token-env DOCS_TOKEN
//! ```
//!
//! Port 0 lets the system choose; the server writes the URL it listens on
//! to standard error. With `--bearer-token-env VAR` it requires
//! `Authorization: Bearer <value of VAR>`.

use anyhow::{Context, bail};

#[tokio::main]
async fn main() -> anyhow::Result<()> {
    let mut http = None;
    let mut token_var = None;
    let mut args = std::env::args().skip(1);
    while let Some(arg) = args.next() {
        match arg.as_str() {
            "--http" => http = Some(args.next().context("--http needs ADDRESS:PORT")?),
            "--bearer-token-env" => {
                token_var = Some(
                    args.next()
                        .context("--bearer-token-env needs a variable name")?,
                )
            }
            other => bail!(
                "unknown argument `{other}`; usage: mcp_example_server [--http ADDRESS:PORT [--bearer-token-env VAR]]"
            ),
        }
    }
    match http {
        None if token_var.is_some() => bail!("--bearer-token-env needs --http"),
        None => mcp_example_server::serve_stdio().await,
        Some(addr) => {
            let addr = addr
                .parse()
                .with_context(|| format!("--http {addr}: not ADDRESS:PORT"))?;
            let token = match token_var {
                Some(var) => Some(std::env::var(&var).with_context(|| {
                    format!("--bearer-token-env {var}: the variable is not set")
                })?),
                None => None,
            };
            mcp_example_server::serve_http(addr, token).await
        }
    }
}
