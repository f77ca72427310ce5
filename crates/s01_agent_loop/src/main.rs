use std::process::ExitCode;

#[tokio::main]
async fn main() -> ExitCode {
    shared::cli::main(s01_agent_loop::LESSON, |setup| {
        s01_agent_loop::build(setup, s01_agent_loop::Options::default())
    })
    .await
}
