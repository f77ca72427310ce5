use std::process::ExitCode;

#[tokio::main]
async fn main() -> ExitCode {
    shared::cli::main(s02_tool_use::LESSON, s02_tool_use::build).await
}
