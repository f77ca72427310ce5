//! The example programs, each built and run as a user runs it (offline,
//! `--demo`, in a temporary workspace), and judged by what it did there:
//! files the tools wrote, results only the real tool could compute, a
//! command the hook refused.

mod custom_hook;
mod custom_tool;
mod headless_agent;
mod support;
