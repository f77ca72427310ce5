//! `mcp_example_server`: the course's MCP server, on standard input and
//! output. Lesson 18 connects to it as `docs`; see the crate's library for
//! what it offers.

#[tokio::main]
async fn main() -> anyhow::Result<()> {
    mcp_example_server::serve_stdio().await
}
