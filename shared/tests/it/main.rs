//! The `shared` crate's black-box tests, in one test binary (one link, not
//! five): the loop, both HTTP clients against a local fake server, and the
//! base tools against real files and processes.

mod agent_loop;
mod anthropic_client;
mod atomic_write;
mod bash_tool;
mod file_tools;
mod openai_client;
