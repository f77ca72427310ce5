//! `custom_hook`: the program's PreToolUse hook refuses a call, its
//! PostToolUse hook sees the calls that ran.

use crate::support::{run, stdout};

#[test]
fn the_policy_hook_refuses_rm_and_the_audit_hook_logs_what_ran() {
    let workdir = tempfile::tempdir().unwrap();
    let stdout = stdout(&run(env!("CARGO_BIN_EXE_custom_hook"), workdir.path()));

    // Without the policy hook, the approved `rm` would have deleted it.
    let draft = std::fs::read_to_string(workdir.path().join("draft.txt")).unwrap();
    assert_eq!(draft, "first draft\n");
    assert!(
        stdout.contains(
            "bash {\"command\":\"rm draft.txt\"} -> error: Refused by the project's policy hook"
        ),
        "{stdout}"
    );

    // The audit hook saw the call that ran, and not the refused one (a
    // refused call never reaches PostToolUse).
    let log = std::fs::read_to_string(workdir.path().join("audit.log")).unwrap();
    assert_eq!(
        log,
        "bash ok {\"command\":\"echo 'first draft' > draft.txt\"}\n"
    );
}
