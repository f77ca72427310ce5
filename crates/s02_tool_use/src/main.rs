use std::process::ExitCode;

#[tokio::main]
async fn main() -> ExitCode {
    shared::cli::main(s02_tool_use::LESSON, |setup| {
        s02_tool_use::build(setup, s02_tool_use::Options::default())
    })
    .await
}
