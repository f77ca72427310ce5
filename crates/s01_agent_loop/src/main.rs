use std::process::ExitCode;

#[tokio::main]
async fn main() -> ExitCode {
    shared::cli::main(s01_agent_loop::LESSON, s01_agent_loop::build).await
}
