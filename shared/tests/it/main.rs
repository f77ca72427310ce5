//! The `shared` crate's black-box tests, in one test binary (one link, not
//! six): the loop, both HTTP clients against a local fake server, the base
//! tools against real files and processes, and the terminal front end in a
//! child process.

mod agent_loop;
mod anthropic_client;
mod atomic_write;
mod bash_tool;
mod file_tools;
mod front_end;
mod openai_client;
